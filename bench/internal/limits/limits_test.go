package limits

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-queue/lockstep/bench/internal/servers"
	"github.com/lockstep-queue/lockstep/bench/internal/throughput"
)

func TestMaxInWindow(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms ...int) []time.Time {
		var out []time.Time
		for _, m := range ms {
			out = append(out, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return out
	}
	for _, c := range []struct {
		starts []int
		want   int
	}{
		{nil, 0},
		{[]int{0}, 1},
		{[]int{0, 0, 0}, 3},
		// A start exactly one period after another is in the next window:
		// the limit counts started_at > now - period.
		{[]int{0, 0, 1000, 1000}, 2},
		{[]int{0, 0, 999, 1000}, 3},
		{[]int{0, 500, 500, 1400, 1600, 1600, 1600}, 4},
	} {
		if got := maxInWindow(at(c.starts...), time.Second); got != c.want {
			t.Errorf("maxInWindow(%v) = %d, want %d", c.starts, got, c.want)
		}
	}
}

func TestStartRate(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	// A perfect limiter of 100 per second: 100 at 0 s, 100 at 1 s, … 100
	// at 9 s. 1,000 starts over 9 s is 111/s; the limit's rate is 100/s.
	var starts []time.Time
	for s := range 10 {
		for range 100 {
			starts = append(starts, t0.Add(time.Duration(s)*time.Second))
		}
	}
	if got := startRate(starts, time.Second); got != 100 {
		t.Errorf("startRate = %v, want 100", got)
	}
	if got := maxInWindow(starts, time.Second); got != 100 {
		t.Errorf("maxInWindow = %v, want 100", got)
	}
	// Slower than the limit: 50/s, evenly, for 20 s.
	starts = starts[:0]
	for i := range 1000 {
		starts = append(starts, t0.Add(time.Duration(i)*20*time.Millisecond))
	}
	if got := startRate(starts, time.Second); got < 47 || got > 50 {
		t.Errorf("startRate of an even 50/s = %v", got)
	}
	if got := startRate(nil, time.Second); got != 0 {
		t.Errorf("startRate of none = %v, want 0", got)
	}
}

func TestSummarize(t *testing.T) {
	rep := &Report{}
	rep.Config.Systems = []string{"s"}
	rep.Config.Scenarios = []string{None, Global, Rate}
	for i, x := range []struct{ none, global, starts float64 }{{100, 80, 990}, {200, 200, 1000}, {100, 90, 995}} {
		rep.Runs = append(rep.Runs,
			Result{System: "s", Rep: i + 1, Scenario: None, JobsPerSec: x.none},
			Result{System: "s", Rep: i + 1, Scenario: Global, JobsPerSec: x.global},
			Result{System: "s", Rep: i + 1, Scenario: Rate, JobsPerSec: 50, StartsPerSec: x.starts, MaxInWindow: 1000 - i})
	}
	rep.summarize()
	g, _ := rep.summary("s", Global)
	if g.Median != 90 || g.Ratio != 0.9 || g.Runs != 3 || g.Min != 80 || g.Max != 200 {
		t.Errorf("global summary %+v", g)
	}
	r, _ := rep.summary("s", Rate)
	if r.StartsPerSec != 995 || r.MaxInWindow != 1000 {
		t.Errorf("rate summary %+v", r)
	}
}

// TestRunSQLite runs every scenario small on SQLite (no server needed):
// every job DONE, no limit exceeded, the report printed.
func TestRunSQLite(t *testing.T) {
	ctx := context.Background()
	set, err := servers.Start(ctx, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	cfg := DefaultConfig()
	cfg.Systems = []string{throughput.LockstepSQLite}
	cfg.Reps, cfg.Jobs, cfg.RateJobs, cfg.Clients, cfg.Workers = 1, 300, 60, 2, 4
	cfg.Concurrency, cfg.Keys, cfg.Rate, cfg.RatePeriod, cfg.KeysPremade = 3, 50, 20, 200*time.Millisecond, true
	cfg.SerialJobs, cfg.SampleEvery, cfg.Timeout = 2000, 10*time.Millisecond, 2*time.Minute
	rep, err := Run(ctx, set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != len(AllScenarios) {
		t.Fatalf("%d runs, want %d", len(rep.Runs), len(AllScenarios))
	}
	for _, r := range rep.Runs {
		if r.JobsPerSec <= 0 || r.Samples == 0 {
			t.Errorf("%s: %+v", r.Scenario, r)
		}
		if r.Scenario == Rate && (r.MaxInWindow == 0 || r.StartsPerSec <= 0) {
			t.Errorf("rate: %+v", r)
		}
	}
	if len(rep.Violations) > 0 {
		t.Errorf("limits exceeded: %v", rep.Violations)
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "### Medians") {
		t.Errorf("no medians table:\n%s", b.String())
	}
	_, _ = os.Stderr.WriteString(b.String())

	// Keys met for the first time: a claim leaves their jobs and makes
	// their rows after its commit.
	cfg.Scenarios, cfg.KeysPremade = []string{Keys}, false
	rep, err = Run(ctx, set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Violations) > 0 || rep.Runs[0].PeakKeyRunning > 1 {
		t.Errorf("limits exceeded: %v, %+v", rep.Violations, rep.Runs[0])
	}
}
