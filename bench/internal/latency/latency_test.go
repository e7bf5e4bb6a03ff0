package latency

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
)

func TestRank(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for p, want := range map[float64]time.Duration{0.5: 50 * time.Millisecond, 0.99: 99 * time.Millisecond, 1: 100 * time.Millisecond} {
		if got := rank(d, p); got != want {
			t.Errorf("rank(%v) = %s, want %s", p, got, want)
		}
	}
	if rank(nil, 0.5) != 0 {
		t.Error("rank of nothing is not 0")
	}
}

func TestPeakRSS(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	rss, err := RSS()
	if err != nil {
		t.Fatal(err)
	}
	if err := ResetPeakRSS(); err != nil {
		t.Logf("cannot reset the peak: %v", err)
	}
	peak, err := PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	if rss <= 0 || peak < rss/2 {
		t.Fatalf("peak %d, rss %d", peak, rss)
	}
}

// TestRunSQLite runs both modes briefly on SQLite (no server needed): every
// job enqueued is seen to start.
func TestRunSQLite(t *testing.T) {
	target := Target{Name: "sqlite", NewDatabase: func(context.Context) (*Database, error) {
		path := filepath.Join(t.TempDir(), "latency.db")
		return &Database{
			Open:  func(ctx context.Context) (driver.Driver, error) { return sqlite.Open(ctx, path) },
			Close: func() error { return nil },
		}, nil
	}}
	var phases []Phase
	for _, v := range []Variant{{Mode: CrossProcess, Settings: "defaults"}, {Mode: SameProcess, Settings: "defaults"}} {
		phases = append(phases, Phase{Target: target, Variant: v, Rate: 50})
	}
	res, err := Run(context.Background(), phases, Options{Duration: 400 * time.Millisecond, Workers: 10, Enqueuers: 2, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Jobs != 20 || r.Missing != 0 || r.EnqueueErrors != 0 {
			t.Errorf("%s: %d jobs, %d missing, %d errors; want 20, 0, 0", r.Mode, r.Jobs, r.Missing, r.EnqueueErrors)
		}
		if r.P50MS <= 0 && r.Early < r.Jobs/2 || r.MaxMS < r.P99MS || r.P99MS < r.P50MS {
			t.Errorf("%s: implausible percentiles %+v", r.Mode, r)
		}
	}
	if err := WriteText(os.Stderr, res, Options{Duration: 400 * time.Millisecond, Workers: 10, Enqueuers: 2}); err != nil {
		t.Fatal(err)
	}
}
