package drivertest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// testFeatures: unique inserts (alone, into a run, inside a transaction),
// metadata and output round trips, and queue settings, on the driver
// itself.
func testFeatures(t *testing.T, newDriver Factory) {
	ctx := context.Background()

	t.Run("UniqueInsert", func(t *testing.T) {
		drv := setup(t, newDriver)
		ex := drv.Executor()
		u := job("q", "k", 0)
		u.UniqueKey, u.UniqueStates = "key-1", driver.UniqueStateBit(rowtype.StatusPending)|driver.UniqueStateBit(rowtype.StatusRunning)
		u.Metadata = []byte(`{"by":"drivertest"}`)
		first, err := ex.JobInsertUnique(ctx, 0, u)
		require.NoError(t, err)
		require.False(t, first.Duplicate)
		again, err := ex.JobInsertUnique(ctx, 0, u)
		require.NoError(t, err)
		require.Equal(t, driver.UniqueInsertResult{ID: first.ID, Duplicate: true}, again)
		id, err := ex.JobIDByUniqueKey(ctx, "key-1")
		require.NoError(t, err)
		require.Equal(t, first.ID, id)
		j, err := ex.JobGet(ctx, first.ID)
		require.NoError(t, err)
		require.Equal(t, "key-1", j.UniqueKey)
		require.JSONEq(t, `{"by":"drivertest"}`, string(j.Metadata))

		// Inside a transaction, and into a run.
		run, err := ex.RunInsert(ctx, &driver.RunInsertParams{Name: "r"})
		require.NoError(t, err)
		tx, err := drv.Begin(ctx)
		require.NoError(t, err)
		u2 := u
		u2.UniqueKey = "key-2"
		inRun, err := tx.JobInsertUnique(ctx, run.ID, u2)
		require.NoError(t, err)
		require.False(t, inRun.Duplicate)
		dup, err := tx.JobInsertUnique(ctx, 0, u)
		require.NoError(t, err)
		require.Equal(t, driver.UniqueInsertResult{ID: first.ID, Duplicate: true}, dup)
		require.NoError(t, tx.Commit())
		j, err = ex.JobGet(ctx, inRun.ID)
		require.NoError(t, err)
		require.Equal(t, run.ID, j.RunID)

		// Finished (DONE is not among its statuses): the key is free.
		claimed, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "q", Max: 10})
		require.NoError(t, err)
		for _, c := range claimed {
			if c.ID == first.ID {
				ok, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: c.ID, Attempt: c.Attempts, Status: rowtype.StatusDone, Output: []byte(`{"rows":3}`)})
				require.NoError(t, err)
				require.True(t, ok)
			}
		}
		id, err = ex.JobIDByUniqueKey(ctx, "key-1")
		require.NoError(t, err)
		require.Zero(t, id)
		j, err = ex.JobGet(ctx, first.ID)
		require.NoError(t, err)
		require.JSONEq(t, `{"rows":3}`, string(j.Output))
		next, err := ex.JobInsertUnique(ctx, 0, u)
		require.NoError(t, err)
		require.False(t, next.Duplicate)

		// Plain inserts carry metadata too.
		p := job("q", "k", 0)
		p.Metadata = []byte(`[1,2]`)
		ids, err := ex.JobInsertMany(ctx, []driver.JobInsertParams{p, job("q", "k", 0)})
		require.NoError(t, err)
		j, err = ex.JobGet(ctx, ids[0])
		require.NoError(t, err)
		require.JSONEq(t, `[1,2]`, string(j.Metadata))
		j, err = ex.JobGet(ctx, ids[1])
		require.NoError(t, err)
		require.Nil(t, j.Metadata)
	})

	t.Run("QueueSettings", func(t *testing.T) {
		ex := setup(t, newDriver).Executor()
		got, err := ex.QueueSettings(ctx)
		require.NoError(t, err)
		require.Empty(t, got)
		require.NoError(t, ex.QueuePause(ctx, "b", true))
		require.NoError(t, ex.QueueSetMaxWorkers(ctx, "a", 7))
		got, err = ex.QueueSettings(ctx)
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.Equal(t, "a", got[0].Queue)
		require.Equal(t, 7, got[0].MaxWorkers)
		require.True(t, got[0].Paused.IsZero())
		require.Equal(t, "b", got[1].Queue)
		require.False(t, got[1].Paused.IsZero())
		pausedAt := got[1].Paused
		// Pausing again keeps the first pause time.
		require.NoError(t, ex.QueuePause(ctx, "b", true))
		require.NoError(t, ex.QueueSetMaxWorkers(ctx, "b", 2))
		got, err = ex.QueueSettings(ctx)
		require.NoError(t, err)
		require.Equal(t, pausedAt, got[1].Paused)
		require.Equal(t, 2, got[1].MaxWorkers)
		require.NoError(t, ex.QueuePause(ctx, "b", false))
		require.NoError(t, ex.QueueSetMaxWorkers(ctx, "a", 0))
		got, err = ex.QueueSettings(ctx)
		require.NoError(t, err)
		require.True(t, got[1].Paused.IsZero())
		require.Zero(t, got[0].MaxWorkers)

		// A queue's row removed: gone from the settings, once.
		removed, err := ex.QueueDelete(ctx, "a")
		require.NoError(t, err)
		require.True(t, removed)
		removed, err = ex.QueueDelete(ctx, "a")
		require.NoError(t, err)
		require.False(t, removed)
		got, err = ex.QueueSettings(ctx)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, "b", got[0].Queue)
	})
}
