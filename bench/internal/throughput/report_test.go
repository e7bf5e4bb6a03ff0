package throughput

import (
	"strings"
	"testing"
)

func TestParseSystems(t *testing.T) {
	got, err := ParseSystems("river-postgres, lockstep-postgres,river-postgres")
	if err != nil || strings.Join(got, ",") != "river-postgres,lockstep-postgres" {
		t.Fatalf("got %v, %v", got, err)
	}
	if got, _ := ParseSystems("all"); len(got) != len(AllSystems) {
		t.Fatalf("all: %v", got)
	}
	if _, err := ParseSystems("lockstep-oracle"); err == nil {
		t.Fatal("unknown system accepted")
	}
}

// The ratio pairs lockstep and River of the same repetition, and the
// median is the middle run, not the mean.
func TestSummarize(t *testing.T) {
	rep := &Report{}
	rep.Config.Modes = []string{BurnDown}
	rep.Config.Systems = []string{LockstepPostgres, RiverPostgres}
	rep.Config.Reps = 3
	for i, rates := range [][2]float64{{300, 100}, {100, 200}, {200, 400}} {
		rep.Runs = append(rep.Runs,
			Result{Mode: BurnDown, System: LockstepPostgres, Rep: i + 1, JobsPerSec: rates[0]},
			Result{Mode: BurnDown, System: RiverPostgres, Rep: i + 1, JobsPerSec: rates[1]})
	}
	rep.summarize()
	if len(rep.Summaries) != 2 || rep.Summaries[0].Median != 200 || rep.Summaries[1].Median != 200 ||
		rep.Summaries[0].Min != 100 || rep.Summaries[0].Max != 300 {
		t.Fatalf("summaries: %+v", rep.Summaries)
	}
	want := []float64{3, 0.5, 0.5}
	if len(rep.Ratios) != 3 {
		t.Fatalf("ratios: %+v", rep.Ratios)
	}
	for i, r := range rep.Ratios {
		if r.Rep != i+1 || r.Ratio != want[i] {
			t.Fatalf("ratio %d: %+v, want %v", i, r, want[i])
		}
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| lockstep-postgres |           200 |", "rep 1: 3.00×, rep 2: 0.50×, rep 3: 0.50×"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, b.String())
		}
	}
}
