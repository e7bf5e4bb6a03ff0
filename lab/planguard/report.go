package planguard

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText prints the report as a table, one line per statement and
// probe, with the problems of failures under them.
func (r *Report) WriteText(w io.Writer, verbose bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "DISTRIBUTION\tSTATEMENT\tPROBE\tDECLARED\tPLAN\tVERDICT\n")
	for _, res := range r.Results {
		switch {
		case res.Skipped != "" && !verbose:
			continue
		case res.Skipped != "":
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t-\tskipped: %s\n", res.Distribution, res.Statement, res.Variant, dash(res.Want), res.Skipped)
			continue
		}
		verdict := "ok"
		if !res.OK() {
			verdict = "FAIL"
		}
		var plan []string
		for _, a := range res.Plan.Accesses {
			plan = append(plan, a.String())
		}
		if res.Plan.Sorts {
			plan = append(plan, "sorts")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", res.Distribution, res.Statement, res.Variant, dash(res.Want), strings.Join(plan, "; "), verdict)
		if len(res.Notes) > 0 && verdict == "ok" {
			verdict = "ok (note)"
		}
		for _, p := range res.Problems {
			fmt.Fprintf(tw, "\t\t\t\t  ↳ %s\t\n", p)
		}
		for _, n := range res.Notes {
			fmt.Fprintf(tw, "\t\t\t\t  ↳ note: %s (the same tuples are locked whatever the index)\t\n", n)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	failed := len(r.Failed())
	checked := 0
	for _, res := range r.Results {
		if res.Skipped == "" {
			checked++
		}
	}
	_, err := fmt.Fprintf(w, "%s: %d plans checked, %d failed\n", r.Dialect, checked, failed)
	return err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// FailureLines describes each failed check on one line (distribution,
// statement, probe, problems), for test messages and logs.
func (r *Report) FailureLines() []string {
	var out []string
	for _, res := range r.Failed() {
		out = append(out, fmt.Sprintf("%s %s %s: %s", res.Distribution, res.Statement, res.Variant, strings.Join(res.Problems, "; ")))
	}
	return out
}
