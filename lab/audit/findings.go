package audit

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// findings applies the lock-order checklist to the lock paths.
func findings(paths []Path) []Finding {
	var out []Finding
	for _, x := range paths {
		if !x.Locking {
			continue
		}
		for s, under := range x.Finds {
			if s == "PRIMARY" || strings.HasPrefix(s, "(") {
				continue
			}
			// x locks s before PRIMARY. A statement that changes s and
			// reaches the row another way locks PRIMARY first and s after.
			for _, y := range paths {
				if !y.Writer || y.Table != x.Table || !slices.Contains(y.Changes, s) {
					continue
				}
				if _, same := y.Finds[s]; same && len(y.Finds) == 1 {
					continue
				}
				out = append(out, Finding{
					Kind: "crossing", A: x.Name, B: y.Name, Table: x.Table, Index: s,
					Explanation: fmt.Sprintf("%s finds rows through %s (under %s): it locks the %s record, then PRIMARY. %s changes %s (it sets %s), so after locking a row's PRIMARY record it must lock that row's %s record. On the same row the two orders are opposite: a deadlock (error 1213) when they meet.",
						x.Name, s, strings.Join(under, ", "), s, y.Name, s, strings.Join(y.Sets, ", "), s),
					Fix: fixFor(x, s),
				})
			}
		}
		if x.Writer {
			for s, under := range x.Finds {
				if s == "PRIMARY" || strings.HasPrefix(s, "(") || x.ByKey {
					continue
				}
				for _, y := range paths {
					if y.Writer && y.Table == x.Table && slices.Contains(y.Changes, s) {
						out = append(out, Finding{
							Kind: "range-through-changing-index", A: x.Name, B: y.Name, Table: x.Table, Index: s,
							Explanation: fmt.Sprintf("%s is a range write through %s (under %s), an index on a column %s changes: it locks every record of the range it scans, in index order, and the index is reordered by the writes it races with.",
								x.Name, s, strings.Join(under, ", "), y.Name),
							Fix: fixFor(x, s),
						})
						break
					}
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

func fixFor(x Path, s string) string {
	if x.ByKey {
		return fmt.Sprintf("%s names its row by primary key but is planned through %s: pin it with FORCE INDEX (PRIMARY), so it locks PRIMARY first like the others.", x.Name, s)
	}
	return fmt.Sprintf("Rewrite %s to read the target ids with a non-locking SELECT (… ORDER BY id), then UPDATE one row at a time by PRIMARY KEY in ascending id order, re-checking the expected state in the WHERE and looking at rows affected. Then every writer locks PRIMARY first.", x.Name)
}
