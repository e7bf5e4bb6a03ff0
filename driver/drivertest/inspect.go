package drivertest

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/migrate"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// testInspect covers the bounded reads of the CLI and the dashboard, and
// the retry of a FAILED job.
func testInspect(t *testing.T, newDriver Factory) {
	ctx := context.Background()

	t.Run("JobPageNewestFirstBoundedWindow", func(t *testing.T) {
		ex := setup(t, newDriver).Executor()
		in := make([]driver.JobInsertParams, 30)
		for i := range in {
			in[i] = job("q", "k", 0)
			if i%10 == 3 {
				in[i] = job("rare", "r", 0)
			}
		}
		ids, err := ex.JobInsertMany(ctx, in)
		require.NoError(t, err)

		page, err := ex.JobPage(ctx, &rowtype.JobPageParams{Limit: 12})
		require.NoError(t, err)
		require.Len(t, page.Jobs, 12)
		for i, j := range page.Jobs {
			require.Equal(t, ids[29-i], j.ID, "newest first")
		}
		require.Equal(t, ids[18], page.Next)
		var seen []int64
		for before := int64(0); ; {
			p, err := ex.JobPage(ctx, &rowtype.JobPageParams{BeforeID: before, Limit: 7})
			require.NoError(t, err)
			for _, j := range p.Jobs {
				seen = append(seen, j.ID)
			}
			if p.Next == 0 {
				break
			}
			before = p.Next
		}
		require.Len(t, seen, 30, "paging visits every job once")

		// A filter matching few rows examines Window ids, then hands back a
		// cursor at the window's floor instead of scanning on.
		p, err := ex.JobPage(ctx, &rowtype.JobPageParams{Queue: "rare", Window: 10, Limit: 50})
		require.NoError(t, err)
		require.Equal(t, 10, p.Examined)
		require.Len(t, p.Jobs, 1)
		require.Equal(t, ids[23], p.Jobs[0].ID)
		require.Equal(t, ids[20], p.Next)
		p, err = ex.JobPage(ctx, &rowtype.JobPageParams{Queue: "rare", Kind: "r", Status: rowtype.StatusPending, Window: 100})
		require.NoError(t, err)
		require.Len(t, p.Jobs, 3)
		require.Zero(t, p.Next, "the window reached the oldest job")
		p, err = ex.JobPage(ctx, &rowtype.JobPageParams{Status: rowtype.StatusDone})
		require.NoError(t, err)
		require.Empty(t, p.Jobs)
	})

	t.Run("JobPageByRun", func(t *testing.T) {
		ex := setup(t, newDriver).Executor()
		run, err := ex.RunInsert(ctx, &driver.RunInsertParams{Name: "r"})
		require.NoError(t, err)
		_, err = ex.JobInsertMany(ctx, []driver.JobInsertParams{job("q", "k", 0), job("q", "k", 0)})
		require.NoError(t, err)
		inRun, err := ex.JobInsertIntoRun(ctx, run.ID, []driver.JobInsertParams{job("q", "k", 0), job("q", "k", 0), job("q", "k", 0)})
		require.NoError(t, err)
		p, err := ex.JobPage(ctx, &rowtype.JobPageParams{RunID: run.ID, Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []int64{inRun[2], inRun[1]}, pageIDs(p))
		p, err = ex.JobPage(ctx, &rowtype.JobPageParams{RunID: run.ID, BeforeID: p.Next})
		require.NoError(t, err)
		require.Equal(t, []int64{inRun[0]}, pageIDs(p))
		require.Zero(t, p.Next)
	})

	t.Run("RunListAndBoundedCounts", func(t *testing.T) {
		ex := setup(t, newDriver).Executor()
		var runs []*rowtype.RunRow
		for _, name := range []string{"a", "b", "c"} {
			r, err := ex.RunInsert(ctx, &driver.RunInsertParams{Name: name})
			require.NoError(t, err)
			runs = append(runs, r)
		}
		got, err := ex.RunList(ctx, &rowtype.RunListParams{Limit: 2})
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.Equal(t, "c", got[0].Name)
		require.Equal(t, "b", got[1].Name)
		got, err = ex.RunList(ctx, &rowtype.RunListParams{BeforeID: got[1].ID})
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, runs[0].ID, got[0].ID)

		_, err = ex.JobInsertIntoRun(ctx, runs[0].ID, []driver.JobInsertParams{job("q", "k", 0), job("q", "k", 0), job("q", "k", 0), job("q", "k", 0)})
		require.NoError(t, err)
		c := claimOne(t, ex)
		ok, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: c.ID, Attempt: 1, Status: rowtype.StatusDone})
		require.NoError(t, err)
		require.True(t, ok)
		full, err := ex.RunCountsBounded(ctx, &rowtype.RunCountsBoundedParams{RunID: runs[0].ID})
		require.NoError(t, err)
		require.Equal(t, rowtype.BoundedRunCounts{Counts: rowtype.RunCounts{rowtype.StatusDone: 1, rowtype.StatusPending: 3}}, *full)
		capped, err := ex.RunCountsBounded(ctx, &rowtype.RunCountsBoundedParams{RunID: runs[0].ID, Limit: 2})
		require.NoError(t, err)
		require.True(t, capped.Capped)
		require.Equal(t, rowtype.RunCounts{rowtype.StatusDone: 1, rowtype.StatusPending: 1}, capped.Counts, "the first two jobs by id")
		exact, err := ex.RunCountsBounded(ctx, &rowtype.RunCountsBoundedParams{RunID: runs[0].ID, Limit: 4})
		require.NoError(t, err)
		require.False(t, exact.Capped, "a run of exactly the limit is counted whole")
		require.Equal(t, full.Counts, exact.Counts)
	})

	t.Run("QueueListAndStats", func(t *testing.T) {
		ex := setup(t, newDriver).Executor()
		queues, err := ex.QueueList(ctx, &rowtype.QueueListParams{})
		require.NoError(t, err)
		require.Empty(t, queues)
		later := job("b", "k", 0)
		later.ScheduledAt = time.Now().Add(time.Hour)
		_, err = ex.JobInsertMany(ctx, []driver.JobInsertParams{
			job("c", "k", 0), job("b", "k", 0), job("b", "k", 0), job("b", "k", 0), job("a", "k", 0), later,
		})
		require.NoError(t, err)
		queues, err = ex.QueueList(ctx, &rowtype.QueueListParams{})
		require.NoError(t, err)
		require.Equal(t, []string{"a", "b", "c"}, queues)
		queues, err = ex.QueueList(ctx, &rowtype.QueueListParams{Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []string{"a", "b"}, queues)

		got, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "b", Max: 2})
		require.NoError(t, err)
		require.Len(t, got, 2)
		ok, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: got[0].ID, Attempt: 1, Status: rowtype.StatusDone})
		require.NoError(t, err)
		require.True(t, ok)

		st, err := ex.QueueStats(ctx, &rowtype.QueueStatsParams{Queue: "b"})
		require.NoError(t, err)
		require.Equal(t, "b", st.Queue)
		// Every status is counted, WAITING (a workflow's) and BLOCKED (a
		// limited queue's) included.
		require.Equal(t, map[rowtype.JobStatus]rowtype.BoundedCount{
			rowtype.StatusWaiting: {}, rowtype.StatusPending: {N: 2}, rowtype.StatusBlocked: {}, rowtype.StatusRunning: {N: 1}, rowtype.StatusDone: {N: 1},
			rowtype.StatusFailed: {}, rowtype.StatusCancelled: {},
		}, st.Counts)
		require.Equal(t, rowtype.BoundedCount{N: 1}, st.Finished[rowtype.StatusDone], "finished within the window")
		require.Equal(t, rowtype.BoundedCount{}, st.Finished[rowtype.StatusFailed])
		require.Equal(t, time.Minute, st.Window)
		require.False(t, st.Now.IsZero())
		// One PENDING job of b is available (the other is an hour away).
		require.False(t, st.OldestAvailableAt.IsZero())
		require.False(t, st.OldestAvailableAt.After(st.Now))
		require.Less(t, st.Now.Sub(st.OldestAvailableAt), time.Minute)

		require.False(t, st.OldestCapped)
		capped, err := ex.QueueStats(ctx, &rowtype.QueueStatsParams{Queue: "b", CountLimit: 1})
		require.NoError(t, err)
		require.Equal(t, rowtype.BoundedCount{N: 1, Capped: true}, capped.Counts[rowtype.StatusPending])
		require.Equal(t, rowtype.BoundedCount{N: 1}, capped.Counts[rowtype.StatusRunning], "exactly the limit is not capped")
		require.False(t, capped.OldestCapped, "one job is available, the limit is one")

		// Two available jobs of different priorities: with a limit of one,
		// the age is a lower bound.
		_, err = ex.JobInsertMany(ctx, []driver.JobInsertParams{job("b", "k", 5)})
		require.NoError(t, err)
		prio, err := ex.QueueStats(ctx, &rowtype.QueueStatsParams{Queue: "b", CountLimit: 1})
		require.NoError(t, err)
		require.True(t, prio.OldestCapped)

		empty, err := ex.QueueStats(ctx, &rowtype.QueueStatsParams{Queue: "a", Window: time.Second})
		require.NoError(t, err)
		require.Equal(t, time.Second, empty.Window)
		require.Equal(t, rowtype.BoundedCount{N: 1}, empty.Counts[rowtype.StatusPending])
		none, err := ex.QueueStats(ctx, &rowtype.QueueStatsParams{Queue: "nope"})
		require.NoError(t, err)
		require.True(t, none.OldestAvailableAt.IsZero(), "no available job, no age")
	})

	t.Run("RetryFailedJob", func(t *testing.T) {
		ex := setup(t, newDriver).Executor()
		one := job("q", "k", 0)
		one.MaxAttempts = 1
		_, err := ex.JobInsertMany(ctx, []driver.JobInsertParams{one})
		require.NoError(t, err)
		c := claimOne(t, ex)
		ok, err := ex.JobRetry(ctx, c.ID)
		require.NoError(t, err)
		require.False(t, ok, "a RUNNING job is not retried")
		ok, err = ex.JobFinish(ctx, &driver.JobFinishParams{ID: c.ID, Attempt: 1, Status: rowtype.StatusFailed, Error: "boom"})
		require.NoError(t, err)
		require.True(t, ok)

		ok, err = ex.JobRetry(ctx, c.ID)
		require.NoError(t, err)
		require.True(t, ok)
		j, err := ex.JobGet(ctx, c.ID)
		require.NoError(t, err)
		require.Equal(t, rowtype.StatusPending, j.Status)
		require.Equal(t, 2, j.MaxAttempts, "one more attempt than it used")
		require.True(t, j.FinishedAt.IsZero())
		require.Len(t, j.Errors, 1, "the history is kept")
		again := claimOne(t, ex)
		require.Equal(t, c.ID, again.ID)
		require.Equal(t, 2, again.Attempts)

		_, err = ex.JobRetry(ctx, c.ID+1000)
		require.ErrorIs(t, err, rowtype.ErrNotFound)

		run, err := ex.RunInsert(ctx, &driver.RunInsertParams{Name: "r"})
		require.NoError(t, err)
		// A second job stays PENDING: a run whose jobs have all ended
		// cannot be cancelled.
		ids, err := ex.JobInsertIntoRun(ctx, run.ID, []driver.JobInsertParams{one, one})
		require.NoError(t, err)
		inRun := claimOne(t, ex)
		require.Equal(t, ids[0], inRun.ID)
		ok, err = ex.JobFinish(ctx, &driver.JobFinishParams{ID: inRun.ID, Attempt: 1, Status: rowtype.StatusFailed, Error: "boom"})
		require.NoError(t, err)
		require.True(t, ok)
		_, err = ex.RunCancel(ctx, run.ID)
		require.NoError(t, err)
		_, err = ex.JobRetry(ctx, inRun.ID)
		require.ErrorIs(t, err, rowtype.ErrRunCancelled)
		j, err = ex.JobGet(ctx, inRun.ID)
		require.NoError(t, err)
		require.Equal(t, rowtype.StatusFailed, j.Status, "a refused retry changes nothing")
	})
}

func pageIDs(p *rowtype.JobPage) []int64 {
	out := make([]int64, len(p.Jobs))
	for i, j := range p.Jobs {
		out[i] = j.ID
	}
	return out
}

// testCompleteMany: the batched DONE writes exactly the attempts still
// RUNNING at the attempt given, across mixed attempt numbers.
func testCompleteMany(t *testing.T, newDriver Factory) {
	ctx := context.Background()
	ex := setup(t, newDriver).Executor()
	in := make([]driver.JobInsertParams, 6)
	for i := range in {
		in[i] = job("q", "k", 0)
	}
	_, err := ex.JobInsertMany(ctx, in)
	require.NoError(t, err)
	got, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "q", Max: 6})
	require.NoError(t, err)
	require.Len(t, got, 6)
	slices.SortFunc(got, func(a, b *rowtype.JobRow) int { return cmp.Compare(a.ID, b.ID) })

	// Job 1 is reaped and claimed again (attempt 2); job 2 is cancelled.
	reaped, err := ex.JobReap(ctx, &driver.JobReapParams{StaleAfter: -time.Hour, Max: 1})
	require.NoError(t, err)
	require.Len(t, reaped, 1)
	again := claimOne(t, ex)
	require.Equal(t, reaped[0].ID, again.ID)
	require.Equal(t, 2, again.Attempts)
	var cancelled int64
	for _, j := range got {
		if j.ID != again.ID {
			cancelled = j.ID
			break
		}
	}
	ok, err := ex.JobCancel(ctx, cancelled)
	require.NoError(t, err)
	require.True(t, ok)

	var refs []driver.JobRef
	var want []driver.JobRef
	for _, j := range got {
		refs = append(refs, driver.JobRef{ID: j.ID, Attempt: 1})
		if j.ID != again.ID && j.ID != cancelled {
			want = append(want, driver.JobRef{ID: j.ID, Attempt: 1})
		}
	}
	refs = append(refs, driver.JobRef{ID: again.ID, Attempt: 2})
	want = append(want, driver.JobRef{ID: again.ID, Attempt: 2})
	written, err := ex.JobCompleteMany(ctx, refs)
	require.NoError(t, err)
	require.ElementsMatch(t, want, written, "stale attempt 1 of the reclaimed job and the cancelled job are not written")
	for _, w := range want {
		j, err := ex.JobGet(ctx, w.ID)
		require.NoError(t, err)
		require.Equal(t, rowtype.StatusDone, j.Status)
		require.False(t, j.FinishedAt.IsZero())
	}
	j, err := ex.JobGet(ctx, cancelled)
	require.NoError(t, err)
	require.Equal(t, rowtype.StatusCancelled, j.Status)

	again2, err := ex.JobCompleteMany(ctx, refs)
	require.NoError(t, err)
	require.Empty(t, again2, "a job finishes once")
	none, err := ex.JobCompleteMany(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, none)
}

// testTextIndex: a search the newest window does not answer goes on
// through the optional text index where the dialect has one and it was
// created, over every job below the window, in one page; without it the
// page hands back the window's floor.
func testTextIndex(t *testing.T, newDriver Factory) {
	ctx := context.Background()
	t.Run("JobSearchThroughTextIndex", func(t *testing.T) {
		drv := setup(t, newDriver)
		ex := drv.Executor()
		in := make([]driver.JobInsertParams, 60)
		for i := range in {
			in[i] = job("q", "k", 0)
			in[i].Args = []byte(`{"n":` + itoa(i) + `}`)
		}
		in[3].Args = []byte(`{"customer":"ACME-4711","note":"weekly digest"}`)
		in[3].Metadata = []byte(`{"tenant":"Zephyr"}`)
		in[5].Args = []byte(`{"customer":"acme-4711"}`)
		in[7].Args = []byte(`{"customer":"Acme-4711"}`)
		in[7].Queue = "other"
		ids, err := ex.JobInsertMany(ctx, in)
		require.NoError(t, err)
		page := func(search string, before int64, limit int) *rowtype.JobPage {
			t.Helper()
			p, err := ex.JobPage(ctx, &rowtype.JobPageParams{Search: search, BeforeID: before, Limit: limit, Window: 10})
			require.NoError(t, err)
			return p
		}
		idsOf := func(p *rowtype.JobPage) []int64 {
			out := []int64{}
			for _, j := range p.Jobs {
				out = append(out, j.ID)
			}
			return out
		}

		// Without the index: the window holds no match; the page hands
		// back its floor.
		p := page("acme-4711", 0, 50)
		require.Empty(t, p.Jobs)
		require.False(t, p.Indexed)
		require.Equal(t, ids[50], p.Next)

		err = migrate.TextIndex(ctx, drv, true)
		if !drv.Catalog().Capabilities().TextIndex {
			require.ErrorIs(t, err, migrate.ErrNoTextIndex)
			return
		}
		require.NoError(t, err)
		has, err := migrate.HasTextIndex(ctx, drv)
		require.NoError(t, err)
		require.True(t, has)
		require.NoError(t, migrate.TextIndex(ctx, drv, true), "creating it again does nothing")

		// With it: every match below the window, newest first, in one
		// page, whatever the case.
		p = page("acme-4711", 0, 50)
		require.True(t, p.Indexed)
		require.Equal(t, []int64{ids[7], ids[5], ids[3]}, idsOf(p))
		require.Zero(t, p.Next, "nothing below matched")
		require.Equal(t, []int64{ids[3]}, idsOf(page("zephyr", 0, 50)), "the metadata, in another case")
		require.Equal(t, []int64{ids[3]}, idsOf(page("WEEKLY digest", 0, 50)))
		// Paged: two, then the rest from the cursor.
		p = page("4711", 0, 2)
		require.Equal(t, []int64{ids[7], ids[5]}, idsOf(p))
		require.Equal(t, ids[5], p.Next)
		require.Equal(t, []int64{ids[3]}, idsOf(page("4711", p.Next, 2)))
		// The page's filters hold below the window too.
		p, err = ex.JobPage(ctx, &rowtype.JobPageParams{Search: "acme", Queue: "other", Window: 10})
		require.NoError(t, err)
		require.Equal(t, []int64{ids[7]}, idsOf(p))
		// A search with no word of three characters reads windows only.
		p = page("{}", 0, 50)
		require.False(t, p.Indexed)
		// Inside a word: PostgreSQL's trigrams find it; InnoDB's words
		// are found by their beginning only.
		p = page("cme-47", 0, 50)
		if drv.Dialect() == "postgres" {
			require.Equal(t, []int64{ids[7], ids[5], ids[3]}, idsOf(p))
		} else {
			require.True(t, p.Indexed)
			require.Empty(t, p.Jobs)
		}
		// A job inserted after the index was built is found too.
		late, err := ex.JobInsertMany(ctx, []driver.JobInsertParams{{Queue: "q", Kind: "k", Args: []byte(`{"customer":"ACME-4711"}`), MaxAttempts: 1}})
		require.NoError(t, err)
		filler := make([]driver.JobInsertParams, 12)
		for i := range filler {
			filler[i] = job("q", "k", 0)
		}
		_, err = ex.JobInsertMany(ctx, filler)
		require.NoError(t, err)
		require.Equal(t, []int64{late[0], ids[7], ids[5], ids[3]}, idsOf(page("acme-4711", 0, 50)))

		require.NoError(t, migrate.TextIndex(ctx, drv, false))
		has, err = migrate.HasTextIndex(ctx, drv)
		require.NoError(t, err)
		require.False(t, has)
		p = page("acme-4711", 0, 50)
		require.False(t, p.Indexed)
		require.Empty(t, p.Jobs)
	})
}
