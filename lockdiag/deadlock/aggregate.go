package deadlock

import (
	"regexp"
	"sort"
	"strings"
	"time"
)

// Group is a set of deadlocks with the same shape: same tables, same
// waited-for indexes, same pattern, same statements once literals are
// replaced by ?.
type Group struct {
	Table      string   `json:"table"`
	Indexes    []string `json:"indexes"`
	Statements []string `json:"statements"`
	Count      int      `json:"count"`
	// Pattern is the recognised pattern's name ("" when none).
	Pattern string `json:"pattern,omitempty"`
	// Victims counts which statement shape was rolled back.
	Victims map[string]int `json:"victims"`
	// First and Last are the earliest and latest timestamps among the
	// group's reports, normalised to "2006-01-02 15:04:05" (with the
	// offset when the log printed one).
	First string `json:"first,omitempty"`
	Last  string `json:"last,omitempty"`
	// Example is the first report of the group, for its explanation.
	Example *Report `json:"-"`

	first, last time.Time
}

var (
	reStrLit  = regexp.MustCompile(`'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.)*"`)
	reHexLit  = regexp.MustCompile(`\b0x[0-9a-fA-F]+\b|\bX'[0-9a-fA-F]*'`)
	reNumLit  = regexp.MustCompile(`\b\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b`)
	reNegLit  = regexp.MustCompile(`([=<>(,]|\bIN|\bAND|\bOR|\bTHEN|\bELSE|\bVALUES|\bBETWEEN|^)(\s*)-\s*\?`)
	reInList  = regexp.MustCompile(`\(\s*\?(?:\s*,\s*\?)*\s*\)`)
	reValues  = regexp.MustCompile(`\(\?\+\)(?:\s*,\s*\(\?\+\))+`)
	reSpaces  = regexp.MustCompile(`\s+`)
	reComment = regexp.MustCompile(`/\*.*?\*/`)
)

// Shape normalises a statement for grouping: literals become ?, negative
// ones too (so id = -1 and id = 1 group together), lists of them one
// (?+), whitespace collapses.
func Shape(q string) string {
	q = reComment.ReplaceAllString(q, " ")
	q = reStrLit.ReplaceAllString(q, "?")
	q = reHexLit.ReplaceAllString(q, "?")
	q = reNumLit.ReplaceAllString(q, "?")
	q = reNegLit.ReplaceAllString(q, "$1$2?")
	q = reInList.ReplaceAllString(q, "(?+)")
	q = reValues.ReplaceAllString(q, "(?+)")
	return strings.TrimSpace(reSpaces.ReplaceAllString(q, " "))
}

// Aggregate groups reports by tables, waited-for indexes, pattern and
// statement shapes, most frequent first (ties in order of first
// appearance). Each report counts once, in one group.
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
		pattern := ""
		if r.Pattern != nil {
			pattern = r.Pattern.Name
		}
		g := &Group{Table: strings.Join(sortedKeys(tables), ", "), Indexes: sortedKeys(idx), Statements: shapes, Pattern: pattern}
		key := g.Table + "\x00" + strings.Join(g.Indexes, ",") + "\x00" + pattern + "\x00" + strings.Join(shapes, "\x00")
		if have, ok := byKey[key]; ok {
			g = have
		} else {
			g.Victims, g.Example = map[string]int{}, r
			byKey[key] = g
			order = append(order, g)
		}
		g.Count++
		if ts, ok := parseTime(r.Time); ok {
			if g.first.IsZero() || ts.Before(g.first) {
				g.first, g.First = ts, formatTime(ts, r.Time)
			}
			if g.last.IsZero() || !ts.Before(g.last) {
				g.last, g.Last = ts, formatTime(ts, r.Time)
			}
		}
		if v := r.Transaction(r.Victim); v != nil {
			g.Victims[Shape(v.Query)]++
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].Count > order[j].Count })
	return order
}

// timeLayouts are every form a report's time is printed in: MySQL 8's
// UTC or offset RFC 3339, MySQL 5.6/5.7 and MariaDB's "2024-01-02
// 3:04:05" (space-padded hour), the status header's, and 5.5's
// "240102  3:04:05".
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999-0700",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04:05",
	"060102 15:04:05",
}

func parseTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, false
	}
	// Collapse the space padding of a one-digit hour: "2024-01-02  3:04:05".
	f := strings.Fields(s)
	if len(f) == 2 {
		d, t := f[0], f[1]
		if len(t) >= 2 && t[1] == ':' {
			t = "0" + t
		}
		s = d + " " + t
	}
	for _, l := range timeLayouts {
		if ts, err := time.Parse(l, s); err == nil {
			return ts, true
		}
	}
	return time.Time{}, false
}

// formatTime prints ts uniformly, keeping the offset if one was printed.
func formatTime(ts time.Time, printed string) string {
	if strings.HasSuffix(printed, "Z") || strings.ContainsAny(printed[min(len(printed), 19):], "+-") {
		return ts.Format("2006-01-02 15:04:05.999999 -07:00")
	}
	return ts.Format("2006-01-02 15:04:05.999999")
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
