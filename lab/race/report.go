package race

import (
	"encoding/csv"
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the results as a table like the published race
// numbers, one line per experiment, with errors by code.
func WriteTable(w io.Writer, results []*Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CANCEL\tCLAIM\tROUNDS\tDEADLOCKING ROUNDS\tERRORS BY CODE\tTIME")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", r.Cancel, r.Claim, r.Rounds, r.DeadlockRounds, r.errorText(), r.Duration.Round(100_000_000))
	}
	return tw.Flush()
}

func (r *Result) errorText() string {
	var parts []string
	for _, c := range r.Codes() {
		parts = append(parts, fmt.Sprintf("%d×%d", c, r.Errors[c]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// WriteCSV writes one row per experiment.
func WriteCSV(w io.Writer, results []*Result) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"cancel", "claim", "rounds", "deadlocking_rounds", "errors_1213", "errors_1205", "errors_other", "seconds"})
	for _, r := range results {
		other := 0
		for c, n := range r.Errors {
			if c != 1213 && c != 1205 {
				other += n
			}
		}
		_ = cw.Write([]string{r.Cancel, r.Claim, strconv.Itoa(r.Rounds), strconv.Itoa(r.DeadlockRounds),
			strconv.Itoa(r.Errors[1213]), strconv.Itoa(r.Errors[1205]), strconv.Itoa(other), fmt.Sprintf("%.1f", r.Duration.Seconds())})
	}
	cw.Flush()
	return cw.Error()
}

// WriteSVG draws deadlocking rounds per experiment as a horizontal bar
// chart. It is a few rectangles and labels, so it is written by hand
// rather than pulling a plotting library into the module.
func WriteSVG(w io.Writer, results []*Result) error {
	const width, left, barH, gap, top = 720, 260, 22, 8, 40
	most := 1
	for _, r := range results {
		most = max(most, r.Rounds)
	}
	height := top + len(results)*(barH+gap) + 30
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="14" font-weight="bold">Rounds with error 1213, of %d (8 claimers + 1 canceller)</text>`+"\n", most)
	scale := float64(width-left-80) / float64(most)
	for i, r := range results {
		y := top + i*(barH+gap)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, y+barH-6, html.EscapeString(r.Cancel+" × claim "+r.Claim))
		wBar := float64(r.DeadlockRounds) * scale
		color := "#2e7d32"
		if r.DeadlockRounds > 0 {
			color = "#c62828"
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", left, y, wBar, barH, color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%d</text>`+"\n", float64(left)+wBar+6, y+barH-6, r.DeadlockRounds)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
