package throughput

import (
	"encoding/xml"
	"reflect"
	"strings"
	"testing"
)

// byMinute merges the samples of one phase within one minute, averaging
// rates and claim latencies (only where a latency was measured) and
// keeping the garbage at the end; a phase change starts a new row.
func TestByMinute(t *testing.T) {
	got := byMinute([]HoldSample{
		{At: 20, Phase: "before", JobsPerSec: 100, ClaimMillis: 1, Dead: 5},
		{At: 40, Phase: "before", JobsPerSec: 300, ClaimMillis: 0, Dead: 7},
		{At: 55, Phase: "held", JobsPerSec: 50, ClaimMillis: 4, Dead: 9},
		{At: 65, Phase: "held", JobsPerSec: 10, ClaimMillis: 6, Dead: 20},
		{At: 80, Phase: "held", JobsPerSec: 30, ClaimMillis: 8, Dead: 30},
	})
	want := []HoldSample{
		{At: 40, Phase: "before", JobsPerSec: 200, ClaimMillis: 1, Dead: 7},
		{At: 55, Phase: "held", JobsPerSec: 50, ClaimMillis: 4, Dead: 9},
		{At: 80, Phase: "held", JobsPerSec: 20, ClaimMillis: 7, Dead: 30},
	}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

// The held-snapshot section and chart: one table row and one line per
// run, a well-formed SVG, and a refusal without a held run.
func TestHoldReportAndChart(t *testing.T) {
	rep := &Report{}
	rep.Config.Modes, rep.Config.Systems = []string{Continuous}, []string{LockstepPostgres, RiverPostgres}
	for i, sys := range []string{LockstepPostgres, RiverPostgres} {
		h := &HoldResult{HoldSeconds: 600, BeforeSeconds: 60, AfterSeconds: 60, Before: 1000, Held: 800, HeldLast: 700,
			HeldLastSecs: 60, After: 950, RecoveredSeconds: float64(10 * i), Garbage: "dead tuples", Claim: "pg_stat_statements"}
		for at := 5.0; at <= 720; at += 5 {
			phase := "before"
			switch {
			case at > 660:
				phase = "after"
			case at > 60:
				phase = "held"
			}
			h.Samples = append(h.Samples, HoldSample{At: at, Phase: phase, JobsPerSec: 900, ClaimMillis: 1.5, Dead: int64(at)})
		}
		rep.Runs = append(rep.Runs, Result{Mode: Continuous, System: sys, Rep: 1, Hold: h})
	}
	var b strings.Builder
	rep.writeHolds(&b)
	text := b.String()
	for _, want := range []string{"### A snapshot held for 10 min", "|   1 | lockstep-postgres |          1000 |  800 |", "80 %", " 10 s |", "| 11:00 | held   |"} {
		if !strings.Contains(text, want) {
			t.Errorf("the section lacks %q:\n%s", want, text)
		}
	}

	var svg strings.Builder
	if err := rep.WriteHoldChart(&svg); err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal([]byte(svg.String()), new(struct{ XMLName xml.Name })); err != nil {
		t.Fatalf("not well-formed SVG: %v", err)
	}
	if n := strings.Count(svg.String(), "<polyline"); n != 6 {
		t.Fatalf("%d lines, want 6: three panels, two runs", n)
	}
	if err := (&Report{}).WriteHoldChart(&svg); err == nil {
		t.Fatal("a chart without a held run")
	}
}
