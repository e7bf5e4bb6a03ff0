package deadlock

import (
	"regexp"
	"sort"
	"strings"
)

// Group is a set of deadlocks with the same shape: same table, same pair
// of waited-for indexes, same statements once literals are replaced by ?.
type Group struct {
	Table      string   `json:"table"`
	Indexes    []string `json:"indexes"`
	Statements []string `json:"statements"`
	Count      int      `json:"count"`
	// Pattern is the recognised pattern's name, if the group's first
	// report has one.
	Pattern string `json:"pattern,omitempty"`
	// Victims counts which statement shape was rolled back.
	Victims map[string]int `json:"victims"`
	First   string         `json:"first,omitempty"`
	Last    string         `json:"last,omitempty"`
	// Example is the first report of the group, for its explanation.
	Example *Report `json:"-"`
}

var (
	reStrLit  = regexp.MustCompile(`'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.)*"`)
	reHexLit  = regexp.MustCompile(`\b0x[0-9a-fA-F]+\b`)
	reNumLit  = regexp.MustCompile(`\b-?\d+(?:\.\d+)?\b`)
	reInList  = regexp.MustCompile(`\(\s*\?(?:\s*,\s*\?)*\s*\)`)
	reSpaces  = regexp.MustCompile(`\s+`)
	reComment = regexp.MustCompile(`/\*.*?\*/`)
)

// Shape normalises a statement for grouping: literals become ?, lists of
// them one (?+), whitespace collapses.
func Shape(q string) string {
	q = reComment.ReplaceAllString(q, " ")
	q = reStrLit.ReplaceAllString(q, "?")
	q = reHexLit.ReplaceAllString(q, "?")
	q = reNumLit.ReplaceAllString(q, "?")
	q = reInList.ReplaceAllString(q, "(?+)")
	return strings.TrimSpace(reSpaces.ReplaceAllString(q, " "))
}

// Aggregate groups reports by table, index pair and statement shapes,
// most frequent first (ties in order of first appearance).
func Aggregate(reports []*Report) []*Group {
	byKey := map[string]*Group{}
	var order []*Group
	for _, r := range reports {
		tables := map[string]bool{}
		idx := map[string]bool{}
		var shapes []string
		for _, t := range r.Transactions {
			shapes = append(shapes, Shape(t.Query))
			if t.Waits != nil {
				tables[t.Waits.Table] = true
				if t.Waits.Index != "" {
					idx[t.Waits.Index] = true
				}
			}
		}
		sort.Strings(shapes)
		g := &Group{Table: strings.Join(sortedKeys(tables), ", "), Indexes: sortedKeys(idx), Statements: shapes}
		key := g.Table + "\x00" + strings.Join(g.Indexes, ",") + "\x00" + strings.Join(shapes, "\x00")
		if have, ok := byKey[key]; ok {
			g = have
		} else {
			g.Victims, g.Example, g.First = map[string]int{}, r, r.Time
			if r.Pattern != nil {
				g.Pattern = r.Pattern.Name
			}
			byKey[key] = g
			order = append(order, g)
		}
		g.Count++
		g.Last = r.Time
		if v := r.Transaction(r.Victim); v != nil {
			g.Victims[Shape(v.Query)]++
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].Count > order[j].Count })
	return order
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
