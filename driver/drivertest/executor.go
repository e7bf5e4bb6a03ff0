package drivertest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

func job(queue, kind string, prio int) driver.JobInsertParams {
	return driver.JobInsertParams{Queue: queue, Kind: kind, Args: []byte(`{"n":1}`), Priority: prio, MaxAttempts: 3}
}

func testExecutor(t *testing.T, newDriver Factory) {
	ctx := context.Background()

	t.Run("InsertManyKeepsInputOrder", func(t *testing.T) {
		ex := setup(t, newDriver).Executor()
		in := make([]driver.JobInsertParams, 2500) // more than one batch
		for i := range in {
			in[i] = job("q", "k", 0)
			in[i].Args = []byte(`{"i":` + itoa(i) + `}`)
		}
		ids, err := ex.JobInsertMany(ctx, in)
		require.NoError(t, err)
		require.Len(t, ids, len(in))
		for _, i := range []int{0, 999, 1000, 2499} {
			j, err := ex.JobGet(ctx, ids[i])
			require.NoError(t, err)
			require.JSONEq(t, `{"i":`+itoa(i)+`}`, string(j.Args))
			require.Equal(t, rowtype.StatusPending, j.Status)
			require.Equal(t, 0, j.Attempts)
			require.Empty(t, j.Errors)
		}
	})

	t.Run("ClaimOrderQueueAndSchedule", func(t *testing.T) {
		ex := setup(t, newDriver).Executor()
		later := job("q", "k", -5)
		later.ScheduledAt = time.Now().Add(time.Hour)
		ids, err := ex.JobInsertMany(ctx, []driver.JobInsertParams{
			job("q", "k", 2), job("q", "k", 1), job("other", "k", 0), later, job("q", "k", 1),
		})
		require.NoError(t, err)
		got, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "q", Max: 10})
		require.NoError(t, err)
		// Priority 1 (two jobs, by id), then priority 2; the future job and
		// the other queue's job are not claimed.
		require.Len(t, got, 3)
		claimed := map[int64]*rowtype.JobRow{}
		for _, j := range got {
			claimed[j.ID] = j
			require.Equal(t, rowtype.StatusRunning, j.Status)
			require.Equal(t, 1, j.Attempts)
			require.False(t, j.StartedAt.IsZero())
			require.False(t, j.HeartbeatAt.IsZero())
		}
		require.Contains(t, claimed, ids[0])
		require.Contains(t, claimed, ids[1])
		require.Contains(t, claimed, ids[4])
		again, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "q", Max: 10})
		require.NoError(t, err)
		require.Empty(t, again, "RUNNING and future jobs are not claimed")

		ex2 := setup(t, newDriver).Executor()
		_, err = ex2.JobInsertMany(ctx, []driver.JobInsertParams{job("q", "k", 2), job("q", "k", 1), job("q", "k", 1)})
		require.NoError(t, err)
		one, err := ex2.JobClaim(ctx, &driver.JobClaimParams{Queue: "q", Max: 1})
		require.NoError(t, err)
		require.Len(t, one, 1)
		require.Equal(t, 1, one[0].Priority, "lowest priority value first")
	})

	t.Run("ClaimAfterKey", func(t *testing.T) {
		ex := setup(t, newDriver).Executor()
		// One insert: the jobs share available_at where the database
		// stamps a statement once, so the id decides between them.
		ids, err := ex.JobInsertMany(ctx, []driver.JobInsertParams{
			job("q", "k", 1), job("q", "k", 1), job("q", "k", 1), job("q", "k", 2), job("q", "k", 2), job("other", "k", 1),
		})
		require.NoError(t, err)
		// A job of a higher priority, inserted later, sorts before them all.
		first, err := ex.JobInsertMany(ctx, []driver.JobInsertParams{job("q", "k", 0)})
		require.NoError(t, err)
		key := func(id int64) *driver.ClaimKey {
			j, err := ex.JobGet(ctx, id)
			require.NoError(t, err)
			k := driver.KeyOf(j)
			return &k
		}
		claimedIDs := func(jobs []*rowtype.JobRow) []int64 {
			out := make([]int64, len(jobs))
			for i, j := range jobs {
				require.Equal(t, rowtype.StatusRunning, j.Status)
				require.Equal(t, 1, j.Attempts)
				out[i] = j.ID
			}
			return out
		}
		got, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "q", Max: 2, After: key(ids[1])})
		require.NoError(t, err)
		require.Equal(t, []int64{ids[2], ids[3]}, claimedIDs(got), "the two jobs after the key, in claim order")
		for _, id := range []int64{ids[0], ids[1], first[0], ids[4]} {
			j, err := ex.JobGet(ctx, id)
			require.NoError(t, err)
			require.Equal(t, rowtype.StatusPending, j.Status, "job %d is not after the key, or past the limit", id)
		}
		got, err = ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "q", Max: 10, After: key(ids[4])})
		require.NoError(t, err)
		require.Empty(t, got, "nothing sorts after the queue's last job")
		// From before the head, a claim after a key takes what a claim
		// from the head takes.
		got, err = ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "q", Max: 10, After: &driver.ClaimKey{Priority: -1}})
		require.NoError(t, err)
		require.ElementsMatch(t, []int64{first[0], ids[0], ids[1], ids[4]}, claimedIDs(got))
	})

	t.Run("FinishIsFencedOnAttempt", func(t *testing.T) {
		ex := setup(t, newDriver).Executor()
		_, err := ex.JobInsertMany(ctx, []driver.JobInsertParams{job("q", "k", 0)})
		require.NoError(t, err)
		first := claimOne(t, ex)
		require.Equal(t, 1, first.Attempts)
		// The worker is presumed dead: a negative limit makes any heartbeat stale.
		reaped, err := ex.JobReap(ctx, &driver.JobReapParams{StaleAfter: -time.Hour})
		require.NoError(t, err)
		require.Equal(t, []rowtype.ReapResult{{ID: first.ID, Attempt: 1, Status: rowtype.StatusPending}}, reaped)
		second := claimOne(t, ex)
		require.Equal(t, first.ID, second.ID)
		require.Equal(t, 2, second.Attempts)

		// The stale worker of attempt 1 finishes late: nothing changes.
		for _, st := range []rowtype.JobStatus{rowtype.StatusDone, rowtype.StatusFailed, rowtype.StatusPending} {
			ok, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: first.ID, Attempt: 1, Status: st, Error: "late"})
			require.NoError(t, err)
			require.False(t, ok, "stale %s must not be written", st)
		}
		j, err := ex.JobGet(ctx, first.ID)
		require.NoError(t, err)
		require.Equal(t, rowtype.StatusRunning, j.Status)
		require.Equal(t, 2, j.Attempts)

		ok, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: first.ID, Attempt: 2, Status: rowtype.StatusDone})
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = ex.JobFinish(ctx, &driver.JobFinishParams{ID: first.ID, Attempt: 2, Status: rowtype.StatusDone})
		require.NoError(t, err)
		require.False(t, ok, "a job finishes once")
		j, err = ex.JobGet(ctx, first.ID)
		require.NoError(t, err)
		require.Equal(t, rowtype.StatusDone, j.Status)
		require.False(t, j.FinishedAt.IsZero())
		require.Len(t, j.Errors, 1, "the reap is in the history")
		require.Contains(t, j.Errors[0].Error, "heartbeat lost")
	})

	t.Run("RetrySnoozeFailHistory", func(t *testing.T) {
		ex := setup(t, newDriver).Executor()
		ids, err := ex.JobInsertMany(ctx, []driver.JobInsertParams{job("q", "k", 0)})
		require.NoError(t, err)
		j := claimOne(t, ex)
		ok, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: j.ID, Attempt: 1, Status: rowtype.StatusPending, RetryAfter: time.Hour, Error: "boom 1"})
		require.NoError(t, err)
		require.True(t, ok)
		got, err := ex.JobGet(ctx, ids[0])
		require.NoError(t, err)
		require.Equal(t, rowtype.StatusPending, got.Status)
		require.Equal(t, "boom 1", got.LastError)
		require.Len(t, got.Errors, 1)
		require.Equal(t, 1, got.Errors[0].Attempt)
		require.WithinDuration(t, time.Now().Add(time.Hour), got.AvailableAt, 10*time.Minute)
		none, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "q", Max: 1})
		require.NoError(t, err)
		require.Empty(t, none, "a retry waits for its backoff")

		ids2, err := ex.JobInsertMany(ctx, []driver.JobInsertParams{job("s", "k", 0)})
		require.NoError(t, err)
		s := claimOneFrom(t, ex, "s")
		ok, err = ex.JobFinish(ctx, &driver.JobFinishParams{ID: s.ID, Attempt: 1, Status: rowtype.StatusPending, Snooze: true, RetryAfter: -time.Second})
		require.NoError(t, err)
		require.True(t, ok)
		got, err = ex.JobGet(ctx, ids2[0])
		require.NoError(t, err)
		require.Equal(t, rowtype.StatusPending, got.Status)
		require.Equal(t, got.MaxAttempts-got.Attempts, 3, "a snooze consumes no attempt")
		require.Empty(t, got.Errors, "a snooze is not an error")
		s = claimOneFrom(t, ex, "s")
		require.Equal(t, 2, s.Attempts)
		ok, err = ex.JobFinish(ctx, &driver.JobFinishParams{ID: s.ID, Attempt: 2, Status: rowtype.StatusFailed, Error: "final"})
		require.NoError(t, err)
		require.True(t, ok)
		got, err = ex.JobGet(ctx, ids2[0])
		require.NoError(t, err)
		require.Equal(t, rowtype.StatusFailed, got.Status)
		require.Equal(t, "final", got.LastError)
		require.Len(t, got.Errors, 1)
		require.Equal(t, 2, got.Errors[0].Attempt)
	})

	t.Run("ReapFailsWhenAttemptsUsedUp", func(t *testing.T) {
		ex := setup(t, newDriver).Executor()
		p := job("q", "k", 0)
		p.MaxAttempts = 1
		_, err := ex.JobInsertMany(ctx, []driver.JobInsertParams{p})
		require.NoError(t, err)
		j := claimOne(t, ex)
		none, err := ex.JobReap(ctx, &driver.JobReapParams{StaleAfter: time.Hour})
		require.NoError(t, err)
		require.Empty(t, none, "a fresh heartbeat is not reaped")
		reaped, err := ex.JobReap(ctx, &driver.JobReapParams{StaleAfter: -time.Hour})
		require.NoError(t, err)
		require.Equal(t, []rowtype.ReapResult{{ID: j.ID, Attempt: 1, Status: rowtype.StatusFailed}}, reaped)
	})

	t.Run("HeartbeatReportsLostJobs", func(t *testing.T) {
		ex := setup(t, newDriver).Executor()
		_, err := ex.JobInsertMany(ctx, []driver.JobInsertParams{job("q", "k", 0), job("q", "k", 0), job("q", "k", 0)})
		require.NoError(t, err)
		got, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "q", Max: 3})
		require.NoError(t, err)
		require.Len(t, got, 3)
		ok, err := ex.JobCancel(ctx, got[1].ID)
		require.NoError(t, err)
		require.True(t, ok)
		refs := []driver.JobRef{{ID: got[0].ID, Attempt: 1}, {ID: got[1].ID, Attempt: 1}, {ID: got[2].ID, Attempt: 7}}
		lost, err := ex.JobHeartbeat(ctx, refs)
		require.NoError(t, err)
		require.ElementsMatch(t, []driver.JobRef{refs[1], refs[2]}, lost)
	})

	t.Run("RunCancelAndEnqueueIntoRun", func(t *testing.T) {
		drv := setup(t, newDriver)
		ex := drv.Executor()
		meta, _ := json.Marshal(map[string]string{"owner": "test"})
		run, err := ex.RunInsert(ctx, &driver.RunInsertParams{Name: "r1", Metadata: meta})
		require.NoError(t, err)
		require.Equal(t, rowtype.RunActive, run.Status)
		require.JSONEq(t, `{"owner":"test"}`, string(run.Metadata))
		ids, err := ex.JobInsertIntoRun(ctx, run.ID, []driver.JobInsertParams{job("q", "k", 0), job("q", "k", 0), job("q", "k", 0)})
		require.NoError(t, err)
		require.Len(t, ids, 3)
		claimed := claimOne(t, ex)
		ok, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: claimed.ID, Attempt: 1, Status: rowtype.StatusDone})
		require.NoError(t, err)
		require.True(t, ok)
		running := claimOne(t, ex)

		res, err := ex.RunCancel(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, rowtype.RunCancelled, res.Run.Status)
		require.False(t, res.Run.CancelledAt.IsZero())
		require.Len(t, res.Cancelled, 2)
		counts, err := ex.RunCounts(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, rowtype.RunCounts{rowtype.StatusDone: 1, rowtype.StatusCancelled: 2}, counts)

		ok, err = ex.JobFinish(ctx, &driver.JobFinishParams{ID: running.ID, Attempt: 1, Status: rowtype.StatusDone})
		require.NoError(t, err)
		require.False(t, ok, "a cancelled job's late finish changes nothing")

		_, err = ex.JobInsertIntoRun(ctx, run.ID, []driver.JobInsertParams{job("q", "k", 0)})
		require.ErrorIs(t, err, rowtype.ErrRunCancelled)
		_, err = ex.JobInsertIntoRun(ctx, run.ID+1000, []driver.JobInsertParams{job("q", "k", 0)})
		require.ErrorIs(t, err, rowtype.ErrNotFound)
		_, err = ex.RunCancel(ctx, run.ID+1000)
		require.ErrorIs(t, err, rowtype.ErrNotFound)

		again, err := ex.RunCancel(ctx, run.ID)
		require.NoError(t, err)
		require.Empty(t, again.Cancelled)
		require.Equal(t, res.Run.CancelledAt, again.Run.CancelledAt, "a second cancel keeps the first time")

		// A run whose jobs have all ended is not cancelled: that would
		// rewrite its history (a DONE run shown CANCELLED) and cancel
		// nothing. An empty run can be: it keeps jobs out of it.
		done, err := ex.RunInsert(ctx, &driver.RunInsertParams{Name: "finished"})
		require.NoError(t, err)
		_, err = ex.JobInsertIntoRun(ctx, done.ID, []driver.JobInsertParams{job("q", "k", 0)})
		require.NoError(t, err)
		j := claimOne(t, ex)
		ok, err = ex.JobFinish(ctx, &driver.JobFinishParams{ID: j.ID, Attempt: 1, Status: rowtype.StatusDone})
		require.NoError(t, err)
		require.True(t, ok)
		_, err = ex.RunCancel(ctx, done.ID)
		require.ErrorIs(t, err, rowtype.ErrRunFinished)
		got, err := ex.RunGet(ctx, done.ID)
		require.NoError(t, err)
		require.Equal(t, rowtype.RunActive, got.Status, "a refused cancel changes nothing")
		require.True(t, got.CancelledAt.IsZero())
		empty, err := ex.RunInsert(ctx, &driver.RunInsertParams{Name: "empty"})
		require.NoError(t, err)
		res, err = ex.RunCancel(ctx, empty.ID)
		require.NoError(t, err)
		require.Equal(t, rowtype.RunCancelled, res.Run.Status)
		require.Empty(t, res.Cancelled)

		listed, err := ex.JobList(ctx, &rowtype.JobListParams{RunID: run.ID, Status: rowtype.StatusCancelled})
		require.NoError(t, err)
		require.Len(t, listed, 2)
		all, err := ex.JobList(ctx, &rowtype.JobListParams{})
		require.NoError(t, err)
		require.Len(t, all, 4)
	})

	t.Run("ClassifiesNothingOnPlainErrors", func(t *testing.T) {
		drv := setup(t, newDriver)
		_, err := drv.DB().Exec("SELECT * FROM no_such_table")
		require.Error(t, err)
		require.Equal(t, rowtype.ErrorOther, drv.ClassifyError(err))
	})
}

func claimOne(t *testing.T, ex driver.Executor) *rowtype.JobRow { return claimOneFrom(t, ex, "q") }

func claimOneFrom(t *testing.T, ex driver.Executor, queue string) *rowtype.JobRow {
	t.Helper()
	got, err := ex.JobClaim(context.Background(), &driver.JobClaimParams{Queue: queue, Max: 1})
	require.NoError(t, err)
	require.Len(t, got, 1)
	return got[0]
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
