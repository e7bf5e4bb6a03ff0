package lockstep_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/clienttest"
	"github.com/lockstep-queue/lockstep/migrate"
)

type blockWorker struct {
	started chan int64
	causes  chan error
}

func (w *blockWorker) Work(ctx context.Context, job *lockstep.Job[blockArgs]) error {
	w.started <- job.ID
	<-ctx.Done()
	w.causes <- context.Cause(ctx)
	return ctx.Err()
}

func testClient(t *testing.T, newDriver Factory) {
	ctx := context.Background()

	t.Run("FailurePaths", func(t *testing.T) {
		drv := setup(t, newDriver)
		ws := lockstep.NewWorkers()
		var mu sync.Mutex
		flakyRuns := map[int64]int{}
		lockstep.AddWorker(ws, lockstep.WorkFunc(func(_ context.Context, j *lockstep.Job[flakyArgs]) error {
			mu.Lock()
			defer mu.Unlock()
			flakyRuns[j.ID]++
			if flakyRuns[j.ID] <= j.Args.FailTimes {
				return errors.New("flaky failure")
			}
			return nil
		}))
		lockstep.AddWorker(ws, lockstep.WorkFunc(func(context.Context, *lockstep.Job[alwaysFailArgs]) error {
			return errors.New("always fails")
		}))
		snoozed := map[int64]bool{}
		lockstep.AddWorker(ws, lockstep.WorkFunc(func(_ context.Context, j *lockstep.Job[snoozeArgs]) error {
			mu.Lock()
			defer mu.Unlock()
			if !snoozed[j.ID] {
				snoozed[j.ID] = true
				return lockstep.Snooze(10 * time.Millisecond)
			}
			return nil
		}))
		lockstep.AddWorker(ws, timeoutWorker{})
		lockstep.AddWorker(ws, lockstep.WorkFunc(func(context.Context, *lockstep.Job[panicArgs]) error {
			panic("worker exploded")
		}))
		c := clienttest.StartClient(t, drv, clienttest.FastConfig(ws))

		flakyRes, err := c.Insert(ctx, flakyArgs{FailTimes: 2}, nil)
		require.NoError(t, err)
		flaky := flakyRes.ID
		j := clienttest.WaitStatus(t, c, flaky, lockstep.StatusDone)
		require.Equal(t, 3, j.Attempts, "two failures, then success")
		require.Len(t, j.Errors, 2)
		require.Equal(t, []int{1, 2}, []int{j.Errors[0].Attempt, j.Errors[1].Attempt})
		require.Contains(t, j.Errors[0].Error, "flaky failure")

		failRes, err := c.Insert(ctx, alwaysFailArgs{}, &lockstep.InsertOpts{MaxAttempts: 3})
		require.NoError(t, err)
		fail := failRes.ID
		j = clienttest.WaitStatus(t, c, fail, lockstep.StatusFailed)
		require.Equal(t, 3, j.Attempts)
		require.Len(t, j.Errors, 3, "every failed attempt is in the history")
		require.Equal(t, "always fails", j.LastError)
		require.False(t, j.FinishedAt.IsZero())

		snRes, err := c.Insert(ctx, snoozeArgs{}, &lockstep.InsertOpts{MaxAttempts: 1})
		require.NoError(t, err)
		sn := snRes.ID
		j = clienttest.WaitStatus(t, c, sn, lockstep.StatusDone)
		require.Equal(t, 2, j.Attempts, "claimed twice")
		require.Equal(t, 2, j.MaxAttempts, "the snooze gave its attempt back")
		require.Empty(t, j.Errors)

		toRes, err := c.Insert(ctx, timeoutArgs{}, &lockstep.InsertOpts{MaxAttempts: 1})
		require.NoError(t, err)
		to := toRes.ID
		j = clienttest.WaitStatus(t, c, to, lockstep.StatusFailed)
		require.Contains(t, j.LastError, "timed out after 20ms")

		pnRes, err := c.Insert(ctx, panicArgs{}, &lockstep.InsertOpts{MaxAttempts: 1})
		require.NoError(t, err)
		pn := pnRes.ID
		j = clienttest.WaitStatus(t, c, pn, lockstep.StatusFailed)
		require.Contains(t, j.LastError, "panic: worker exploded")

		unkRes, err := c.Insert(ctx, unknownArgs{}, &lockstep.InsertOpts{MaxAttempts: 5})
		require.NoError(t, err)
		unk := unkRes.ID
		j = clienttest.WaitStatus(t, c, unk, lockstep.StatusFailed)
		// Retried, not failed at once: during a rolling deploy another
		// process may have the worker. Failed when the attempts run out.
		require.Equal(t, 5, j.Attempts, "an unknown kind is retried like any error")
		require.Len(t, j.Errors, 5)
		require.Contains(t, j.LastError, "no worker registered for kind \"nobody_runs_this\"")

		badRes, err := c.Insert(ctx, lockstep.RawArgs{KindName: "flaky", JSON: json.RawMessage(`{"FailTimes":"many"}`)}, &lockstep.InsertOpts{MaxAttempts: 5})
		require.NoError(t, err)
		bad := badRes.ID
		j = clienttest.WaitStatus(t, c, bad, lockstep.StatusFailed)
		require.Equal(t, 1, j.Attempts, "undecodable args fail at once")
		require.Contains(t, j.LastError, "decode args of kind \"flaky\"")
	})

	t.Run("BadInputIsRefused", func(t *testing.T) {
		drv := setup(t, newDriver)
		c, err := lockstep.NewClient(drv, lockstep.Config{MaxArgsBytes: 64})
		require.NoError(t, err)
		cases := map[string]struct {
			args lockstep.JobArgs
			opts *lockstep.InsertOpts
			want string
		}{
			"invalid json":     {lockstep.RawArgs{KindName: "k", JSON: json.RawMessage(`{`)}, nil, "not valid JSON"},
			"too large":        {lockstep.RawArgs{KindName: "k", JSON: json.RawMessage(`"` + strings.Repeat("a", 100) + `"`)}, nil, "limit is 64"},
			"empty kind":       {lockstep.RawArgs{KindName: "", JSON: json.RawMessage(`{}`)}, nil, "kind name is empty"},
			"control in queue": {noopArgs{}, &lockstep.InsertOpts{Queue: "a\nb"}, "control"},
			"negative delay":   {noopArgs{}, &lockstep.InsertOpts{Delay: -time.Second}, "must not be negative"},
			"negative max":     {noopArgs{}, &lockstep.InsertOpts{MaxAttempts: -1}, "must be positive"},
		}
		for name, tc := range cases {
			_, err := c.Insert(ctx, tc.args, tc.opts)
			require.ErrorContains(t, err, tc.want, name)
		}
		require.Equal(t, 0, countWhere(t, drv, "1=1"), "nothing was inserted")
		_, err = c.InsertMany(ctx, []lockstep.InsertManyParams{{Args: noopArgs{}}, {Args: lockstep.RawArgs{KindName: "k", JSON: json.RawMessage(`[`)}}})
		require.ErrorContains(t, err, "job 1")
		require.Equal(t, 0, countWhere(t, drv, "1=1"), "a bad job rejects the whole batch")
	})

	t.Run("ReaperRescuesDeadWorkersJob", func(t *testing.T) {
		drv := setup(t, newDriver)
		ws := lockstep.NewWorkers()
		lockstep.AddWorker(ws, lockstep.WorkFunc(func(context.Context, *lockstep.Job[noopArgs]) error { return nil }))
		enq, err := lockstep.NewClient(drv, lockstep.Config{})
		require.NoError(t, err)
		idRes, err := enq.Insert(ctx, noopArgs{N: 1}, nil)
		require.NoError(t, err)
		id := idRes.ID
		// A worker claims the job and dies: it never heartbeats or finishes.
		dead := claimOneFrom(t, drv.Executor(), lockstep.DefaultQueue)
		require.Equal(t, id, dead.ID)

		cfg := clienttest.FastConfig(ws)
		cfg.ReapAfter, cfg.ReapInterval = 300*time.Millisecond, 50*time.Millisecond
		c := clienttest.StartClient(t, drv, cfg)
		j := clienttest.WaitStatus(t, c, id, lockstep.StatusDone)
		require.Equal(t, 2, j.Attempts, "the reaped attempt counts")
		require.Len(t, j.Errors, 1)
		require.Equal(t, 1, j.Errors[0].Attempt)
		require.Contains(t, j.Errors[0].Error, "heartbeat lost")
	})

	t.Run("CancelRunPendingAndRunning", func(t *testing.T) {
		drv := setup(t, newDriver)
		ws := lockstep.NewWorkers()
		bw := &blockWorker{started: make(chan int64, 10), causes: make(chan error, 10)}
		lockstep.AddWorker(ws, bw)
		cfg := clienttest.FastConfig(ws)
		cfg.Queues = map[string]lockstep.QueueConfig{lockstep.DefaultQueue: {MaxWorkers: 1}}
		worker := clienttest.StartClient(t, drv, cfg)
		// Another process cancels: this one learns it at its next heartbeat.
		other, err := lockstep.NewClient(drv, lockstep.Config{})
		require.NoError(t, err)

		params := make([]lockstep.InsertManyParams, 4)
		for i := range params {
			params[i] = lockstep.InsertManyParams{Args: blockArgs{Tag: strconv.Itoa(i)}}
		}
		run, idsRes, err := other.InsertRun(ctx, "cancel-me", nil, params...)
		require.NoError(t, err)
		ids := insertedIDs(idsRes)
		require.Len(t, ids, 4)
		var runningID int64
		select {
		case runningID = <-bw.started:
		case <-time.After(20 * time.Second):
			t.Fatal("no job started")
		}
		require.Equal(t, ids[0], runningID)
		_, counts, err := other.Run(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, lockstep.RunCounts{lockstep.StatusRunning: 1, lockstep.StatusPending: 3}, counts)

		res, err := other.CancelRun(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, ids, res.Cancelled)
		select {
		case cause := <-bw.causes:
			require.ErrorIs(t, cause, lockstep.ErrJobLost)
		case <-time.After(20 * time.Second):
			t.Fatal("the running job's context was not cancelled")
		}
		_, counts, err = other.Run(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, lockstep.RunCounts{lockstep.StatusCancelled: 4}, counts)

		// The late finish of the cancelled job changed nothing: stopping waits
		// for it to be written (or discarded).
		require.NoError(t, worker.Stop(ctx))
		j, err := other.Job(ctx, runningID)
		require.NoError(t, err)
		require.Equal(t, lockstep.StatusCancelled, j.Status)
		require.Empty(t, j.Errors, "the cancelled job's error was not recorded")
		require.Equal(t, 1, j.Attempts)

		_, err = other.Insert(ctx, noopArgs{}, &lockstep.InsertOpts{RunID: run.ID})
		require.ErrorIs(t, err, lockstep.ErrRunCancelled)
	})

	t.Run("CancelJobInProcess", func(t *testing.T) {
		drv := setup(t, newDriver)
		ws := lockstep.NewWorkers()
		bw := &blockWorker{started: make(chan int64, 1), causes: make(chan error, 1)}
		lockstep.AddWorker(ws, bw)
		cfg := clienttest.FastConfig(ws)
		cfg.HeartbeatInterval, cfg.ReapAfter = time.Hour, 3*time.Hour // only the in-process path
		c := clienttest.StartClient(t, drv, cfg)
		idRes, err := c.Insert(ctx, blockArgs{}, nil)
		require.NoError(t, err)
		id := idRes.ID
		require.Equal(t, id, <-bw.started)
		ok, err := c.CancelJob(ctx, id)
		require.NoError(t, err)
		require.True(t, ok)
		require.ErrorIs(t, <-bw.causes, lockstep.ErrJobLost)
		require.NoError(t, c.Stop(ctx))
		j, err := c.Job(ctx, id)
		require.NoError(t, err)
		require.Equal(t, lockstep.StatusCancelled, j.Status)
		ok, err = c.CancelJob(ctx, id)
		require.NoError(t, err)
		require.False(t, ok, "a finished job cannot be cancelled")
	})

	t.Run("InsertTx", func(t *testing.T) {
		drv := setup(t, newDriver)
		c, err := lockstep.NewClient(drv, lockstep.Config{})
		require.NoError(t, err)
		tx, err := drv.BeginSQL(ctx)
		require.NoError(t, err)
		idRes, err := c.InsertTx(ctx, tx, noopArgs{N: 1}, nil)
		require.NoError(t, err)
		id := idRes.ID
		require.NoError(t, tx.Rollback())
		_, err = c.Job(ctx, id)
		require.ErrorIs(t, err, lockstep.ErrNotFound, "rolled back with the caller's transaction")

		ws := lockstep.NewWorkers()
		ran := make(chan int64, 1)
		lockstep.AddWorker(ws, lockstep.WorkFunc(func(_ context.Context, j *lockstep.Job[noopArgs]) error {
			ran <- j.ID
			return nil
		}))
		worker := clienttest.StartClient(t, drv, clienttest.FastConfig(ws))
		tx, err = drv.BeginSQL(ctx)
		require.NoError(t, err)
		res, err := worker.InsertTx(ctx, tx, noopArgs{N: 2}, nil)
		require.NoError(t, err)
		id = res.ID
		require.NoError(t, tx.Commit())
		require.Equal(t, id, <-ran)
		clienttest.WaitStatus(t, worker, id, lockstep.StatusDone)

		_, err = c.InsertTx(ctx, "not a tx", noopArgs{}, nil)
		require.ErrorContains(t, err, "transaction must be")
	})

	t.Run("RetryTxRefusesNesting", func(t *testing.T) {
		drv := setup(t, newDriver)
		c, err := lockstep.NewClient(drv, lockstep.Config{})
		require.NoError(t, err)
		var inner error
		err = c.RetryTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			if _, err := c.InsertTx(ctx, tx, noopArgs{}, nil); err != nil {
				return err
			}
			inner = c.RetryTx(ctx, func(context.Context, *sql.Tx) error { return nil })
			return nil
		})
		require.NoError(t, err)
		require.ErrorIs(t, inner, lockstep.ErrNestedRetryTx)
		require.Equal(t, 1, countWhere(t, drv, "kind = ?", "noop"))
	})
}

type timeoutWorker struct{}

func (timeoutWorker) Work(ctx context.Context, _ *lockstep.Job[timeoutArgs]) error {
	<-ctx.Done()
	return ctx.Err()
}

func (timeoutWorker) Timeout(*lockstep.Job[timeoutArgs]) time.Duration { return 20 * time.Millisecond }

// TestClient: the client's end-to-end scenarios, on every driver.
func TestClient(t *testing.T) { forEachClientFactory(t, testClient) }

// TestStartChecksSchemaVersion: a client refuses to start on a schema that
// is not the one it expects, and starts once it is, on every driver.
func TestStartChecksSchemaVersion(t *testing.T) {
	forEachClientFactory(t, func(t *testing.T, newDriver Factory) {
		ctx := context.Background()
		drv := setup(t, newDriver)
		m, err := migrate.New(drv)
		require.NoError(t, err)
		down, err := m.Down(ctx, 1)
		require.NoError(t, err)
		require.Len(t, down, 1)
		ws := lockstep.NewWorkers()
		lockstep.AddWorker(ws, lockstep.WorkFunc(func(context.Context, *lockstep.Job[noopArgs]) error { return nil }))
		c, err := lockstep.NewClient(drv, lockstep.Config{Workers: ws})
		require.NoError(t, err)
		err = c.Start(ctx)
		require.ErrorContains(t, err, "migrate up")
		_, err = m.Up(ctx)
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx))
		require.NoError(t, c.Stop(ctx))
	})
}
