package metrics_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/metrics"
	"github.com/lockstep-queue/lockstep/migrate"
)

// TestObserveWorkflow: promotions and callbacks are counted by the queue
// and kind of the job whose end caused them, and appear only once a
// workflow event was seen (most queues run none).
func TestObserveWorkflow(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Options{})
	require.NoError(t, err)
	m.Observe(lockstep.Event{Kind: lockstep.EventEnqueued, Queue: "q", JobKind: "plain"})
	require.Empty(t, withPrefix(gathered(t, reg), "lockstep_jobs_promoted_total"))
	require.Empty(t, withPrefix(gathered(t, reg), "lockstep_run_callbacks_total"))

	for _, e := range []lockstep.Event{
		{Kind: lockstep.EventPromoted, Queue: "q", JobKind: "extract", Count: 1000},
		{Kind: lockstep.EventPromoted, Queue: "q", JobKind: "load", Count: 1},
		{Kind: lockstep.EventPromoted, Queue: "q", JobKind: "load", Count: 2},
		{Kind: lockstep.EventCallback, Queue: "q", JobKind: "load", Count: 2},
		{Kind: lockstep.EventPromoted, Queue: "q", JobKind: "load", Count: 0}, // nothing to count
	} {
		m.Observe(e)
	}
	g := gathered(t, reg)
	require.Equal(t, map[string]float64{
		"lockstep_jobs_promoted_total{kind=extract,queue=q}": 1000,
		"lockstep_jobs_promoted_total{kind=load,queue=q}":    3,
	}, withPrefix(g, "lockstep_jobs_promoted_total"))
	require.Equal(t, map[string]float64{
		"lockstep_run_callbacks_total{kind=extract,queue=q}": 0,
		"lockstep_run_callbacks_total{kind=load,queue=q}":    2,
	}, withPrefix(g, "lockstep_run_callbacks_total"))

	// Counting them allocates nothing once the pair is known.
	allocs := testing.AllocsPerRun(100, func() {
		m.Observe(lockstep.Event{Kind: lockstep.EventPromoted, Queue: "q", JobKind: "load", Count: 1})
		m.Observe(lockstep.Event{Kind: lockstep.EventCallback, Queue: "q", JobKind: "load", Count: 1})
	})
	require.Zero(t, allocs)
}

type notifyArgs struct{ To string }

func (notifyArgs) Kind() string { return "notify" }

// TestSQLiteWorkflow runs a workflow a → (b, c) with a success callback on
// a real client and counts what the ends did: a's end promotes b and c;
// the later of b and c promotes the callback and fires it.
func TestSQLiteWorkflow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	drv, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "metrics.db"))
	require.NoError(t, err)
	defer drv.Close()
	mig, err := migrate.New(drv)
	require.NoError(t, err)
	_, err = mig.Up(ctx)
	require.NoError(t, err)

	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Options{})
	require.NoError(t, err)
	fired := make(chan lockstep.CallbackArgs[notifyArgs], 1)
	ws := lockstep.NewWorkers()
	lockstep.AddWorker(ws, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[okArgs]) error { return nil }))
	lockstep.AddWorker(ws, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[lockstep.CallbackArgs[notifyArgs]]) error {
		fired <- job.Args
		return nil
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{
		Workers: ws, OnEvent: m.Observe,
		PollInterval: 50 * time.Millisecond, MinPollInterval: 5 * time.Millisecond,
	})
	require.NoError(t, err)

	run, _, err := client.InsertRun(ctx, "fan-out", &lockstep.RunOpts{
		Callbacks: []lockstep.RunCallback{{On: lockstep.CallbackOnSuccess, Args: notifyArgs{To: "ops"}}},
	},
		lockstep.InsertManyParams{Key: "a", Args: okArgs{1}},
		lockstep.InsertManyParams{Key: "b", Args: okArgs{2}, DependsOn: []string{"a"}},
		lockstep.InsertManyParams{Key: "c", Args: okArgs{3}, DependsOn: []string{"a"}},
	)
	require.NoError(t, err)
	require.NoError(t, client.Start(ctx))
	var args lockstep.CallbackArgs[notifyArgs]
	select {
	case args = <-fired:
	case <-ctx.Done():
		t.Fatal("the callback did not run")
	}
	require.Equal(t, run.ID, args.RunID)
	// Stop waits for the finishing goroutines, which emit after writing.
	require.NoError(t, client.Stop(ctx))

	g := gathered(t, reg)
	require.Equal(t, map[string]float64{"lockstep_jobs_promoted_total{kind=ok_job,queue=default}": 3},
		withPrefix(g, "lockstep_jobs_promoted_total"))
	require.Equal(t, map[string]float64{"lockstep_run_callbacks_total{kind=ok_job,queue=default}": 1},
		withPrefix(g, "lockstep_run_callbacks_total"))
}
