package dashboard

import (
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/lockstep-queue/lockstep"
)

// The run page's workflow graph: server-rendered SVG, no script. Jobs are
// laid out in columns by dependency depth (a job one column right of its
// deepest dependency), the run's callbacks in a last column of their own;
// each node is a link to its job, coloured by status like the rest of the
// dashboard.

// graphLimit is the most jobs of a run the page draws: a graph is read in
// one bounded read, and beyond a few hundred nodes a picture stops being
// readable anyway — the job list below it is the way in.
const graphLimit = 500

// Node geometry, in SVG user units (pixels at 100 %).
const (
	nodeW     = 168
	nodeH     = 40
	colGap    = 64
	rowGap    = 14
	graphPad  = 12
	labelRune = 20 // a kind longer than this is cut, the full one is in the title
)

type graphNode struct {
	ID       int64
	Kind     string // cut to fit; Title has it whole
	Status   lockstep.JobStatus
	Class    string
	Callback string
	Title    string
	X, Y     int
	W, H     int
}

type graphEdge struct {
	From, To int64
	// Path is the SVG path: a curve from the right edge of the dependency
	// to the left edge of the dependent.
	Path string
}

// runGraph is what the template draws; nil when the run has no graph.
type runGraph struct {
	Nodes         []graphNode
	Edges         []graphEdge
	Width, Height int
	Columns       int
	// Label describes the graph for screen readers.
	Label string
}

// layoutGraph lays a run's workflow out, or returns nil when it has no
// dependency and no callback (nothing to draw).
func layoutGraph(g *lockstep.RunGraph) *runGraph {
	if g == nil || !g.IsWorkflow() {
		return nil
	}
	var jobs, callbacks []*lockstep.JobRow
	for _, j := range g.Jobs {
		if j.Callback != "" {
			callbacks = append(callbacks, j)
		} else {
			jobs = append(jobs, j)
		}
	}
	// Depth: a dependency's id is always lower than its dependent's, so
	// one pass in id order sees every dependency's depth first.
	depth := map[int64]int{}
	hasDependent := map[int64]bool{}
	maxDepth := 0
	for _, j := range jobs {
		d := 0
		for _, dep := range g.DependsOn[j.ID] {
			d = max(d, depth[dep]+1)
			hasDependent[dep] = true
		}
		depth[j.ID] = d
		maxDepth = max(maxDepth, d)
	}
	columns := make([][]*lockstep.JobRow, maxDepth+1)
	for _, j := range jobs {
		columns[depth[j.ID]] = append(columns[depth[j.ID]], j)
	}
	if len(callbacks) > 0 {
		columns = append(columns, callbacks)
	}
	// Order each column by the mean row of its dependencies (one
	// barycentre pass), so that edges cross less; ties by id.
	row := map[int64]float64{}
	for c, col := range columns {
		if c > 0 {
			key := func(j *lockstep.JobRow) float64 {
				deps := g.DependsOn[j.ID]
				if j.Callback != "" {
					return 0
				}
				sum := 0.0
				for _, d := range deps {
					sum += row[d]
				}
				return sum / float64(max(len(deps), 1))
			}
			slices.SortStableFunc(col, func(a, b *lockstep.JobRow) int {
				ka, kb := key(a), key(b)
				switch {
				case ka < kb:
					return -1
				case ka > kb:
					return 1
				}
				return 0
			})
		}
		for r, j := range col {
			row[j.ID] = float64(r)
		}
	}
	out := &runGraph{Columns: len(columns)}
	pos := map[int64]graphNode{}
	tallest := 0
	for c, col := range columns {
		tallest = max(tallest, len(col))
		for r, j := range col {
			n := graphNode{
				ID: j.ID, Kind: cut(j.Kind, labelRune), Status: j.Status, Class: statusClass(j.Status), Callback: j.Callback,
				X: graphPad + c*(nodeW+colGap), Y: graphPad + r*(nodeH+rowGap), W: nodeW, H: nodeH,
			}
			n.Title = fmt.Sprintf("Job %d, %s: %s", j.ID, j.Kind, j.Status)
			if j.Callback != "" {
				n.Title = fmt.Sprintf("Callback job %d, %s, on %s: %s", j.ID, j.Kind, j.Callback, j.Status)
			}
			if j.Status == lockstep.StatusWaiting && j.WaitingOn > 0 {
				n.Title += fmt.Sprintf(" (waiting on %d)", j.WaitingOn)
			}
			pos[j.ID] = n
			out.Nodes = append(out.Nodes, n)
		}
	}
	// Edges: every dependency of a job; a callback, which depends on every
	// job of the run, is drawn from the jobs nothing else depends on (the
	// rest reach it through them).
	edge := func(from, to int64) {
		a, okA := pos[from]
		b, okB := pos[to]
		if !okA || !okB {
			return
		}
		x1, y1 := a.X+nodeW, a.Y+nodeH/2
		x2, y2 := b.X-2, b.Y+nodeH/2
		mid := (x1 + x2) / 2
		out.Edges = append(out.Edges, graphEdge{From: from, To: to,
			Path: fmt.Sprintf("M%d,%d C%d,%d %d,%d %d,%d", x1, y1, mid, y1, mid, y2, x2, y2)})
	}
	for _, j := range jobs {
		for _, d := range g.DependsOn[j.ID] {
			edge(d, j.ID)
		}
	}
	for _, cb := range callbacks {
		for _, j := range jobs {
			if !hasDependent[j.ID] {
				edge(j.ID, cb.ID)
			}
		}
	}
	out.Width = 2*graphPad + len(columns)*nodeW + (len(columns)-1)*colGap
	out.Height = 2*graphPad + tallest*nodeH + max(tallest-1, 0)*rowGap
	out.Label = fmt.Sprintf("Workflow graph: %d jobs in %d columns by dependency depth, %d callbacks, %d edges; each job links to its page",
		len(jobs), maxDepth+1, len(callbacks), len(out.Edges))
	return out
}

// cut shortens s to n runes with an ellipsis.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// graphID is a node's id as the template's data attributes show it.
func graphID(id int64) string { return strconv.FormatInt(id, 10) }
