package lockstep_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

type keepArgs struct{}

func (keepArgs) Kind() string { return "keep" }

// TestRetention: on each database, retention deletes DONE and CANCELLED
// jobs older than their age, in batches (2,500 DONE jobs take three), and
// keeps FAILED jobs younger than theirs, and every PENDING and RUNNING job;
// the client's own loop does the same unasked.
func TestRetention(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		ex := drv.Executor()
		c, err := lockstep.NewClient(drv, lockstep.Config{
			Logger:     slog.New(slog.DiscardHandler),
			RetainDone: time.Nanosecond, RetainCancelled: time.Nanosecond, RetainFailed: time.Hour,
		})
		require.NoError(t, err)

		const n = 2500
		params := make([]lockstep.InsertManyParams, n+4)
		for i := range params {
			params[i] = lockstep.InsertManyParams{Args: keepArgs{}}
		}
		idsRes, err := c.InsertMany(ctx, params)
		require.NoError(t, err)
		ids := insertedIDs(idsRes)
		claimed, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: lockstep.DefaultQueue, Max: n + 2})
		require.NoError(t, err)
		require.Len(t, claimed, n+2)
		refs := make([]driver.JobRef, 0, n)
		var failed, running int64
		for _, j := range claimed {
			switch {
			case failed == 0:
				failed = j.ID
				_, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: j.ID, Attempt: j.Attempts, Status: rowtype.StatusFailed, Error: "kept for a post-mortem"})
				require.NoError(t, err)
			case running == 0:
				running = j.ID
			default:
				refs = append(refs, driver.JobRef{ID: j.ID, Attempt: j.Attempts})
			}
		}
		written, err := ex.JobCompleteMany(ctx, refs)
		require.NoError(t, err)
		require.Len(t, written, n)
		pendingID, cancelledID := ids[n+2], ids[n+3]
		ok, err := c.CancelJob(ctx, cancelledID)
		require.NoError(t, err)
		require.True(t, ok)

		deleted, err := c.Prune(ctx)
		require.NoError(t, err)
		require.Equal(t, n+1, deleted, "every DONE job and the CANCELLED one")
		for _, id := range []int64{failed, running, pendingID} {
			j, err := c.Job(ctx, id)
			require.NoError(t, err, "job %d is kept", id)
			require.Contains(t, []lockstep.JobStatus{lockstep.StatusFailed, lockstep.StatusRunning, lockstep.StatusPending}, j.Status)
		}
		_, err = c.Job(ctx, cancelledID)
		require.ErrorIs(t, err, lockstep.ErrNotFound)
		deleted, err = c.Prune(ctx)
		require.NoError(t, err)
		require.Zero(t, deleted)

		// The client's loop: a FAILED job past its (now tiny) age goes,
		// unasked; RUNNING and PENDING stay.
		loop, err := lockstep.NewClient(drv, lockstep.Config{
			Logger:       slog.New(slog.DiscardHandler),
			RetainFailed: time.Nanosecond, RetentionInterval: 20 * time.Millisecond,
		})
		require.NoError(t, err)
		require.NoError(t, loop.Start(ctx))
		defer func() { _ = loop.Stop(ctx) }()
		eventually(t, 30*time.Second, "retention to delete the FAILED job", func() bool {
			_, err := c.Job(ctx, failed)
			return err != nil
		})
		require.NoError(t, loop.Stop(ctx))
		for _, id := range []int64{running, pendingID} {
			_, err := c.Job(ctx, id)
			require.NoError(t, err, "job %d is kept", id)
		}
	})
}
