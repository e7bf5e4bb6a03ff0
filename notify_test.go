package lockstep_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/internal/clienttest"
)

// testPollTrickle: without wake-ups, a queue that keeps receiving work
// from another client polls every MinPollInterval, not PollInterval: claims
// made because jobs finished must not back the poll off. (They once did: a
// claim of n jobs was followed by n empty claims, each doubling the
// interval, and a steady trickle drove the poll up to PollInterval.)
func testPollTrickle(t *testing.T, drv driver.Driver, open Opener) {
	ctx := context.Background()
	const poll, minPoll = 2 * time.Second, 20 * time.Millisecond
	var mu sync.Mutex
	started := map[int64]time.Time{}
	ws := lockstep.NewWorkers()
	lockstep.AddWorker(ws, lockstep.WorkFunc(func(_ context.Context, j *lockstep.Job[clienttest.WakeArgs]) error {
		mu.Lock()
		started[j.ID] = time.Now()
		mu.Unlock()
		return nil
	}))
	cfg := clienttest.FastConfig(ws)
	cfg.Queues = map[string]lockstep.QueueConfig{"trickle": {MaxWorkers: 10}}
	cfg.PollInterval, cfg.MinPollInterval, cfg.DisableNotify = poll, minPoll, true
	clienttest.StartClient(t, open(t), cfg)

	enq, err := lockstep.NewClient(drv, lockstep.Config{})
	require.NoError(t, err)
	enqueued := map[int64]time.Time{}
	for round := range 20 {
		batch := make([]lockstep.InsertManyParams, 3)
		for i := range batch {
			batch[i] = lockstep.InsertManyParams{Args: clienttest.WakeArgs{N: round*3 + i}, Opts: &lockstep.InsertOpts{Queue: "trickle"}}
		}
		idsRes, err := enq.InsertMany(ctx, batch)
		require.NoError(t, err)
		ids := insertedIDs(idsRes)
		for _, id := range ids {
			enqueued[id] = time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
	eventually(t, 20*time.Second, "every job to start", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(started) == len(enqueued)
	})
	var worst time.Duration
	mu.Lock()
	for id, at := range enqueued {
		worst = max(worst, started[id].Sub(at))
	}
	mu.Unlock()
	t.Logf("worst enqueue→start of %d jobs: %s (MinPollInterval %s, PollInterval %s)", len(enqueued), worst.Round(time.Millisecond), minPoll, poll)
	require.Less(t, worst, poll/2, "the poll backed off while work kept coming")
}

// testNotify: on a driver that sends wake-ups, a job enqueued through
// another client — another pool, as another process would — starts at once
// rather than at the worker's next poll, whichever way it was made
// available; with DisableNotify it waits for the poll.
func testNotify(t *testing.T, newDriver Factory) {
	ctx := context.Background()
	drv, open := setupOpener(t, newDriver)
	t.Run("PollKeepsUpWithATrickle", func(t *testing.T) { testPollTrickle(t, drv, open) })
	if _, ok := drv.(driver.Notifier); !ok {
		t.Skipf("the %s driver sends no wake-ups: jobs enqueued elsewhere wait for the poll", drv.Dialect())
	}
	enq, err := lockstep.NewClient(drv, lockstep.Config{})
	require.NoError(t, err)

	t.Run("CrossClient", func(t *testing.T) {
		w := clienttest.StartWakeWorker(t, open(t), false)
		// The worker's first claim is behind it: its next poll is a full
		// poll interval away, so only a wake-up can start a job sooner.
		mark := w.Log.WaitClaimAfter(t, 0)
		n := 0
		check := func(what string, jobs int, enqueue func() []int64) {
			n++
			began := time.Now()
			ids := enqueue()
			for _, id := range ids {
				took := w.WaitStarted(t, id, began)
				t.Logf("%s: job %d started %s after the enqueue began (poll interval %s)", what, id, took.Round(time.Microsecond), clienttest.NotifyPollInterval)
			}
			mark = w.Log.WaitFinishedThenClaim(t, mark, jobs)
		}

		check("Insert", 1, func() []int64 {
			idRes, err := enq.Insert(ctx, clienttest.WakeArgs{N: 1}, nil)
			require.NoError(t, err)
			id := idRes.ID
			return []int64{id}
		})
		check("InsertMany", 3, func() []int64 {
			idsRes, err := enq.InsertMany(ctx, []lockstep.InsertManyParams{{Args: clienttest.WakeArgs{N: 2}}, {Args: clienttest.WakeArgs{N: 3}}, {Args: clienttest.WakeArgs{N: 4}}})
			require.NoError(t, err)
			ids := insertedIDs(idsRes)
			return ids
		})
		check("InsertTx, woken on commit", 1, func() []int64 {
			tx, err := drv.BeginSQL(ctx)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback() }()
			idRes, err := enq.InsertTx(ctx, tx, clienttest.WakeArgs{N: 5}, nil)
			require.NoError(t, err)
			id := idRes.ID
			require.NoError(t, tx.Commit())
			return []int64{id}
		})
		var runID int64
		check("InsertRun with jobs", 2, func() []int64 {
			run, idsRes, err := enq.InsertRun(ctx, "woken", nil, lockstep.InsertManyParams{Args: clienttest.WakeArgs{N: 6}}, lockstep.InsertManyParams{Args: clienttest.WakeArgs{N: 7}})
			require.NoError(t, err)
			ids := insertedIDs(idsRes)
			runID = run.ID
			return ids
		})
		check("Insert into a run", 1, func() []int64 {
			idRes, err := enq.Insert(ctx, clienttest.WakeArgs{N: 8}, &lockstep.InsertOpts{RunID: runID})
			require.NoError(t, err)
			id := idRes.ID
			return []int64{id}
		})
		// A job that fails once, then is retried from the other client.
		var failing int64
		check("a job that fails", 1, func() []int64 {
			idRes, err := enq.Insert(ctx, clienttest.WakeArgs{N: 9, FailOnce: true}, nil)
			require.NoError(t, err)
			id := idRes.ID
			failing = id
			return []int64{id}
		})
		require.Equal(t, lockstep.StatusFailed, clienttest.WaitStatus(t, enq, failing, lockstep.StatusFailed).Status)
		w.Forget(failing)
		check("RetryJob", 1, func() []int64 {
			ok, err := enq.RetryJob(ctx, failing)
			require.NoError(t, err)
			require.True(t, ok)
			return []int64{failing}
		})
		clienttest.WaitStatus(t, enq, failing, lockstep.StatusDone)
	})

	t.Run("DisableNotify", func(t *testing.T) {
		// The control: the same worker without its listener waits for the
		// poll, so the test above measures the wake-up, not luck.
		w := clienttest.StartWakeWorker(t, open(t), true)
		w.Log.WaitClaimAfter(t, 0)
		idRes, err := enq.Insert(ctx, clienttest.WakeArgs{N: 10}, nil)
		require.NoError(t, err)
		id := idRes.ID
		time.Sleep(500 * time.Millisecond)
		require.False(t, w.Started(id), "a job started before the poll though the worker does not listen")
		j, err := enq.Job(ctx, id)
		require.NoError(t, err)
		require.Equal(t, lockstep.StatusPending, j.Status)
	})
}

// TestNotify: wake-ups and polling, on every driver.
func TestNotify(t *testing.T) { forEachClientFactory(t, testNotify) }
