package drivertest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// testPrune: retention deletes old jobs of one queue and one final status,
// at most Max at a time, each batch in ascending id order; never a job of
// another status or queue, nor a young one, nor a PENDING or RUNNING job.
func testPrune(t *testing.T, newDriver Factory) {
	ctx := context.Background()
	ex := setup(t, newDriver).Executor()
	insert := func(queue string, n int) []int64 {
		in := make([]driver.JobInsertParams, n)
		for i := range in {
			in[i] = job(queue, "k", 0)
		}
		ids, err := ex.JobInsertMany(ctx, in)
		require.NoError(t, err)
		return ids
	}
	claim := func(queue string, n int) []*rowtype.JobRow {
		got, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: queue, Max: n})
		require.NoError(t, err)
		require.Len(t, got, n)
		slices.SortFunc(got, func(a, b *rowtype.JobRow) int { return int(a.ID - b.ID) })
		return got
	}
	done := func(jobs []*rowtype.JobRow) []int64 {
		refs := make([]driver.JobRef, len(jobs))
		ids := make([]int64, len(jobs))
		for i, j := range jobs {
			refs[i], ids[i] = driver.JobRef{ID: j.ID, Attempt: j.Attempts}, j.ID
		}
		written, err := ex.JobCompleteMany(ctx, refs)
		require.NoError(t, err)
		require.Len(t, written, len(refs))
		return ids
	}

	insert("q", 7)
	claimed := claim("q", 7)
	doneIDs := done(claimed[:5])
	failed := claimed[5]
	ok, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: failed.ID, Attempt: failed.Attempts, Status: rowtype.StatusFailed, Error: "boom"})
	require.NoError(t, err)
	require.True(t, ok)
	running := claimed[6]
	pending := insert("q", 2)
	insert("other", 2)
	otherDone := done(claim("other", 2))

	// Young jobs stay.
	got, err := ex.JobPrune(ctx, &driver.JobPruneParams{Queue: "q", Status: rowtype.StatusDone, OlderThan: time.Hour, Max: 10})
	require.NoError(t, err)
	require.Empty(t, got)

	// Old DONE jobs of q go, two at a time, each batch ascending.
	var all []int64
	for {
		got, err := ex.JobPrune(ctx, &driver.JobPruneParams{Queue: "q", Status: rowtype.StatusDone, OlderThan: -time.Hour, Max: 2})
		require.NoError(t, err)
		if len(got) == 0 {
			break
		}
		require.LessOrEqual(t, len(got), 2)
		require.True(t, slices.IsSorted(got), "deleted in ascending id order: %v", got)
		all = append(all, got...)
	}
	slices.Sort(all)
	require.Equal(t, doneIDs, all)

	got, err = ex.JobPrune(ctx, &driver.JobPruneParams{Queue: "q", Status: rowtype.StatusFailed, OlderThan: -time.Hour})
	require.NoError(t, err)
	require.Equal(t, []int64{failed.ID}, got)

	for _, st := range []rowtype.JobStatus{rowtype.StatusPending, rowtype.StatusRunning, "NONSENSE"} {
		_, err = ex.JobPrune(ctx, &driver.JobPruneParams{Queue: "q", Status: st, OlderThan: -time.Hour})
		require.ErrorContains(t, err, "is not a final status")
	}

	for _, id := range doneIDs {
		_, err := ex.JobGet(ctx, id)
		require.ErrorIs(t, err, rowtype.ErrNotFound)
	}
	j, err := ex.JobGet(ctx, running.ID)
	require.NoError(t, err)
	require.Equal(t, rowtype.StatusRunning, j.Status)
	for _, id := range append(pending, otherDone...) {
		_, err := ex.JobGet(ctx, id)
		require.NoError(t, err, "job %d of another status or queue stays", id)
	}
}
