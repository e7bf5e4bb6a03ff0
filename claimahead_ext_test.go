package lockstep_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
)

type quickArgs struct{}

func (quickArgs) Kind() string { return "quick" }

// TestMaxWorkersWithClaimsAhead: a saturated queue of jobs shorter than a
// claim has its claims take more jobs than it has free workers (they wait
// in the process for one), and still never runs more than MaxWorkers at
// once; every job ends DONE once.
func TestMaxWorkersWithClaimsAhead(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		drv = openMigrated(t, drv)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		const maxWorkers, jobs = 3, 600
		var now, peak, ran atomic.Int64
		ws := lockstep.NewWorkers()
		lockstep.AddWorker(ws, lockstep.WorkFunc(func(context.Context, *lockstep.Job[quickArgs]) error {
			n := now.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			ran.Add(1)
			now.Add(-1)
			return nil
		}))
		var biggest, done atomic.Int64
		c := quietClient(t, drv, lockstep.Config{
			Workers: ws, Queues: map[string]lockstep.QueueConfig{lockstep.DefaultQueue: {MaxWorkers: maxWorkers}},
			OnEvent: func(e lockstep.Event) {
				switch {
				case e.Kind == lockstep.EventClaimed:
					for b := biggest.Load(); int64(e.Count) > b && !biggest.CompareAndSwap(b, int64(e.Count)); b = biggest.Load() {
					}
				case e.Kind == lockstep.EventJobFinished && e.Status == lockstep.StatusDone && !e.Discarded:
					done.Add(1)
				}
			},
		})
		params := make([]lockstep.InsertManyParams, jobs)
		for i := range params {
			params[i] = lockstep.InsertManyParams{Args: quickArgs{}}
		}
		_, err := c.InsertMany(ctx, params)
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx))
		eventually(t, time.Minute, "every job DONE", func() bool { return done.Load() == jobs })
		require.NoError(t, c.Stop(ctx))

		require.LessOrEqual(t, peak.Load(), int64(maxWorkers), "jobs running at once")
		require.Equal(t, int64(jobs), ran.Load(), "each job ran once")
		require.Equal(t, jobs, countJobs(t, drv, "status", "DONE"))
		require.Greater(t, biggest.Load(), int64(maxWorkers), "a claim took more jobs than the queue has workers")
	})
}

// TestClaimsAheadHeldBackByLowerCapAndPause: jobs claimed ahead start only
// while fewer than the queue's current MaxWorkers run, so a lower cap set
// at runtime holds from the producer's next turn on (at most the new cap
// run, counting the jobs started before it); and after a pause nothing
// more is claimed, the jobs already claimed run once, and the rest stay
// PENDING.
func TestClaimsAheadHeldBackByLowerCapAndPause(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		drv = openMigrated(t, drv)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		const jobs = 3000
		var now, started, peakAfter atomic.Int64
		var lowered atomic.Bool
		ws := lockstep.NewWorkers()
		lockstep.AddWorker(ws, lockstep.WorkFunc(func(context.Context, *lockstep.Job[quickArgs]) error {
			n := now.Add(1)
			started.Add(1)
			if lowered.Load() {
				for p := peakAfter.Load(); n > p && !peakAfter.CompareAndSwap(p, n); p = peakAfter.Load() {
				}
			}
			time.Sleep(200 * time.Microsecond) // the work: shorter than a claim
			now.Add(-1)
			return nil
		}))
		var biggest atomic.Int64
		c := quietClient(t, drv, lockstep.Config{
			Workers: ws, Queues: map[string]lockstep.QueueConfig{lockstep.DefaultQueue: {MaxWorkers: 8}},
			OnEvent: func(e lockstep.Event) {
				if e.Kind == lockstep.EventClaimed {
					for b := biggest.Load(); int64(e.Count) > b && !biggest.CompareAndSwap(b, int64(e.Count)); b = biggest.Load() {
					}
				}
			},
		})
		params := make([]lockstep.InsertManyParams, jobs)
		for i := range params {
			params[i] = lockstep.InsertManyParams{Args: quickArgs{}}
		}
		_, err := c.InsertMany(ctx, params)
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx))
		t.Cleanup(func() { _ = c.Stop(context.Background()) })
		eventually(t, time.Minute, "the queue saturated and claiming ahead", func() bool { return biggest.Load() > 8 })

		require.NoError(t, c.SetQueueMaxWorkers(ctx, lockstep.DefaultQueue, 2))
		c.WaitProducerTurn(t, lockstep.DefaultQueue)
		// Jobs handed to workers before that turn (at most the old cap,
		// 8) may still start after it; once they have, and no more than
		// 2 run, none starts unless fewer than 2 do.
		turn := started.Load()
		eventually(t, time.Minute, "the jobs handed over before the turn started, and at most 2 run",
			func() bool { return started.Load() >= turn+8 && now.Load() <= 2 })
		lowered.Store(true)
		base := started.Load()
		eventually(t, time.Minute, "jobs started under the lower cap", func() bool { return started.Load() > base+200 })
		require.LessOrEqual(t, peakAfter.Load(), int64(2), "jobs running at once after the cap went to 2")

		require.NoError(t, c.PauseQueue(ctx, lockstep.DefaultQueue))
		c.WaitProducerTurn(t, lockstep.DefaultQueue)
		// What was claimed runs and its DONEs are written with their
		// batch; nothing more is claimed.
		eventually(t, 30*time.Second, "no job RUNNING", func() bool { return countJobs(t, drv, "status", "RUNNING") == 0 })
		done := countJobs(t, drv, "status", "DONE")
		require.Equal(t, jobs, done+countJobs(t, drv, "status", "PENDING"))
		require.Equal(t, int64(done), started.Load(), "every job that started is DONE, once")
		require.Less(t, done, jobs, "the pause left jobs PENDING")
		require.NoError(t, c.Stop(ctx))
	})
}
