package metrics_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/metrics"
	"github.com/lockstep-queue/lockstep/migrate"
)

// TestObserveLimited: a limited claim's blocked and deferred jobs are
// counted by queue; both outcomes appear at a queue's first limited claim
// (so that rate() sees the first increment of either), and none before.
func TestObserveLimited(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Options{})
	require.NoError(t, err)
	m.Observe(lockstep.Event{Kind: lockstep.EventClaimed, Queue: "q", Count: 1})
	require.Empty(t, withPrefix(gathered(t, reg), "lockstep_jobs_limited_total"))

	for _, e := range []lockstep.Event{
		{Kind: lockstep.EventLimited, Queue: "q", Count: 2},
		{Kind: lockstep.EventLimited, Queue: "q", Count: 1, Deferred: 4},
		{Kind: lockstep.EventLimited, Queue: "r", Deferred: 1},
	} {
		m.Observe(e)
	}
	require.Equal(t, map[string]float64{
		"lockstep_jobs_limited_total{outcome=blocked,queue=q}":  3,
		"lockstep_jobs_limited_total{outcome=deferred,queue=q}": 4,
		"lockstep_jobs_limited_total{outcome=blocked,queue=r}":  0,
		"lockstep_jobs_limited_total{outcome=deferred,queue=r}": 1,
	}, withPrefix(gathered(t, reg), "lockstep_jobs_limited_total"))

	// Counting them allocates nothing once the queue is known.
	allocs := testing.AllocsPerRun(100, func() {
		m.Observe(lockstep.Event{Kind: lockstep.EventLimited, Queue: "q", Count: 1, Deferred: 1})
	})
	require.Zero(t, allocs)

	// Beyond the label cap, queues share "_other".
	reg = prometheus.NewRegistry()
	capped, err := metrics.New(reg, metrics.Options{MaxLabelValues: 1})
	require.NoError(t, err)
	capped.Observe(lockstep.Event{Kind: lockstep.EventLimited, Queue: "a", Count: 1})
	capped.Observe(lockstep.Event{Kind: lockstep.EventLimited, Queue: "b", Count: 1})
	capped.Observe(lockstep.Event{Kind: lockstep.EventLimited, Queue: "c", Deferred: 2})
	require.Equal(t, map[string]float64{
		"lockstep_jobs_limited_total{outcome=blocked,queue=a}":       1,
		"lockstep_jobs_limited_total{outcome=deferred,queue=a}":      0,
		"lockstep_jobs_limited_total{outcome=blocked,queue=_other}":  1,
		"lockstep_jobs_limited_total{outcome=deferred,queue=_other}": 2,
	}, withPrefix(gathered(t, reg), "lockstep_jobs_limited_total"))
}

type limitedArgs struct {
	N   int    `json:"n"`
	Key string `json:"key"`
}

func (limitedArgs) Kind() string { return "limited_job" }

// limitDatabases are the databases the limits' metrics are checked on.
func limitDatabases() []struct {
	name string
	open func(t *testing.T, ctx context.Context) driver.Driver
} {
	migrated := func(t *testing.T, ctx context.Context, drv driver.Driver, err error) driver.Driver {
		t.Helper()
		require.NoError(t, err)
		t.Cleanup(func() { _ = drv.Close() })
		mig, err := migrate.New(drv)
		require.NoError(t, err)
		_, err = mig.Up(ctx)
		require.NoError(t, err)
		return drv
	}
	return []struct {
		name string
		open func(t *testing.T, ctx context.Context) driver.Driver
	}{
		{"SQLite", func(t *testing.T, ctx context.Context) driver.Driver {
			drv, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "metrics.db"))
			return migrated(t, ctx, drv, err)
		}},
		{"MariaDB", func(t *testing.T, ctx context.Context) driver.Driver {
			drv, err := mysql.Open(ctx, testdb.MySQL(t))
			return migrated(t, ctx, drv, err)
		}},
		{"PostgreSQL", func(t *testing.T, ctx context.Context) driver.Driver {
			drv, err := postgres.Open(ctx, testdb.Postgres(t))
			return migrated(t, ctx, drv, err)
		}},
	}
}

// TestLimitMetrics: on each database a client's limited claims count the
// jobs they block (a key at its limit of 1) and defer (a key's rate of 1
// per hour spent); the sampler shows the BLOCKED jobs, the RUNNING ones and
// the queues' limits, and drops the gauges of limits that were removed.
func TestLimitMetrics(t *testing.T) {
	for _, db := range limitDatabases() {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			drv := db.open(t, ctx)
			reg := prometheus.NewRegistry()
			m, err := metrics.New(reg, metrics.Options{})
			require.NoError(t, err)

			// The job of "held" that runs first holds its key until release.
			release := make(chan struct{})
			ws := lockstep.NewWorkers()
			lockstep.AddWorker(ws, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[limitedArgs]) error {
				if job.Queue == "held" {
					select {
					case <-release:
					case <-ctx.Done():
					}
				}
				return nil
			}))
			client, err := lockstep.NewClient(drv, lockstep.Config{
				Workers: ws, OnEvent: m.Observe,
				Queues:       map[string]lockstep.QueueConfig{"held": {MaxWorkers: 4}, "rated": {MaxWorkers: 4}},
				PollInterval: 50 * time.Millisecond, MinPollInterval: 5 * time.Millisecond,
			})
			require.NoError(t, err)
			require.NoError(t, client.SetQueueLimits(ctx, "held", lockstep.QueueLimits{Concurrency: 3, KeyConcurrency: 1}))
			require.NoError(t, client.SetQueueLimits(ctx, "rated", lockstep.QueueLimits{Rate: 1, RatePeriod: time.Hour, RateByKey: true}))
			var params []lockstep.InsertManyParams
			for i := range 3 {
				params = append(params, lockstep.InsertManyParams{Args: limitedArgs{N: i}, Opts: &lockstep.InsertOpts{Queue: "held", LimitKey: "k"}})
			}
			for i := range 2 {
				params = append(params, lockstep.InsertManyParams{Args: limitedArgs{N: i}, Opts: &lockstep.InsertOpts{Queue: "rated", LimitKey: "r"}})
			}
			_, err = client.InsertMany(ctx, params)
			require.NoError(t, err)
			require.NoError(t, client.Start(ctx))
			stopped := false
			defer func() {
				if !stopped {
					close(release)
					_ = client.Stop(context.Background())
				}
			}()

			// One of "held" runs, two are BLOCKED; one of "rated" ran, the
			// other waits an hour for its key's next start.
			limited := func() map[string]float64 { return withPrefix(gathered(t, reg), "lockstep_jobs_limited_total") }
			require.Eventually(t, func() bool {
				g := limited()
				return g["lockstep_jobs_limited_total{outcome=blocked,queue=held}"] == 2 &&
					g["lockstep_jobs_limited_total{outcome=deferred,queue=rated}"] == 1
			}, time.Minute, 10*time.Millisecond, "%v", limited())
			require.Equal(t, map[string]float64{
				"lockstep_jobs_limited_total{outcome=blocked,queue=held}":   2,
				"lockstep_jobs_limited_total{outcome=deferred,queue=held}":  0,
				"lockstep_jobs_limited_total{outcome=blocked,queue=rated}":  0,
				"lockstep_jobs_limited_total{outcome=deferred,queue=rated}": 1,
			}, limited())

			require.NoError(t, m.Sample(ctx, client, nil))
			g := gathered(t, reg)
			for k, v := range map[string]float64{
				"lockstep_queue_jobs{queue=held,status=BLOCKED}":        2,
				"lockstep_queue_jobs{queue=held,status=RUNNING}":        1,
				"lockstep_queue_jobs{queue=rated,status=BLOCKED}":       0,
				"lockstep_queue_jobs{queue=rated,status=PENDING}":       1,
				"lockstep_queue_jobs_capped{queue=held,status=BLOCKED}": 0,
			} {
				require.Contains(t, g, k)
				require.Equal(t, v, g[k], k)
			}
			require.Equal(t, map[string]float64{
				"lockstep_queue_limit{limit=concurrency,queue=held}":     3,
				"lockstep_queue_limit{limit=key_concurrency,queue=held}": 1,
				"lockstep_queue_limit{limit=key_rate,queue=rated}":       1,
			}, withPrefix(g, "lockstep_queue_limit{"))
			require.Equal(t, map[string]float64{"lockstep_queue_limit_period_seconds{queue=rated}": 3600},
				withPrefix(g, "lockstep_queue_limit_period_seconds"))

			// Changed limits replace the gauges; removed ones go.
			require.NoError(t, client.SetQueueLimits(ctx, "held", lockstep.QueueLimits{KeyConcurrency: 1, Sequence: lockstep.SequenceHold, Rate: 100, RatePeriod: time.Second}))
			require.NoError(t, client.SetQueueLimits(ctx, "rated", lockstep.QueueLimits{}))
			require.NoError(t, m.Sample(ctx, client, nil))
			g = gathered(t, reg)
			require.Equal(t, map[string]float64{
				"lockstep_queue_limit{limit=key_concurrency,queue=held}": 1,
				"lockstep_queue_limit{limit=sequence,queue=held}":        1,
				"lockstep_queue_limit{limit=rate,queue=held}":            100,
			}, withPrefix(g, "lockstep_queue_limit{"))
			require.Equal(t, map[string]float64{"lockstep_queue_limit_period_seconds{queue=held}": 1},
				withPrefix(g, "lockstep_queue_limit_period_seconds"))
			require.NoError(t, client.SetQueueLimits(ctx, "held", lockstep.QueueLimits{}))
			require.NoError(t, m.Sample(ctx, client, nil))
			require.Empty(t, withPrefix(gathered(t, reg), "lockstep_queue_limit"))

			close(release)
			stopped = true
			require.NoError(t, client.Stop(ctx))
		})
	}
}
