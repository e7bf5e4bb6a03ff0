// Package clienttest holds what the client's end-to-end tests share across
// packages: a quick configuration, a started client that stops with the
// test, waits on a job's status, and the wake-up worker the LISTEN/NOTIFY
// tests of the root package and the postgres driver time. It is test
// support: nothing outside tests imports it.
package clienttest

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
)

// waitFor polls observable state until cond holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// FastConfig keeps the tests quick: short polls and heartbeats.
func FastConfig(ws *lockstep.Workers) lockstep.Config {
	return lockstep.Config{
		Workers:           ws,
		Logger:            slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Queues:            map[string]lockstep.QueueConfig{lockstep.DefaultQueue: {MaxWorkers: 4}},
		PollInterval:      50 * time.Millisecond,
		MinPollInterval:   5 * time.Millisecond,
		HeartbeatInterval: 50 * time.Millisecond,
		ReapAfter:         time.Hour,
		RetryBackoff:      func(int) time.Duration { return 0 },
	}
}

func StartClient(t *testing.T, drv driver.Driver, cfg lockstep.Config) *lockstep.Client {
	t.Helper()
	c, err := lockstep.NewClient(drv, cfg)
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.StopAndCancel(ctx)
	})
	return c
}

func WaitStatus(t *testing.T, c *lockstep.Client, id int64, want lockstep.JobStatus) *lockstep.JobRow {
	t.Helper()
	var j *lockstep.JobRow
	waitFor(t, 20*time.Second, "job to reach "+string(want), func() bool {
		var err error
		j, err = c.Job(context.Background(), id)
		require.NoError(t, err)
		return j.Status == want
	})
	return j
}

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
	cfg := FastConfig(ws)
	cfg.PollInterval, cfg.MinPollInterval = NotifyPollInterval, NotifyPollInterval
	cfg.DisableNotify = disable
	cfg.OnEvent = w.Log.Add
	StartClient(t, drv, cfg)
	return w
}

// Started reports whether job id has started.
func (w *WakeWorker) Started(id int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.starts[id]
	return ok
}

// Forget lets job id be timed again (a retry).
func (w *WakeWorker) Forget(id int64) {
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
