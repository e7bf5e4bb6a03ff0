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
