package soak

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockstep-queue/lockstep"
)

// Workflows in the soak: runs whose jobs depend on one another, some with
// the three callbacks. Their jobs share the soak's queues with the rest of
// the mix, so the dead worker, the reapers and the cancels meet them too.

// FlowKind is the kind of a workflow step; CallbackKind a run's callback.
const (
	FlowKind     = "lockstep_soak_flow"
	CallbackKind = "lockstep_soak_callback"
)

// FlowArgs are a workflow step's args.
type FlowArgs struct {
	// Key is the step's key within its InsertRun, for the reader.
	Key string `json:"key"`
	// Millis, when set, is how long the step works (until its context
	// ends).
	Millis int `json:"ms,omitempty"`
	// Fail is how many executions fail permanently (the job ends FAILED
	// each time) before one succeeds: 1 succeeds once retried, a large
	// number never does.
	Fail int `json:"fail,omitempty"`
}

// Kind implements lockstep.JobArgs.
func (FlowArgs) Kind() string { return FlowKind }

// CallbackData is what a soak run's callbacks carry.
type CallbackData struct {
	On lockstep.CallbackOn `json:"on"`
}

// Kind implements lockstep.JobArgs.
func (CallbackData) Kind() string { return CallbackKind }

// failForever is a Fail no number of retries gets past in one soak.
const failForever = 1 << 20

var errFlowFail = errors.New("soak: workflow step failing for good")

// addFlowWorkers registers the workflow kinds for pool number pool.
func addFlowWorkers(ws *lockstep.Workers, l *ledger, pool int) error {
	err := lockstep.AddWorkerSafely(ws, lockstep.WorkFunc(func(ctx context.Context, j *lockstep.Job[FlowArgs]) error {
		return flowWork(ctx, l, pool, j)
	}))
	if err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	err = lockstep.AddWorkerSafely(ws, lockstep.WorkFunc(func(ctx context.Context, j *lockstep.Job[lockstep.CallbackArgs[CallbackData]]) error {
		return callbackWork(ctx, l, pool, j)
	}))
	if err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	return nil
}

func flowWork(ctx context.Context, l *ledger, pool int, j *lockstep.Job[FlowArgs]) error {
	l.beginExec(j.ID, j.Attempts, pool)
	start := time.Now()
	// What the database says of the dependencies as the step starts: under
	// the cancel policy every one must be DONE (a DONE job never leaves
	// DONE, so a later read cannot disagree); checked at the end.
	deps, derr := lockstep.DependencyOutputs(ctx)
	var err error
	switch {
	case derr != nil && ctx.Err() == nil:
		err = fmt.Errorf("soak: read dependency outputs: %w", derr)
	case derr != nil:
		err = ctx.Err()
	case l.flowFailNow(j.ID, j.Args.Fail):
		err = lockstep.Permanent(errFlowFail)
	case j.Args.Millis > 0:
		t := time.NewTimer(time.Duration(j.Args.Millis) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			err = ctx.Err()
		case <-t.C:
		}
	}
	outcome := outcomeOf(ctx, err)
	l.endExec(j.ID, j.Attempts, outcome)
	l.flowExec(j.ID, flowExec{attempt: j.Attempts, start: start, end: time.Now(), outcome: outcome, deps: depStatuses(deps), read: derr == nil})
	if derr != nil && ctx.Err() == nil {
		l.problem("workflow job %d: %v", j.ID, derr)
	}
	return err
}

func callbackWork(ctx context.Context, l *ledger, pool int, j *lockstep.Job[lockstep.CallbackArgs[CallbackData]]) error {
	l.beginExec(j.ID, j.Attempts, pool)
	start := time.Now()
	l.endExec(j.ID, j.Attempts, outcomeOK)
	l.flowExec(j.ID, flowExec{attempt: j.Attempts, start: start, end: time.Now(), outcome: outcomeOK, callback: &j.Args})
	return nil
}

func depStatuses(deps []lockstep.DependencyOutput) map[int64]lockstep.JobStatus {
	out := make(map[int64]lockstep.JobStatus, len(deps))
	for _, d := range deps {
		out[d.ID] = d.Status
	}
	return out
}
