package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockstep-queue/lockstep"
)

// Mode is what a soak job does when it runs; it travels in the job's args.
type Mode string

// The job mix.
const (
	ModeOK         Mode = "ok"          // returns at once
	ModeSlow       Mode = "slow"        // sleeps 20–300 ms, stops when its context is cancelled
	ModeFailOnce   Mode = "fail_once"   // fails its first execution, then succeeds
	ModeSnoozeOnce Mode = "snooze_once" // snoozes its first execution, then succeeds
	ModeFailAlways Mode = "fail_always" // fails every attempt; MaxAttempts 2, so it ends FAILED

	// modeFlow marks a workflow step in the ledger (its args are FlowArgs).
	modeFlow Mode = "flow"
	// modeCallback marks a run's callback (CallbackArgs[CallbackData]).
	modeCallback Mode = "callback"
)

// Kind is the job kind every soak job has.
const Kind = "lockstep_soak"

// jobMaxAttempts is every job's attempts but fail-always's: enough that
// no job runs out because the dead worker took a few of its attempts.
const jobMaxAttempts = 10

// Args are a soak job's args.
type Args struct {
	Mode Mode `json:"mode"`
	// Millis is the sleep of a slow job, the snooze of a snooze-once job.
	Millis int `json:"ms,omitempty"`
}

// Kind implements lockstep.JobArgs.
func (Args) Kind() string { return Kind }

var (
	errFailOnce   = errors.New("soak: fail-once job failing its first execution")
	errFailAlways = errors.New("soak: fail-always job failing")
)

// randomJob picks a job from the mix. Slow jobs are common so that cancels
// often land on running jobs, not only on pending ones.
func randomJob(rng *rand.Rand, queues []string) (Args, lockstep.InsertOpts) {
	opts := lockstep.InsertOpts{
		Queue:       queues[rng.IntN(len(queues))],
		Priority:    rng.IntN(3) - 1,
		MaxAttempts: jobMaxAttempts,
	}
	switch p := rng.IntN(100); {
	case p < 40:
		return Args{Mode: ModeOK}, opts
	case p < 65:
		return Args{Mode: ModeSlow, Millis: 20 + rng.IntN(281)}, opts
	case p < 80:
		return Args{Mode: ModeFailOnce}, opts
	case p < 93:
		return Args{Mode: ModeSnoozeOnce, Millis: 20 + rng.IntN(131)}, opts
	default:
		opts.MaxAttempts = 2
		return Args{Mode: ModeFailAlways}, opts
	}
}

// newWorkers registers the soak's one kind for pool number pool.
func newWorkers(l *ledger, pool int) (*lockstep.Workers, error) {
	ws := lockstep.NewWorkers()
	err := lockstep.AddWorkerSafely(ws, lockstep.WorkFunc(func(ctx context.Context, j *lockstep.Job[Args]) error {
		return work(ctx, l, pool, j)
	}))
	if err != nil {
		return nil, fmt.Errorf("soak: %w", err)
	}
	if err := addFlowWorkers(ws, l, pool); err != nil {
		return nil, err
	}
	return ws, nil
}

func work(ctx context.Context, l *ledger, pool int, j *lockstep.Job[Args]) error {
	first := l.beginExec(j.ID, j.Attempts, pool)
	l.claimedBy(j.ID, j.Attempts, pool, j.ClaimedBy)
	var err error
	switch j.Args.Mode {
	case ModeOK:
	case ModeSlow:
		t := time.NewTimer(time.Duration(j.Args.Millis) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			err = ctx.Err()
		case <-t.C:
		}
	case ModeFailOnce:
		if first {
			err = errFailOnce
		}
	case ModeSnoozeOnce:
		// Decided by the soak's memory, not the attempt number: the dead
		// worker may have used attempt 1 already.
		if l.takeSnooze(j.ID) {
			err = lockstep.Snooze(time.Duration(j.Args.Millis) * time.Millisecond)
		}
	case ModeFailAlways:
		err = errFailAlways
	default:
		err = lockstep.Permanent(fmt.Errorf("soak: unknown mode %q", j.Args.Mode))
	}
	l.endExec(j.ID, j.Attempts, outcomeOf(ctx, err))
	return err
}

func outcomeOf(ctx context.Context, err error) string {
	var snooze *lockstep.SnoozeError
	switch {
	case err == nil:
		return outcomeOK
	case errors.As(err, &snooze):
		return outcomeSnooze
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return outcomeInterrupted
	default:
		return outcomeError
	}
}

// retryBackoff keeps retries quick so that a fail-once job finishes within
// the soak: 50 ms after the first failure, up to 200 ms.
func retryBackoff(failures int) time.Duration {
	return min(time.Duration(max(failures, 1))*50*time.Millisecond, 200*time.Millisecond)
}
