package lockstep_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
)

type histArgs struct{ Fail bool }

func (histArgs) Kind() string { return "hist" }

// sumHistory totals a queue's rollup rows since t.
func sumHistory(t *testing.T, c *lockstep.Client, since time.Time, queue string) lockstep.HistoryRow {
	t.Helper()
	rows, err := c.History(context.Background(), lockstep.HistoryParams{Since: since, Queue: queue})
	require.NoError(t, err)
	var tot lockstep.HistoryRow
	for _, r := range rows {
		tot.Add(r)
	}
	return tot
}

// TestHistoryFlushSumsAcrossClients: two clients (two processes) work one
// queue; each counts its own finishes and flushes them into the same
// rows; the rollup's sums are every job's outcome, once, after each Stop
// flushed the rest. A restarted client adds to what is there.
func TestHistoryFlushSumsAcrossClients(t *testing.T) {
	forEachDialectN(t, 2, func(t *testing.T, drvs []driver.Driver) {
		ctx := context.Background()
		since := time.Now().Add(-time.Minute)
		var attempts atomic.Int64
		newClient := func(drv driver.Driver) *lockstep.Client {
			ws := lockstep.NewWorkers()
			lockstep.AddWorker(ws, lockstep.WorkFunc(func(ctx context.Context, j *lockstep.Job[histArgs]) error {
				attempts.Add(1)
				if j.Args.Fail {
					return lockstep.Permanent(errors.New("no"))
				}
				return nil
			}))
			return quietClient(t, drv, lockstep.Config{
				Workers: ws, Queues: map[string]lockstep.QueueConfig{"h": {MaxWorkers: 4}},
				PollInterval: 20 * time.Millisecond, HistoryFlushInterval: 50 * time.Millisecond,
			})
		}
		const n = 40
		for round := range 2 {
			a, b := newClient(drvs[0]), newClient(drvs[1])
			params := make([]lockstep.InsertManyParams, n)
			for i := range params {
				params[i] = lockstep.InsertManyParams{Args: histArgs{Fail: i%4 == 0}, Opts: &lockstep.InsertOpts{Queue: "h"}}
			}
			_, err := a.InsertMany(ctx, params)
			require.NoError(t, err)
			require.NoError(t, a.Start(ctx))
			require.NoError(t, b.Start(ctx))
			want := int64((round + 1) * n)
			eventually(t, 20*time.Second, "every job finished", func() bool { return attempts.Load() >= want })
			require.NoError(t, a.Stop(ctx))
			require.NoError(t, b.Stop(ctx))
			tot := sumHistory(t, a, since, "h")
			require.Equal(t, fmt.Sprint(want*3/4, " ", want/4), fmt.Sprint(tot.Done, " ", tot.Failed), "round %d", round)
			require.Zero(t, tot.Retried)
		}
		none, err := newClient(drvs[0]).History(ctx, lockstep.HistoryParams{Since: since, Queue: "h", Kind: "other"})
		require.NoError(t, err)
		require.Empty(t, none)
	})
}

// TestHistoryCountsRetriesAndCancels: a failed attempt with attempts left
// counts as retried; a cancel through the client counts as cancelled.
func TestHistoryCountsRetriesAndCancels(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		since := time.Now().Add(-time.Minute)
		var calls atomic.Int64
		ws := lockstep.NewWorkers()
		lockstep.AddWorker(ws, lockstep.WorkFunc(func(ctx context.Context, j *lockstep.Job[histArgs]) error {
			if calls.Add(1) == 1 {
				return errors.New("once")
			}
			return nil
		}))
		c := quietClient(t, drv, lockstep.Config{
			Workers: ws, Queues: map[string]lockstep.QueueConfig{"r": {MaxWorkers: 1}}, PollInterval: 20 * time.Millisecond,
			RetryBackoff: func(int) time.Duration { return 0 },
		})
		_, err := c.Insert(ctx, histArgs{}, &lockstep.InsertOpts{Queue: "r"})
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx))
		eventually(t, 20*time.Second, "the retry ran", func() bool { return calls.Load() >= 2 })
		require.NoError(t, c.Stop(ctx))

		other := quietClient(t, drv, lockstep.Config{})
		res, err := other.Insert(ctx, histArgs{}, &lockstep.InsertOpts{Queue: "r"})
		require.NoError(t, err)
		ok, err := other.CancelJob(ctx, res.ID)
		require.NoError(t, err)
		require.True(t, ok)

		tot := sumHistory(t, c, since, "r")
		require.Equal(t, lockstep.HistoryRow{Done: 1, Retried: 1, Cancelled: 1, RunMillis: tot.RunMillis}, tot)
	})
}

// TestHistoryRetention: rows older than HistoryRetention go, in batches,
// and newer ones stay.
func TestHistoryRetention(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		old := time.Now().Add(-48 * time.Hour).Truncate(time.Minute)
		var rows []lockstep.HistoryRow
		for m := range 30 {
			for q := range 100 {
				rows = append(rows, lockstep.HistoryRow{Bucket: old.Add(time.Duration(m) * time.Minute), Queue: fmt.Sprint("q", q), Kind: "k", Done: 1})
			}
		}
		rows = append(rows, lockstep.HistoryRow{Bucket: time.Now().Truncate(time.Minute), Queue: "q0", Kind: "k", Done: 5})
		require.NoError(t, drv.Executor().HistoryAdd(ctx, rows))
		c := quietClient(t, drv, lockstep.Config{HistoryRetention: 24 * time.Hour})
		n, err := c.PruneHistory(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(3000), n)
		left, err := c.History(ctx, lockstep.HistoryParams{Since: old})
		require.NoError(t, err)
		require.Len(t, left, 1)
		require.Equal(t, int64(5), left[0].Done)
	})
}
