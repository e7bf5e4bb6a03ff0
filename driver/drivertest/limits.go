package drivertest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// keyed is a job of queue "lim" with a limit key.
func keyed(key string) driver.JobInsertParams {
	j := job("lim", "k", 0)
	j.LimitKey = key
	return j
}

// claimLimited claims from "lim" under the queue's limits.
func claimLimited(t *testing.T, ex driver.Executor, max int) *driver.LimitedClaim {
	t.Helper()
	res, err := ex.JobClaimLimited(context.Background(), &driver.JobClaimParams{Queue: "lim", Max: max, Grace: time.Hour})
	require.NoError(t, err)
	return res
}

func ids(jobs []*rowtype.JobRow) []int64 {
	out := make([]int64, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func statusOf(t *testing.T, ex driver.Executor, id int64) rowtype.JobStatus {
	t.Helper()
	j, err := ex.JobGet(context.Background(), id)
	require.NoError(t, err)
	return j.Status
}

func done(t *testing.T, ex driver.Executor, j *rowtype.JobRow) {
	t.Helper()
	ok, err := ex.JobFinish(context.Background(), &driver.JobFinishParams{ID: j.ID, Attempt: j.Attempts, Status: rowtype.StatusDone, Queue: j.Queue, LimitKey: j.LimitKey})
	require.NoError(t, err)
	require.True(t, ok)
}

func testLimits(t *testing.T, newDriver Factory) {
	ctx := context.Background()

	t.Run("SettingsRoundTrip", func(t *testing.T) {
		ex := setup(t, newDriver).Executor()
		want := rowtype.QueueLimits{Concurrency: 5, KeyConcurrency: 2, Sequence: rowtype.SequenceHold, Rate: 100, RatePeriod: time.Second, RateByKey: true}
		require.NoError(t, ex.QueueSetLimits(ctx, "lim", want))
		list, err := ex.QueueSettings(ctx)
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, want, list[0].Limits)
		require.NoError(t, ex.QueueSetLimits(ctx, "lim", rowtype.QueueLimits{}))
		list, err = ex.QueueSettings(ctx)
		require.NoError(t, err)
		require.Equal(t, rowtype.QueueLimits{}, list[0].Limits)
	})

	t.Run("KeyConcurrencyBlocksAndReleases", func(t *testing.T) {
		ex := setup(t, newDriver).Executor()
		require.NoError(t, ex.QueueSetLimits(ctx, "lim", rowtype.QueueLimits{KeyConcurrency: 1}))
		in, err := ex.JobInsertMany(ctx, []driver.JobInsertParams{keyed("a"), keyed("a"), keyed("a"), keyed("b"), job("lim", "k", 0)})
		require.NoError(t, err)
		// The first claim meets keys without rows: it leaves their jobs
		// PENDING, takes the unkeyed one, and creates the rows after.
		first := claimLimited(t, ex, 10)
		require.Equal(t, []int64{in[4]}, ids(first.Jobs))
		require.Equal(t, 4, first.Skipped)
		second := claimLimited(t, ex, 10)
		require.Equal(t, []int64{in[0], in[3]}, ids(second.Jobs))
		require.Equal(t, 2, second.Blocked)
		require.Equal(t, rowtype.StatusBlocked, statusOf(t, ex, in[1]))
		require.Equal(t, rowtype.StatusBlocked, statusOf(t, ex, in[2]))
		// Nothing to claim while "a" runs.
		require.Empty(t, claimLimited(t, ex, 10).Jobs)
		// Its end releases one blocked job of its key, in id order.
		done(t, ex, second.Jobs[0])
		require.Equal(t, rowtype.StatusPending, statusOf(t, ex, in[1]))
		require.Equal(t, rowtype.StatusBlocked, statusOf(t, ex, in[2]))
		require.Equal(t, []int64{in[1]}, ids(claimLimited(t, ex, 10).Jobs))
	})

	t.Run("ConcurrencyIsFull", func(t *testing.T) {
		ex := setup(t, newDriver).Executor()
		require.NoError(t, ex.QueueSetLimits(ctx, "lim", rowtype.QueueLimits{Concurrency: 2}))
		_, err := ex.JobInsertMany(ctx, []driver.JobInsertParams{job("lim", "k", 0), job("lim", "k", 0), job("lim", "k", 0)})
		require.NoError(t, err)
		got := claimLimited(t, ex, 10)
		require.Len(t, got.Jobs, 2)
		again := claimLimited(t, ex, 10)
		require.True(t, again.Full)
		require.Empty(t, again.Jobs)
		// A retried job leaves RUNNING: its slot is free at once.
		ok, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: got.Jobs[0].ID, Attempt: 1, Status: rowtype.StatusPending, Error: "again"})
		require.NoError(t, err)
		require.True(t, ok)
		require.Len(t, claimLimited(t, ex, 10).Jobs, 1)
	})

	t.Run("CancelledWhileRunningKeepsSlot", func(t *testing.T) {
		ex := setup(t, newDriver).Executor()
		require.NoError(t, ex.QueueSetLimits(ctx, "lim", rowtype.QueueLimits{Concurrency: 1}))
		in, err := ex.JobInsertMany(ctx, []driver.JobInsertParams{job("lim", "k", 0), job("lim", "k", 0)})
		require.NoError(t, err)
		got := claimLimited(t, ex, 10)
		require.Equal(t, []int64{in[0]}, ids(got.Jobs))
		ok, err := ex.JobCancel(ctx, in[0])
		require.NoError(t, err)
		require.True(t, ok)
		// Its worker may still be running it: the slot stays taken, and
		// the job has no finish time yet.
		require.True(t, claimLimited(t, ex, 10).Full)
		j, err := ex.JobGet(ctx, in[0])
		require.NoError(t, err)
		require.Equal(t, rowtype.StatusCancelled, j.Status)
		require.True(t, j.FinishedAt.IsZero())
		// The worker says it stopped: the slot is free, the finish time set.
		require.NoError(t, ex.JobRelease(ctx, driver.JobRef{ID: in[0], Attempt: 1, Queue: "lim"}))
		j, err = ex.JobGet(ctx, in[0])
		require.NoError(t, err)
		require.False(t, j.FinishedAt.IsZero())
		require.Equal(t, []int64{in[1]}, ids(claimLimited(t, ex, 10).Jobs))
	})

	t.Run("SequenceHoldAndRelease", func(t *testing.T) {
		for _, policy := range []rowtype.SequencePolicy{rowtype.SequenceHold, rowtype.SequenceRelease} {
			t.Run(policy.String(), func(t *testing.T) {
				ex := setup(t, newDriver).Executor()
				require.NoError(t, ex.QueueSetLimits(ctx, "lim", rowtype.QueueLimits{Sequence: policy}))
				in, err := ex.JobInsertMany(ctx, []driver.JobInsertParams{keyed("s"), keyed("s"), keyed("s")})
				require.NoError(t, err)
				claimLimited(t, ex, 10) // creates the key's row
				got := claimLimited(t, ex, 10)
				require.Equal(t, []int64{in[0]}, ids(got.Jobs), "one at a time, the first first")
				require.Equal(t, rowtype.StatusBlocked, statusOf(t, ex, in[1]))
				ok, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: in[0], Attempt: 1, Status: rowtype.StatusFailed, Error: "no", Queue: "lim", LimitKey: "s"})
				require.NoError(t, err)
				require.True(t, ok)
				next := claimLimited(t, ex, 10)
				if policy == rowtype.SequenceHold {
					require.Empty(t, next.Jobs, "the failed job holds its sequence")
					require.Equal(t, rowtype.StatusBlocked, statusOf(t, ex, in[1]))
					// Retried, it is the sequence's head again.
					ok, err := ex.JobRetry(ctx, in[0])
					require.NoError(t, err)
					require.True(t, ok)
					require.Equal(t, []int64{in[0]}, ids(claimLimited(t, ex, 10).Jobs))
					return
				}
				require.Equal(t, []int64{in[1]}, ids(next.Jobs))
				require.Equal(t, rowtype.StatusBlocked, statusOf(t, ex, in[2]))
			})
		}
	})

	t.Run("RateWindow", func(t *testing.T) {
		ex := setup(t, newDriver).Executor()
		require.NoError(t, ex.QueueSetLimits(ctx, "lim", rowtype.QueueLimits{Rate: 2, RatePeriod: time.Hour}))
		_, err := ex.JobInsertMany(ctx, []driver.JobInsertParams{job("lim", "k", 0), job("lim", "k", 0), job("lim", "k", 0)})
		require.NoError(t, err)
		got := claimLimited(t, ex, 10)
		require.Len(t, got.Jobs, 2)
		spent := claimLimited(t, ex, 10)
		require.Empty(t, spent.Jobs)
		// The window frees a start an hour after the first one.
		require.WithinDuration(t, got.Jobs[0].StartedAt.Add(time.Hour), spent.RetryAt, time.Second)
	})

	t.Run("RateByKeyDefers", func(t *testing.T) {
		ex := setup(t, newDriver).Executor()
		require.NoError(t, ex.QueueSetLimits(ctx, "lim", rowtype.QueueLimits{Rate: 1, RatePeriod: time.Hour, RateByKey: true}))
		in, err := ex.JobInsertMany(ctx, []driver.JobInsertParams{keyed("a"), keyed("a"), keyed("b")})
		require.NoError(t, err)
		claimLimited(t, ex, 10) // creates the keys' rows
		got := claimLimited(t, ex, 10)
		require.Equal(t, []int64{in[0], in[2]}, ids(got.Jobs))
		require.Equal(t, 1, got.Deferred)
		j, err := ex.JobGet(ctx, in[1])
		require.NoError(t, err)
		require.Equal(t, rowtype.StatusPending, j.Status)
		require.WithinDuration(t, got.Jobs[0].StartedAt.Add(time.Hour), j.AvailableAt, time.Second)
	})

	t.Run("ReapAndSweepRelease", func(t *testing.T) {
		ex := setup(t, newDriver).Executor()
		require.NoError(t, ex.QueueSetLimits(ctx, "lim", rowtype.QueueLimits{KeyConcurrency: 1}))
		in, err := ex.JobInsertMany(ctx, []driver.JobInsertParams{keyed("a"), keyed("a"), keyed("a")})
		require.NoError(t, err)
		claimLimited(t, ex, 10)
		got := claimLimited(t, ex, 10)
		require.Equal(t, []int64{in[0]}, ids(got.Jobs))
		// The reaper returns the job of a dead worker: its key's next
		// blocked job is released with it.
		// (A negative limit makes any heartbeat stale, whatever the clock's
		// precision.)
		reaped, err := ex.JobReap(ctx, &driver.JobReapParams{StaleAfter: -time.Second, Max: 10})
		require.NoError(t, err)
		require.Len(t, reaped, 1)
		require.Equal(t, rowtype.StatusPending, statusOf(t, ex, in[1]))
		// A finish that could not say its key (as after a crash between
		// its commit and its release) leaves the blocked job to the sweep.
		next := claimLimited(t, ex, 10)
		require.Len(t, next.Jobs, 1)
		ok, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: next.Jobs[0].ID, Attempt: next.Jobs[0].Attempts, Status: rowtype.StatusDone})
		require.NoError(t, err)
		require.True(t, ok)
		blocked := 0
		for _, id := range in {
			if statusOf(t, ex, id) == rowtype.StatusBlocked {
				blocked++
			}
		}
		// The reaped job, PENDING again, ran first; the released one was
		// blocked again behind it.
		require.Equal(t, 2, blocked)
		n, err := ex.LimitSweep(ctx, "lim")
		require.NoError(t, err)
		require.Equal(t, 1, n)
	})
}
