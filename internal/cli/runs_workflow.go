package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
)

// `runs show` of a workflow: each job's dependencies with their status,
// and the run's callbacks.

// workflowOut is the "workflow" of `runs show --json`: the run's first
// jobs by id (Truncated: it has more than Limit) with the ids they depend
// on, and its callbacks.
type workflowOut struct {
	Jobs      []workflowJobOut `json:"jobs"`
	Callbacks []workflowJobOut `json:"callbacks"`
	Truncated bool             `json:"truncated"`
	Limit     int              `json:"limit"`
}

type workflowJobOut struct {
	ID        int64              `json:"id"`
	Kind      string             `json:"kind"`
	Status    lockstep.JobStatus `json:"status"`
	WaitingOn int                `json:"waiting_on,omitempty"`
	DependsOn []int64            `json:"depends_on,omitempty"`
	Callback  string             `json:"callback,omitempty"`
}

// toWorkflowOut builds the workflow of a run show, nil for a run without
// dependencies or callbacks. The callbacks are the run's newest jobs
// (a run with callbacks takes no jobs after them), so those of a run
// larger than the graph's limit are found on the newest page.
func toWorkflowOut(g *lockstep.RunGraph, newest []*lockstep.JobRow, limit int) *workflowOut {
	if !g.IsWorkflow() && !hasCallback(newest) {
		return nil
	}
	out := &workflowOut{Jobs: []workflowJobOut{}, Callbacks: []workflowJobOut{}, Truncated: g.Truncated, Limit: limit}
	seen := map[int64]bool{}
	for _, j := range g.Jobs {
		wj := workflowJobOut{ID: j.ID, Kind: j.Kind, Status: j.Status, WaitingOn: waitingOn(j), Callback: j.Callback}
		if j.Callback != "" {
			seen[j.ID] = true
			out.Callbacks = append(out.Callbacks, wj)
			continue
		}
		wj.DependsOn = g.DependsOn[j.ID]
		out.Jobs = append(out.Jobs, wj)
	}
	for i := len(newest) - 1; i >= 0; i-- { // newest is newest first
		j := newest[i]
		if j.Callback != "" && !seen[j.ID] {
			out.Callbacks = append(out.Callbacks, workflowJobOut{ID: j.ID, Kind: j.Kind, Status: j.Status, WaitingOn: waitingOn(j), Callback: j.Callback})
		}
	}
	return out
}

// waitingOn is the dependencies a WAITING job still waits for; 0 for a
// job that no longer waits (the column keeps its last count).
func waitingOn(j *lockstep.JobRow) int {
	if j.Status != lockstep.StatusWaiting {
		return 0
	}
	return j.WaitingOn
}

func hasCallback(jobs []*lockstep.JobRow) bool {
	for _, j := range jobs {
		if j.Callback != "" {
			return true
		}
	}
	return false
}

// maxDepsShown bounds the dependencies listed on one line of the table.
const maxDepsShown = 8

func writeWorkflow(w io.Writer, wf *workflowOut) error {
	status := map[int64]lockstep.JobStatus{}
	for _, j := range wf.Jobs {
		status[j.ID] = j.Status
	}
	fmt.Fprintln(w, "workflow:")
	tw := clienv.Table(w)
	fmt.Fprintln(tw, "  JOB\tKIND\tSTATUS\tDEPENDS_ON")
	for _, j := range wf.Jobs {
		deps := "-"
		if len(j.DependsOn) > 0 {
			parts := make([]string, 0, min(len(j.DependsOn), maxDepsShown)+1)
			for n, d := range j.DependsOn {
				if n == maxDepsShown {
					parts = append(parts, fmt.Sprintf("… and %d more", len(j.DependsOn)-maxDepsShown))
					break
				}
				parts = append(parts, fmt.Sprintf("%d (%s)", d, status[d]))
			}
			deps = strings.Join(parts, ", ")
		}
		st := string(j.Status)
		if j.Status == lockstep.StatusWaiting {
			st += " on " + strconv.Itoa(j.WaitingOn)
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\n", j.ID, outCell(j.Kind, 30), st, deps)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if wf.Truncated {
		fmt.Fprintf(w, "  (the run has more than %d jobs: these are its first %d; --graph-limit shows more)\n", wf.Limit, wf.Limit)
	}
	if len(wf.Callbacks) == 0 {
		return nil
	}
	fmt.Fprintln(w, "callbacks:")
	tw = clienv.Table(w)
	fmt.Fprintln(tw, "  JOB\tON\tKIND\tSTATUS\tFIRES")
	for _, cb := range wf.Callbacks {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\n", cb.ID, cb.Callback, outCell(cb.Kind, 30), cb.Status, callbackWhen(cb.Callback))
	}
	return tw.Flush()
}
