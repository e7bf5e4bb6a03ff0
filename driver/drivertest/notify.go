package drivertest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
)

// NotifyPollInterval is the poll interval of the wake-up tests' workers:
// long, so that a job that starts sooner was woken, not polled.
const NotifyPollInterval = 10 * time.Second

// EventLog records a client's events in order, for tests that must
// synchronise on what the client did (a claim after a job finished).
type EventLog struct {
	mu     sync.Mutex
	events []lockstep.Event
}

// Add is a Config.OnEvent.
func (l *EventLog) Add(e lockstep.Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

// WaitClaimAfter waits for a claim recorded after mark and returns the new
// mark. Once the claim that follows a job's finish has been made, the
// queue's next poll is a full poll interval away.
func (l *EventLog) WaitClaimAfter(t *testing.T, mark int) int {
	t.Helper()
	var at int
	waitFor(t, 20*time.Second, "a claim", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for i := mark; i < len(l.events); i++ {
			if l.events[i].Kind == lockstep.EventClaimed {
				at = i + 1
				return true
			}
		}
		return false
	})
	return at
}

// WaitFinishedThenClaim waits for n more job finishes after mark and for the
// claim that follows the last of them.
func (l *EventLog) WaitFinishedThenClaim(t *testing.T, mark, n int) int {
	t.Helper()
	var at int
	waitFor(t, 20*time.Second, "jobs to finish", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		seen := 0
		for i := mark; i < len(l.events); i++ {
			if l.events[i].Kind == lockstep.EventJobFinished {
				if seen++; seen == n {
					at = i + 1
					return true
				}
			}
		}
		return false
	})
	return l.WaitClaimAfter(t, at)
}

// WakeWorker is a client on its own pool, as another process would be,
// that polls only every NotifyPollInterval, runs WakeArgs jobs and records
// when each started and what the client did.
type WakeWorker struct {
	Log EventLog

	mu     sync.Mutex
	starts map[int64]time.Time
}

// WakeArgs is the WakeWorker's job: it succeeds, or fails permanently on
// its first attempt with FailOnce.
type WakeArgs struct {
	N        int
	FailOnce bool
}

// Kind implements lockstep.JobArgs.
func (WakeArgs) Kind() string { return "wake" }

// StartWakeWorker starts a WakeWorker's client on drv, listening for
// wake-ups unless disable is set; it stops with t.
func StartWakeWorker(t *testing.T, drv driver.Driver, disable bool) *WakeWorker {
	t.Helper()
	w := &WakeWorker{starts: map[int64]time.Time{}}
	var failedOnce sync.Map
	ws := lockstep.NewWorkers()
	lockstep.AddWorker(ws, lockstep.WorkFunc(func(_ context.Context, j *lockstep.Job[WakeArgs]) error {
		w.mu.Lock()
		if _, seen := w.starts[j.ID]; !seen {
			w.starts[j.ID] = time.Now()
		}
		w.mu.Unlock()
		if j.Args.FailOnce {
			if _, done := failedOnce.LoadOrStore(j.ID, true); !done {
				return lockstep.Permanent(errors.New("fails once"))
			}
		}
		return nil
	}))
	cfg := fastConfig(ws)
	cfg.PollInterval, cfg.MinPollInterval = NotifyPollInterval, NotifyPollInterval
	cfg.DisableNotify = disable
	cfg.OnEvent = w.Log.Add
	startClient(t, drv, cfg)
	return w
}

// Started reports whether job id has started.
func (w *WakeWorker) Started(id int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.starts[id]
	return ok
}

// forget lets job id be timed again (a retry).
func (w *WakeWorker) forget(id int64) {
	w.mu.Lock()
	delete(w.starts, id)
	w.mu.Unlock()
}

// WaitStarted waits at most the poll interval for job id to start and
// returns how long after began it did; it fails the test if the job did
// not start sooner than a poll would have started it.
func (w *WakeWorker) WaitStarted(t *testing.T, id int64, began time.Time) time.Duration {
	t.Helper()
	deadline := began.Add(NotifyPollInterval)
	for {
		w.mu.Lock()
		at, ok := w.starts[id]
		w.mu.Unlock()
		if ok {
			took := at.Sub(began)
			require.Less(t, took, NotifyPollInterval, "job %d started only after a poll interval: no wake-up reached the worker", id)
			return took
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d did not start within the poll interval (%s): no wake-up reached the worker", id, NotifyPollInterval)
		}
		time.Sleep(time.Millisecond)
	}
}

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
	lockstep.AddWorker(ws, lockstep.WorkFunc(func(_ context.Context, j *lockstep.Job[WakeArgs]) error {
		mu.Lock()
		started[j.ID] = time.Now()
		mu.Unlock()
		return nil
	}))
	cfg := fastConfig(ws)
	cfg.Queues = map[string]lockstep.QueueConfig{"trickle": {MaxWorkers: 10}}
	cfg.PollInterval, cfg.MinPollInterval, cfg.DisableNotify = poll, minPoll, true
	startClient(t, open(t), cfg)

	enq, err := lockstep.NewClient(drv, lockstep.Config{})
	require.NoError(t, err)
	enqueued := map[int64]time.Time{}
	for round := range 20 {
		batch := make([]lockstep.InsertManyParams, 3)
		for i := range batch {
			batch[i] = lockstep.InsertManyParams{Args: WakeArgs{N: round*3 + i}, Opts: &lockstep.InsertOpts{Queue: "trickle"}}
		}
		idsRes, err := enq.InsertMany(ctx, batch)
		require.NoError(t, err)
		ids := insertedIDs(idsRes)
		for _, id := range ids {
			enqueued[id] = time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitFor(t, 20*time.Second, "every job to start", func() bool {
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
		w := StartWakeWorker(t, open(t), false)
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
				t.Logf("%s: job %d started %s after the enqueue began (poll interval %s)", what, id, took.Round(time.Microsecond), NotifyPollInterval)
			}
			mark = w.Log.WaitFinishedThenClaim(t, mark, jobs)
		}

		check("Insert", 1, func() []int64 {
			idRes, err := enq.Insert(ctx, WakeArgs{N: 1}, nil)
			require.NoError(t, err)
			id := idRes.ID
			return []int64{id}
		})
		check("InsertMany", 3, func() []int64 {
			idsRes, err := enq.InsertMany(ctx, []lockstep.InsertManyParams{{Args: WakeArgs{N: 2}}, {Args: WakeArgs{N: 3}}, {Args: WakeArgs{N: 4}}})
			require.NoError(t, err)
			ids := insertedIDs(idsRes)
			return ids
		})
		check("InsertTx, woken on commit", 1, func() []int64 {
			tx, err := drv.BeginSQL(ctx)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback() }()
			idRes, err := enq.InsertTx(ctx, tx, WakeArgs{N: 5}, nil)
			require.NoError(t, err)
			id := idRes.ID
			require.NoError(t, tx.Commit())
			return []int64{id}
		})
		var runID int64
		check("InsertRun with jobs", 2, func() []int64 {
			run, idsRes, err := enq.InsertRun(ctx, "woken", nil, lockstep.InsertManyParams{Args: WakeArgs{N: 6}}, lockstep.InsertManyParams{Args: WakeArgs{N: 7}})
			require.NoError(t, err)
			ids := insertedIDs(idsRes)
			runID = run.ID
			return ids
		})
		check("Insert into a run", 1, func() []int64 {
			idRes, err := enq.Insert(ctx, WakeArgs{N: 8}, &lockstep.InsertOpts{RunID: runID})
			require.NoError(t, err)
			id := idRes.ID
			return []int64{id}
		})
		// A job that fails once, then is retried from the other client.
		var failing int64
		check("a job that fails", 1, func() []int64 {
			idRes, err := enq.Insert(ctx, WakeArgs{N: 9, FailOnce: true}, nil)
			require.NoError(t, err)
			id := idRes.ID
			failing = id
			return []int64{id}
		})
		require.Equal(t, lockstep.StatusFailed, waitStatus(t, enq, failing, lockstep.StatusFailed).Status)
		w.forget(failing)
		check("RetryJob", 1, func() []int64 {
			ok, err := enq.RetryJob(ctx, failing)
			require.NoError(t, err)
			require.True(t, ok)
			return []int64{failing}
		})
		waitStatus(t, enq, failing, lockstep.StatusDone)
	})

	t.Run("DisableNotify", func(t *testing.T) {
		// The control: the same worker without its listener waits for the
		// poll, so the test above measures the wake-up, not luck.
		w := StartWakeWorker(t, open(t), true)
		w.Log.WaitClaimAfter(t, 0)
		idRes, err := enq.Insert(ctx, WakeArgs{N: 10}, nil)
		require.NoError(t, err)
		id := idRes.ID
		time.Sleep(500 * time.Millisecond)
		require.False(t, w.Started(id), "a job started before the poll though the worker does not listen")
		j, err := enq.Job(ctx, id)
		require.NoError(t, err)
		require.Equal(t, lockstep.StatusPending, j.Status)
	})
}
