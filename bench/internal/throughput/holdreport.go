package throughput

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// writeHolds prints each held-snapshot run: its phases, then its samples
// condensed to one row a minute (the chart and the JSON have them all).
func (rep *Report) writeHolds(b *strings.Builder) {
	var runs []Result
	for _, r := range rep.Runs {
		if r.Hold != nil {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return
	}
	h0 := runs[0].Hold
	fmt.Fprintf(b, "### A snapshot held for %s\n\n", fmtSeconds(h0.HoldSeconds))
	fmt.Fprintf(b, "Each run: %s measured, then a REPEATABLE READ transaction (InnoDB: its read view) held open on the same database "+
		"from another connection for %s, then %s measured after its end. Kept: jobs/s while held over jobs/s before; "+
		"recovered: from the release to the end of the first %s sample at 90 %% of before.\n\n",
		fmtSeconds(h0.BeforeSeconds), fmtSeconds(h0.HoldSeconds), fmtSeconds(h0.AfterSeconds), sampleEvery(h0))
	var rows [][]string
	for _, r := range runs {
		h := r.Hold
		rec := "not within the run"
		if h.RecoveredSeconds >= 0 {
			rec = fmtSeconds(h.RecoveredSeconds)
		}
		rows = append(rows, []string{fmt.Sprint(r.Rep), r.System, fmt.Sprintf("%.0f", h.Before), fmt.Sprintf("%.0f", h.Held),
			fmt.Sprintf("%.0f", h.HeldLast), fmt.Sprintf("%.0f", h.After),
			share(h.Held, h.Before), share(h.HeldLast, h.Before), rec,
			fmt.Sprint(maxDead(h))})
	}
	WriteTable(b, []string{"rep", "system", "before jobs/s", "held", fmt.Sprintf("held, last %s", fmtSeconds(h0.HeldLastSecs)),
		"after", "kept", "kept, last", "recovered", "peak garbage"}, "rlrrrrrrrr", rows)
	fmt.Fprintf(b, "\n")
	for _, r := range runs {
		h := r.Hold
		fmt.Fprintf(b, "%s, rep %d, a minute at a time (garbage: %s; claim latency: %s):\n\n", r.System, r.Rep, h.Garbage, orNone(h.Claim))
		rows = nil
		for _, m := range byMinute(h.Samples) {
			rows = append(rows, []string{fmtClock(m.At), m.Phase, fmt.Sprintf("%.0f", m.JobsPerSec), fmtMillis(m.ClaimMillis), fmt.Sprint(m.Dead)})
		}
		WriteTable(b, []string{"until", "phase", "jobs/s", "claim ms", "garbage"}, "rlrrr", rows)
		fmt.Fprintf(b, "\n")
	}
}

// share is part over whole as a percentage; "–" without a whole.
func share(part, whole float64) string {
	if whole <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f %%", 100*part/whole)
}

func orNone(s string) string {
	if s == "" {
		return "not measured"
	}
	return s
}

func fmtMillis(ms float64) string {
	if ms == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", ms)
}

func fmtSeconds(s float64) string {
	if s >= 60 && math.Mod(s, 60) < 0.5 {
		return fmt.Sprintf("%.0f min", s/60)
	}
	return fmt.Sprintf("%.0f s", s)
}

// fmtClock is a time into the run as m:ss.
func fmtClock(s float64) string {
	t := int(math.Round(s))
	return fmt.Sprintf("%d:%02d", t/60, t%60)
}

func sampleEvery(h *HoldResult) string {
	if len(h.Samples) < 2 {
		return ""
	}
	return fmtSeconds(h.Samples[1].At - h.Samples[0].At)
}

func maxDead(h *HoldResult) int64 {
	var m int64
	for _, s := range h.Samples {
		m = max(m, s.Dead)
	}
	return m
}

// byMinute merges samples into one per minute and phase: jobs/s and claim
// latency averaged, garbage as at the end.
func byMinute(samples []HoldSample) []HoldSample {
	var out []HoldSample
	var n, nc int
	key := ""
	for _, s := range samples {
		// A sample ends a few milliseconds after its tick: the one that
		// ends a minute belongs to it.
		if k := fmt.Sprintf("%s/%.0f", s.Phase, math.Ceil((s.At-0.5)/60)); k != key {
			out = append(out, HoldSample{Phase: s.Phase})
			key, n, nc = k, 0, 0
		}
		m := &out[len(out)-1]
		m.JobsPerSec = (m.JobsPerSec*float64(n) + s.JobsPerSec) / float64(n+1)
		n++
		if s.ClaimMillis > 0 {
			m.ClaimMillis = (m.ClaimMillis*float64(nc) + s.ClaimMillis) / float64(nc+1)
			nc++
		}
		m.At, m.Dead = s.At, s.Dead
	}
	return out
}

// WriteHoldChart draws the held-snapshot runs as an SVG: jobs/s, claim
// latency and garbage over time, one line per run, the hold shaded.
func (rep *Report) WriteHoldChart(w io.Writer) error {
	var runs []Result
	for _, r := range rep.Runs {
		if r.Hold != nil {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return fmt.Errorf("no held-snapshot run to chart")
	}
	const (
		width, panelH, left, right, top, gap = 900.0, 180.0, 70.0, 20.0, 40.0, 50.0
	)
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}
	panels := []struct {
		title string
		value func(HoldSample) float64
	}{
		{"jobs/s", func(s HoldSample) float64 { return s.JobsPerSec }},
		{"claim latency, ms", func(s HoldSample) float64 { return s.ClaimMillis }},
		{"garbage (dead tuples / history list length)", func(s HoldSample) float64 { return float64(max(s.Dead, 0)) }},
	}
	height := top + float64(len(panels))*(panelH+gap) + 30
	var xmax float64
	for _, r := range runs {
		for _, s := range r.Hold.Samples {
			xmax = max(xmax, s.At)
		}
	}
	xmax = max(xmax, 1)
	plotW := width - left - right
	x := func(at float64) float64 { return left + at/xmax*plotW }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	h0 := runs[0].Hold
	fmt.Fprintf(&b, `<text x="%.0f" y="20" font-size="14">A snapshot held for %s (shaded), continuous no-op jobs</text>`+"\n", left, html.EscapeString(fmtSeconds(h0.HoldSeconds)))
	for pi, p := range panels {
		y0 := top + float64(pi)*(panelH+gap)
		var ymax float64
		for _, r := range runs {
			for _, s := range r.Hold.Samples {
				ymax = max(ymax, p.value(s))
			}
		}
		ymax = niceCeil(ymax)
		y := func(v float64) float64 { return y0 + panelH - v/ymax*panelH }
		hs, he := x(h0.BeforeSeconds), x(h0.BeforeSeconds+h0.HoldSeconds)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#eeeeee"/>`+"\n", hs, y0, he-hs, panelH)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#999"/>`+"\n", left, y0, plotW, panelH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", left, y0-6, html.EscapeString(p.title))
		for _, frac := range []float64{0, 0.5, 1} {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y(ymax*frac)+4, axisLabel(ymax*frac))
		}
		for ri, r := range runs {
			var pts []string
			for _, s := range r.Hold.Samples {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.At), y(p.value(s))))
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", colors[ri%len(colors)], strings.Join(pts, " "))
		}
	}
	yl := height - 12
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">seconds →  (%s)</text>`+"\n", left, yl, axisLabel(xmax))
	lx := left + 200
	for ri, r := range runs {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="12" height="3" fill="%s"/><text x="%.1f" y="%.1f">%s rep %d</text>`+"\n",
			lx, yl-4, colors[ri%len(colors)], lx+16, yl, html.EscapeString(r.System), r.Rep)
		lx += 190
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func axisLabel(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 10 || v == 0:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
