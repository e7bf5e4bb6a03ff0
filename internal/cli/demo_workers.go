package cli

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lockstep-queue/lockstep"
)

// The demo's job kinds. Each worker behaves in one way the queue must
// handle: success, failure then success, a snooze, and a long job that a
// run cancel interrupts.

const (
	demoRetryDelay  = 100 * time.Millisecond
	demoSnoozeDelay = 200 * time.Millisecond
)

// resizeArgs: succeeds after a short pause.
type resizeArgs struct {
	Image  string `json:"image"`
	Width  int    `json:"width"`
	Millis int    `json:"ms"`
}

func (resizeArgs) Kind() string { return "resize" }

func workResize(ctx context.Context, job *lockstep.Job[resizeArgs]) error {
	return sleepCtx(ctx, time.Duration(job.Args.Millis)*time.Millisecond)
}

// flakyArgs: fails its first FailTimes attempts, then succeeds.
type flakyArgs struct {
	Account   string `json:"account"`
	FailTimes int    `json:"fail_times"`
}

func (flakyArgs) Kind() string { return "flaky" }

type flakyWorker struct{}

func (flakyWorker) Work(ctx context.Context, job *lockstep.Job[flakyArgs]) error {
	if job.Attempts <= job.Args.FailTimes {
		return fmt.Errorf("billing API for %s answered 503 Service Unavailable", job.Args.Account)
	}
	return sleepCtx(ctx, 10*time.Millisecond)
}

// NextRetry implements lockstep.WorkerNextRetry: retry after 100ms rather
// than the default attempt⁴ seconds, so the demo stays short.
func (flakyWorker) NextRetry(*lockstep.Job[flakyArgs]) time.Duration { return demoRetryDelay }

// rateLimitedArgs: the first claim finds the external rate limit exhausted
// and snoozes; the next one succeeds.
type rateLimitedArgs struct {
	Endpoint string `json:"endpoint"`
}

func (rateLimitedArgs) Kind() string { return "rate_limited" }

func workRateLimited(ctx context.Context, job *lockstep.Job[rateLimitedArgs]) error {
	if job.Attempts == 1 {
		return lockstep.Snooze(demoSnoozeDelay)
	}
	return sleepCtx(ctx, 10*time.Millisecond)
}

// slowArgs: a long export step that stops when its context is cancelled.
type slowArgs struct {
	Table  string `json:"table"`
	Millis int    `json:"ms"`
}

func (slowArgs) Kind() string { return "slow" }

// slowWorker records, in process, which jobs saw their context cancelled
// and why: the database cannot say what a worker noticed.
type slowWorker struct {
	mu          sync.Mutex
	interrupted map[int64]string // job id -> context cause
}

func (w *slowWorker) Work(ctx context.Context, job *lockstep.Job[slowArgs]) error {
	err := sleepCtx(ctx, time.Duration(job.Args.Millis)*time.Millisecond)
	if err != nil {
		w.mu.Lock()
		if w.interrupted == nil {
			w.interrupted = map[int64]string{}
		}
		w.interrupted[job.ID] = context.Cause(ctx).Error()
		w.mu.Unlock()
	}
	return err
}

func (w *slowWorker) seen() map[int64]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[int64]string, len(w.interrupted))
	for k, v := range w.interrupted {
		out[k] = v
	}
	return out
}

// sleepCtx waits d or until ctx ends, returning ctx's cause.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// demoWorkers registers the demo's workers.
func demoWorkers(slow *slowWorker) *lockstep.Workers {
	ws := lockstep.NewWorkers()
	lockstep.AddWorker(ws, lockstep.WorkFunc(workResize))
	lockstep.AddWorker[flakyArgs](ws, flakyWorker{})
	lockstep.AddWorker(ws, lockstep.WorkFunc(workRateLimited))
	lockstep.AddWorker[slowArgs](ws, slow)
	return ws
}
