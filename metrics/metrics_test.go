package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/metrics"
	"github.com/lockstep-queue/lockstep/migrate"
)

// gathered reads every series of reg as "name{k=v,...}" (labels sorted) →
// value; a histogram gives its sample count.
func gathered(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			slices.Sort(ls)
			key := mf.GetName() + "{" + strings.Join(ls, ",") + "}"
			switch {
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// withPrefix keeps the series of g whose key starts with prefix.
func withPrefix(g map[string]float64, prefix string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range g {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}

func TestObserve(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Options{})
	require.NoError(t, err)

	for _, e := range []lockstep.Event{
		{Kind: lockstep.EventEnqueued, Queue: "q", JobKind: "a"},
		{Kind: lockstep.EventEnqueued, Queue: "q", JobKind: "a"},
		{Kind: lockstep.EventEnqueued, Queue: "q", JobKind: "b"},
		{Kind: lockstep.EventClaimed, Queue: "q", Count: 3, Took: 2 * time.Millisecond},
		{Kind: lockstep.EventClaimed, Queue: "q", Count: 0, Took: time.Millisecond},
		{Kind: lockstep.EventJobStarted, Queue: "q", JobKind: "a", Wait: 1500 * time.Millisecond},
		{Kind: lockstep.EventJobStarted, Queue: "q", JobKind: "b"},
		{Kind: lockstep.EventJobFinished, Queue: "q", JobKind: "a", Status: lockstep.StatusDone, Took: time.Millisecond, Ran: time.Second},
		{Kind: lockstep.EventJobFinished, Queue: "q", JobKind: "a", Status: lockstep.StatusFailed},
		{Kind: lockstep.EventJobFinished, Queue: "q", JobKind: "a", Status: lockstep.StatusPending, Retry: true},
		{Kind: lockstep.EventJobFinished, Queue: "q", JobKind: "a", Status: lockstep.StatusPending, Snoozed: true},
		// The fence discarded these: no retry happened.
		{Kind: lockstep.EventJobFinished, Queue: "q", JobKind: "b", Status: lockstep.StatusPending, Retry: true, Discarded: true},
		{Kind: lockstep.EventJobFinished, Queue: "q", JobKind: "b", Status: lockstep.StatusDone, Discarded: true},
		{Kind: lockstep.EventReaped, Status: lockstep.StatusPending},
		{Kind: lockstep.EventReaped, Status: lockstep.StatusPending},
		{Kind: lockstep.EventReaped, Status: lockstep.StatusFailed},
		{Kind: lockstep.EventCancelled, Count: 3},
		{Kind: lockstep.EventCancelled, Count: 1},
		{Kind: lockstep.EventDBRetry, Op: "finish", Code: "40001"},
		{Kind: lockstep.EventDBRetry, Op: "finish", Code: "40001"},
		{Kind: lockstep.EventDBRetry, Op: "enqueue", Code: ""},
		// Not a code: must not reach a label.
		{Kind: lockstep.EventDBRetry, Op: "enqueue", Code: "dial tcp user:hunter2@db"},
		{Kind: lockstep.EventQueuePaused, Queue: "q"},
		{Kind: lockstep.EventQueuePaused, Queue: "r"},
		{Kind: lockstep.EventQueueResumed, Queue: "r"},
		{Kind: lockstep.EventQueueMaxWorkers, Queue: "q", Count: 3},
	} {
		m.Observe(e)
	}

	g := gathered(t, reg)
	want := map[string]float64{
		"lockstep_jobs_enqueued_total{kind=a,queue=q}":                  2,
		"lockstep_jobs_enqueued_total{kind=b,queue=q}":                  1,
		"lockstep_jobs_claimed_total{queue=q}":                          3,
		"lockstep_claim_batch_size{queue=q}":                            2,
		"lockstep_claim_duration_seconds{queue=q}":                      2,
		"lockstep_job_wait_seconds{kind=a,queue=q}":                     1,
		"lockstep_job_wait_seconds{kind=b,queue=q}":                     1,
		"lockstep_jobs_finished_total{kind=a,queue=q,status=DONE}":      1,
		"lockstep_jobs_finished_total{kind=a,queue=q,status=FAILED}":    1,
		"lockstep_jobs_finished_total{kind=a,queue=q,status=RETRY}":     1,
		"lockstep_jobs_finished_total{kind=a,queue=q,status=SNOOZED}":   1,
		"lockstep_jobs_finished_total{kind=b,queue=q,status=DISCARDED}": 2,
		"lockstep_job_retries_total{kind=a,queue=q}":                    1,
		"lockstep_job_retries_total{kind=b,queue=q}":                    0,
		"lockstep_job_snoozes_total{kind=a,queue=q}":                    1,
		"lockstep_job_run_duration_seconds{kind=a,queue=q}":             4,
		"lockstep_job_run_duration_seconds{kind=b,queue=q}":             2,
		"lockstep_finish_duration_seconds{queue=q}":                     6,
		"lockstep_jobs_reaped_total{status=PENDING}":                    2,
		"lockstep_jobs_reaped_total{status=FAILED}":                     1,
		"lockstep_jobs_cancelled_total{}":                               4,
		"lockstep_db_retries_total{code=40001,op=finish}":               2,
		"lockstep_db_retries_total{code=none,op=enqueue}":               1,
		"lockstep_db_retries_total{code=_other,op=enqueue}":             1,
		"lockstep_queue_paused{queue=q}":                                1,
		"lockstep_queue_paused{queue=r}":                                0,
		"lockstep_queue_max_workers{queue=q}":                           3,
	}
	for k, v := range want {
		require.Contains(t, g, k)
		require.Equal(t, v, g[k], k)
	}
	for k := range g {
		require.NotContains(t, k, "hunter2")
	}
	// The finished statuses of a pair exist from its first event on, so
	// rate() sees their first increment.
	require.Contains(t, g, "lockstep_jobs_finished_total{kind=b,queue=q,status=FAILED}")
	require.Equal(t, 0.0, g["lockstep_jobs_finished_total{kind=b,queue=q,status=FAILED}"])

	// The wait lands in its bucket: 1.5 s is in le=2.5, not in le=1.
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP lockstep_jobs_reaped_total Jobs with a stale heartbeat that the reaper returned, by the status it gave them.
# TYPE lockstep_jobs_reaped_total counter
lockstep_jobs_reaped_total{status="FAILED"} 1
lockstep_jobs_reaped_total{status="PENDING"} 2
`), "lockstep_jobs_reaped_total"))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var buckets map[float64]uint64
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != "lockstep_job_wait_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			kindA := false
			for _, l := range m.GetLabel() {
				kindA = kindA || l.GetName() == "kind" && l.GetValue() == "a"
			}
			if kindA {
				buckets = map[float64]uint64{}
				for _, b := range m.GetHistogram().GetBucket() {
					buckets[b.GetUpperBound()] = b.GetCumulativeCount()
				}
				sum = m.GetHistogram().GetSampleSum()
			}
		}
	}
	require.Equal(t, uint64(0), buckets[1])
	require.Equal(t, uint64(1), buckets[2.5])
	require.InDelta(t, 1.5, sum, 1e-9)
}

func TestNewTwiceOnOneRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, err := metrics.New(reg, metrics.Options{})
	require.NoError(t, err)
	_, err = metrics.New(reg, metrics.Options{})
	require.Error(t, err)

	// A failed New leaves the registry as it was: with the conflicting
	// collector gone, New succeeds.
	reg = prometheus.NewRegistry()
	clash := prometheus.NewCounter(prometheus.CounterOpts{Name: "lockstep_jobs_cancelled_total", Help: "Jobs cancelled through this process."})
	require.NoError(t, reg.Register(clash))
	_, err = metrics.New(reg, metrics.Options{})
	require.Error(t, err)
	require.True(t, reg.Unregister(clash))
	_, err = metrics.New(reg, metrics.Options{})
	require.NoError(t, err)

	_, err = metrics.New(prometheus.NewRegistry(), metrics.Options{MaxLabelValues: -1})
	require.Error(t, err)
}

func TestLabelCap(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Options{MaxLabelValues: 2})
	require.NoError(t, err)
	enqueue := func(queue, kind string) {
		m.Observe(lockstep.Event{Kind: lockstep.EventEnqueued, Queue: queue, JobKind: kind})
	}
	enqueue("q", "k1")
	enqueue("q", "k2")
	enqueue("q", "k3") // third pair: kind _other
	enqueue("q", "k4")
	enqueue("r", "k1") // pairs full; queue r still fits
	for i := range 50 {
		enqueue(fmt.Sprintf("tenant-%d", i), "k") // queues full too
	}
	enqueue("q", "k1") // an early pair keeps its name
	m.Observe(lockstep.Event{Kind: lockstep.EventClaimed, Queue: "tenant-7", Count: 2})

	g := gathered(t, reg)
	require.Equal(t, map[string]float64{
		"lockstep_jobs_enqueued_total{kind=k1,queue=q}":          2,
		"lockstep_jobs_enqueued_total{kind=k2,queue=q}":          1,
		"lockstep_jobs_enqueued_total{kind=_other,queue=q}":      2,
		"lockstep_jobs_enqueued_total{kind=_other,queue=r}":      1,
		"lockstep_jobs_enqueued_total{kind=_other,queue=_other}": 50,
	}, withPrefix(g, "lockstep_jobs_enqueued_total"))
	require.Equal(t, map[string]float64{
		"lockstep_jobs_claimed_total{queue=q}":      0,
		"lockstep_jobs_claimed_total{queue=r}":      0,
		"lockstep_jobs_claimed_total{queue=_other}": 2,
	}, withPrefix(g, "lockstep_jobs_claimed_total"))
}

// TestLabelSafety: a name the client would refuse (invalid UTF-8) must not
// make Observe panic, which client_golang does on invalid label values.
func TestLabelSafety(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Options{})
	require.NoError(t, err)
	require.NotPanics(t, func() {
		m.Observe(lockstep.Event{Kind: lockstep.EventEnqueued, Queue: "bad\xff", JobKind: ""})
		m.Observe(lockstep.Event{Kind: lockstep.EventDBRetry, Op: "x\xfe", Code: "1213"})
	})
	_, err = reg.Gather()
	require.NoError(t, err)
}

// TestObserveAllocs: Observe runs several times per job, so once a pair's
// children are cached it must not allocate.
func TestObserveAllocs(t *testing.T) {
	m, err := metrics.New(prometheus.NewRegistry(), metrics.Options{})
	require.NoError(t, err)
	events := []lockstep.Event{
		{Kind: lockstep.EventEnqueued, Queue: "q", JobKind: "a"},
		{Kind: lockstep.EventClaimed, Queue: "q", Count: 1, Took: time.Millisecond},
		{Kind: lockstep.EventJobStarted, Queue: "q", JobKind: "a", Wait: time.Second},
		{Kind: lockstep.EventJobFinished, Queue: "q", JobKind: "a", Status: lockstep.StatusDone, Took: time.Millisecond, Ran: time.Second},
		{Kind: lockstep.EventDBRetry, Op: "finish", Code: "5"},
	}
	for _, e := range events {
		m.Observe(e)
	}
	allocs := testing.AllocsPerRun(100, func() {
		for _, e := range events {
			m.Observe(e)
		}
	})
	require.Zero(t, allocs)
}

func BenchmarkObserve(b *testing.B) {
	m, err := metrics.New(prometheus.NewRegistry(), metrics.Options{})
	require.NoError(b, err)
	e := lockstep.Event{Kind: lockstep.EventJobFinished, Queue: "q", JobKind: "a", Status: lockstep.StatusDone, Took: time.Millisecond, Ran: time.Second}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Observe(e)
		}
	})
}

type okArgs struct{ N int }

func (okArgs) Kind() string { return "ok_job" }

type badArgs struct{}

func (badArgs) Kind() string { return "bad_job" }

// TestSQLite runs a real client on SQLite with Observe as its OnEvent and
// checks the counters, histograms and sampled gauges against what the jobs
// did.
func TestSQLite(t *testing.T) {
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
	require.NoError(t, m.RegisterDB(reg, "lockstep", drv.DB()))

	ws := lockstep.NewWorkers()
	lockstep.AddWorker(ws, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[okArgs]) error {
		return nil
	}))
	lockstep.AddWorker(ws, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[badArgs]) error {
		return lockstep.Permanent(errors.New("bad input"))
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{
		Workers: ws, OnEvent: m.Observe,
		PollInterval: 50 * time.Millisecond, MinPollInterval: 5 * time.Millisecond,
	})
	require.NoError(t, err)
	require.NoError(t, client.Start(ctx))
	stopped := false
	defer func() {
		if !stopped {
			_ = client.Stop(context.Background())
		}
	}()

	idsRes, err := client.InsertMany(ctx, []lockstep.InsertManyParams{
		{Args: okArgs{1}}, {Args: okArgs{2}}, {Args: okArgs{3}}, {Args: badArgs{}},
	})
	require.NoError(t, err)
	ids := insertedIDs(idsRes)
	require.Eventually(t, func() bool {
		for _, id := range ids {
			j, err := client.Job(ctx, id)
			if err != nil || (j.Status != lockstep.StatusDone && j.Status != lockstep.StatusFailed) {
				return false
			}
		}
		return true
	}, time.Minute, 10*time.Millisecond)
	// Stop waits for the finishing goroutines, which emit after writing.
	require.NoError(t, client.Stop(ctx))
	stopped = true

	g := gathered(t, reg)
	for k, v := range map[string]float64{
		"lockstep_jobs_enqueued_total{kind=ok_job,queue=default}":                3,
		"lockstep_jobs_enqueued_total{kind=bad_job,queue=default}":               1,
		"lockstep_jobs_claimed_total{queue=default}":                             4,
		"lockstep_jobs_finished_total{kind=ok_job,queue=default,status=DONE}":    3,
		"lockstep_jobs_finished_total{kind=bad_job,queue=default,status=FAILED}": 1,
		"lockstep_jobs_finished_total{kind=ok_job,queue=default,status=FAILED}":  0,
		"lockstep_job_retries_total{kind=bad_job,queue=default}":                 0,
		"lockstep_job_wait_seconds{kind=ok_job,queue=default}":                   3,
		"lockstep_job_wait_seconds{kind=bad_job,queue=default}":                  1,
		"lockstep_job_run_duration_seconds{kind=ok_job,queue=default}":           3,
		"lockstep_job_run_duration_seconds{kind=bad_job,queue=default}":          1,
		"lockstep_finish_duration_seconds{queue=default}":                        4,
	} {
		require.Contains(t, g, k)
		require.Equal(t, v, g[k], k)
	}
	require.Positive(t, g["lockstep_claim_batch_size{queue=default}"])
	require.Positive(t, g["lockstep_claim_duration_seconds{queue=default}"])
	require.Contains(t, g, "go_sql_open_connections{db_name=lockstep}")

	require.NoError(t, m.Sample(ctx, client, nil))
	g = gathered(t, reg)
	for k, v := range map[string]float64{
		"lockstep_queue_jobs{queue=default,status=DONE}":         3,
		"lockstep_queue_jobs{queue=default,status=FAILED}":       1,
		"lockstep_queue_jobs{queue=default,status=PENDING}":      0,
		"lockstep_queue_jobs_capped{queue=default,status=DONE}":  0,
		"lockstep_queue_oldest_available_seconds{queue=default}": 0,
	} {
		require.Contains(t, g, k)
		require.Equal(t, v, g[k], k)
	}

	// A count limit below the counts marks them capped.
	require.NoError(t, m.Sample(ctx, client, &lockstep.StatsParams{CountLimit: 2}))
	g = gathered(t, reg)
	require.Equal(t, 1.0, g["lockstep_queue_jobs_capped{queue=default,status=DONE}"])
	require.Equal(t, 0.0, g["lockstep_queue_jobs_capped{queue=default,status=FAILED}"])

	// A job of a queue no client serves, available since an hour ago:
	// the sampler loop picks it up with its age.
	_, err = client.Insert(ctx, okArgs{4}, &lockstep.InsertOpts{Queue: "later", ScheduledAt: time.Now().Add(-time.Hour)})
	require.NoError(t, err)
	sctx, stopSampler := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); m.RunSampler(sctx, client, 20*time.Millisecond, nil) }()
	require.Eventually(t, func() bool {
		return gathered(t, reg)["lockstep_queue_jobs{queue=later,status=PENDING}"] == 1
	}, time.Minute, 10*time.Millisecond)
	stopSampler()
	<-done
	g = gathered(t, reg)
	require.InDelta(t, time.Hour.Seconds(), g["lockstep_queue_oldest_available_seconds{queue=later}"], 120)
	require.Equal(t, 0.0, g["lockstep_queue_oldest_available_seconds{queue=default}"])

	// Queues that are gone lose their gauges.
	_, err = drv.DB().ExecContext(ctx, `DELETE FROM lockstep_jobs`)
	require.NoError(t, err)
	require.NoError(t, m.Sample(ctx, client, nil))
	require.Empty(t, withPrefix(gathered(t, reg), "lockstep_queue_"))
}

// insertedIDs are the ids of inserted jobs, in input order.
func insertedIDs(res []lockstep.InsertResult) []int64 {
	ids := make([]int64, len(res))
	for i, r := range res {
		ids[i] = r.ID
	}
	return ids
}
