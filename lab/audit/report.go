package audit

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// WriteText prints each statement's lock path, then the findings.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STATEMENT\tTABLE\tLOCKS\tFINDS ROWS THROUGH\tCHANGES")
	for _, p := range r.Paths {
		var finds []string
		keys := make([]string, 0, len(p.Finds))
		for k := range p.Finds {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			finds = append(finds, fmt.Sprintf("%s (%s)", k, strings.Join(p.Finds[k], ", ")))
		}
		locks := "no"
		if p.Locking {
			locks = "yes"
		}
		changes := strings.Join(p.Changes, ", ")
		if changes == "" {
			changes = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, p.Table, locks, strings.Join(finds, "; "), changes)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Findings) == 0 {
		_, err := fmt.Fprintln(w, "\nno crossing lock paths found")
		return err
	}
	for i, f := range r.Findings {
		title := fmt.Sprintf("%s × %s can deadlock on %s.%s", f.A, f.B, f.Table, f.Index)
		if f.Kind != "crossing" {
			title = fmt.Sprintf("%s: range write through %s.%s, which %s changes", f.A, f.Table, f.Index, f.B)
		}
		if _, err := fmt.Fprintf(w, "\n%d. %s\n   %s\n   fix: %s\n", i+1, title, f.Explanation, f.Fix); err != nil {
			return err
		}
	}
	return nil
}
