package lockstep_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

type bulkArgs struct{}

func (bulkArgs) Kind() string { return "bulk" }

type otherBulkArgs struct{}

func (otherBulkArgs) Kind() string { return "bulk-other" }

// TestBulkActions: on each database, the preview counts what the action
// would select; retry-all-FAILED of one kind retries exactly those, in
// batches, and leaves the other kind's; cancel of selected ids cancels the
// live ones among them and skips the rest; delete removes only final jobs,
// never one cancelled while its worker runs it; a run's cancelled jobs are
// not brought back; bad input is refused in the user's words.
func TestBulkActions(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		ex := drv.Executor()
		c := quietClient(t, drv, lockstep.Config{})

		// 1,200 jobs of kind bulk and 30 of kind bulk-other, all FAILED.
		var params []lockstep.InsertManyParams
		for range 1200 {
			params = append(params, lockstep.InsertManyParams{Args: bulkArgs{}})
		}
		for range 30 {
			params = append(params, lockstep.InsertManyParams{Args: otherBulkArgs{}})
		}
		res, err := c.InsertMany(ctx, params)
		require.NoError(t, err)
		ids := insertedIDs(res)
		failAll(t, ex, len(ids))

		retryBulk := lockstep.JobFilter{Kind: "bulk", Status: rowtype.StatusFailed}
		n, err := c.BulkCount(ctx, lockstep.BulkRetry, retryBulk)
		require.NoError(t, err)
		require.EqualValues(t, 1200, n, "preview")
		n, err = c.BulkCount(ctx, lockstep.BulkCancel, lockstep.JobFilter{Kind: "bulk"})
		require.NoError(t, err)
		require.Zero(t, n, "nothing is live to cancel")

		// A preview within a budget reads the newest window first, then
		// stops once the next would pass the budget (a nanosecond: after
		// one window), and says so; without one it reads every window.
		// Delete's statuses include DONE, so every dialect reads windows.
		lo, hi := ids[0], ids[len(ids)-1]
		var newest int64
		for _, id := range ids[:1200] {
			if id > hi-100 {
				newest++
			}
		}
		del := lockstep.BulkPreviewParams{Action: lockstep.BulkDelete, Filter: lockstep.JobFilter{Kind: "bulk"}, Window: 100, Budget: time.Nanosecond}
		pre, err := c.BulkPreview(ctx, del)
		require.NoError(t, err)
		require.Equal(t, lockstep.BulkPreviewResult{Jobs: newest, IDsRead: 100, IDsTotal: hi - lo + 1}, pre)
		del.Budget = 0
		pre, err = c.BulkPreview(ctx, del)
		require.NoError(t, err)
		require.Equal(t, lockstep.BulkPreviewResult{Jobs: 1200, Exact: true, IDsRead: hi - lo + 1, IDsTotal: hi - lo + 1}, pre)
		del.Budget = -time.Second
		_, err = c.BulkPreview(ctx, del)
		require.ErrorContains(t, err, "must not be negative")

		var progress []lockstep.BulkProgress
		total, err := c.Bulk(ctx, lockstep.BulkParams{Action: lockstep.BulkRetry, Filter: retryBulk, BatchSize: 500,
			Progress: func(p lockstep.BulkProgress) { progress = append(progress, p) }})
		require.NoError(t, err)
		require.Equal(t, lockstep.BulkResult{Matched: 1200, Changed: 1200, Batches: 3}, total)
		require.Len(t, progress, 3)
		require.Equal(t, 1200, progress[2].Changed)
		require.Equal(t, 1200, countJobs(t, drv, "status", "PENDING"))
		require.Equal(t, 30, countJobs(t, drv, "status", "FAILED"), "the other kind's stay FAILED")

		// Selected ids: the first five of kind bulk (PENDING now) and one
		// of the other kind (FAILED: cancel skips it).
		sel := append(append([]int64{}, ids[:5]...), ids[1200])
		total, err = c.Bulk(ctx, lockstep.BulkParams{Action: lockstep.BulkCancel, IDs: sel})
		require.NoError(t, err)
		require.Equal(t, lockstep.BulkResult{Matched: 6, Changed: 5, Skipped: 1, Batches: 1}, total)
		for _, id := range ids[:5] {
			require.Equal(t, rowtype.StatusCancelled, jobStatus(t, drv, id))
		}

		// A RUNNING job cancelled: CANCELLED, its worker not told yet, so
		// a delete must leave it.
		claimed, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: lockstep.DefaultQueue, Max: 1})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		running := claimed[0].ID
		ok, err := c.CancelJob(ctx, running)
		require.NoError(t, err)
		require.True(t, ok)

		total, err = c.Bulk(ctx, lockstep.BulkParams{Action: lockstep.BulkDelete, Filter: lockstep.JobFilter{Status: rowtype.StatusCancelled}})
		require.NoError(t, err)
		require.Equal(t, 5, total.Changed, "the five cancelled while PENDING")
		_, err = ex.JobGet(ctx, ids[0])
		require.ErrorIs(t, err, rowtype.ErrNotFound)
		require.Equal(t, rowtype.StatusCancelled, jobStatus(t, drv, running), "cancelled while running: kept until its worker stops")

		// Delete by finish time: none finished in the future.
		total, err = c.Bulk(ctx, lockstep.BulkParams{Action: lockstep.BulkDelete, Filter: lockstep.JobFilter{Status: rowtype.StatusFailed, FinishedAfter: time.Now().Add(time.Hour)}})
		require.NoError(t, err)
		require.Zero(t, total.Matched)
		total, err = c.Bulk(ctx, lockstep.BulkParams{Action: lockstep.BulkDelete, Filter: lockstep.JobFilter{Kind: "bulk-other", FinishedAfter: time.Now().Add(-time.Hour)}})
		require.NoError(t, err)
		require.Equal(t, 30, total.Changed)
		require.Zero(t, countJobs(t, drv, "kind", "bulk-other"))

		// Bad input: the user's words.
		_, err = c.Bulk(ctx, lockstep.BulkParams{Action: "requeue"})
		require.EqualError(t, err, `unknown bulk action "requeue": use retry, cancel or delete`)
		_, err = c.Bulk(ctx, lockstep.BulkParams{Action: lockstep.BulkRetry, Filter: lockstep.JobFilter{Status: rowtype.StatusDone}})
		require.ErrorContains(t, err, "retry applies to FAILED jobs, not DONE")
		_, err = c.Bulk(ctx, lockstep.BulkParams{Action: lockstep.BulkRetry, BatchSize: -1})
		require.ErrorContains(t, err, "a batch is 1 to 5000 jobs, got -1")
	})
}

// TestBulkRetryKeepsCancelledRuns: a bulk retry never brings back a
// FAILED job of a cancelled run (its run row, locked shared first, says
// CANCELLED), and retries the one of a live run.
func TestBulkRetryKeepsCancelledRuns(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		ex := drv.Executor()
		c := quietClient(t, drv, lockstep.Config{})
		// Two runs of two jobs, every job RUNNING; the first of each
		// FAILED, the other still running, so both runs are live.
		var runs []int64
		for range 2 {
			run, _, err := c.InsertRun(ctx, "bulk", nil, lockstep.InsertManyParams{Args: bulkArgs{}}, lockstep.InsertManyParams{Args: bulkArgs{}})
			require.NoError(t, err)
			runs = append(runs, run.ID)
		}
		claimed, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: lockstep.DefaultQueue, Max: 4})
		require.NoError(t, err)
		require.Len(t, claimed, 4)
		var failed []int64
		for _, j := range claimed {
			if j.ID == claimed[0].ID || j.ID == claimed[2].ID {
				_, err = ex.JobFinish(ctx, &driver.JobFinishParams{ID: j.ID, Attempt: 1, Status: rowtype.StatusFailed, Error: "boom", RunID: j.RunID})
				require.NoError(t, err)
				failed = append(failed, j.ID)
			}
		}
		require.Equal(t, runs[0], claimed[0].RunID)
		require.Equal(t, runs[1], claimed[2].RunID)
		_, err = c.CancelRun(ctx, runs[0])
		require.NoError(t, err)
		total, err := c.Bulk(ctx, lockstep.BulkParams{Action: lockstep.BulkRetry, IDs: failed})
		require.NoError(t, err)
		require.Equal(t, lockstep.BulkResult{Matched: 2, Changed: 1, Skipped: 1, Batches: 1}, total)
		require.Equal(t, rowtype.StatusFailed, jobStatus(t, drv, failed[0]), "its run is cancelled")
		require.Equal(t, rowtype.StatusPending, jobStatus(t, drv, failed[1]))
	})
}

// failAll claims n jobs of the default queue and finishes them FAILED.
func failAll(t *testing.T, ex driver.Executor, n int) {
	t.Helper()
	ctx := context.Background()
	for n > 0 {
		claimed, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: lockstep.DefaultQueue, Max: min(n, 100)})
		require.NoError(t, err)
		require.NotEmpty(t, claimed)
		for _, j := range claimed {
			_, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: j.ID, Attempt: j.Attempts, Status: rowtype.StatusFailed, Error: "boom"})
			require.NoError(t, err)
		}
		n -= len(claimed)
	}
}
