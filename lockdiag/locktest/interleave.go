// Package locktest makes the deterministic lock-order regression test
// (hold the PRIMARY lock, wait for the lock wait, release) one call:
// session A runs until it pauses holding its locks, session B starts, the
// test waits until the server shows B waiting for a lock (or B finishes
// without waiting), then A continues and both must finish. A race test that
// passes twenty times proves nothing; this interleaving happens every time.
package locktest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
)

// Outcome is what happened in one interleaving.
type Outcome struct {
	// ErrA and ErrB are what each session returned.
	ErrA, ErrB error
	// BWaited is true when B was seen waiting for a lock while A was
	// paused; false when B finished without waiting.
	BWaited bool
	// Waits are the lock waits seen while A was paused.
	Waits []lockview.Wait
}

// Session A receives pause, which it must call exactly once, at the point
// where it holds the locks B should run into; pause returns when the test
// lets A continue.
type SessionA func(ctx context.Context, pause func()) error

// SessionB runs to completion.
type SessionB func(ctx context.Context) error

// Interleave runs A until it pauses, then B until B waits for a lock (seen
// in the server's lock tables through observer) or returns, then lets A
// continue and waits for both. observer is a pool on the same database (its
// sessions are not A's or B's). The whole interleaving is bounded by ctx;
// a lock wait that no one releases ends with ctx's error.
func Interleave(ctx context.Context, observer *sql.DB, flavor lockview.Flavor, a SessionA, b SessionB) (Outcome, error) {
	var out Outcome
	paused := make(chan struct{})
	resume := make(chan struct{})
	doneA := make(chan struct{})
	var once sync.Once
	pause := func() {
		once.Do(func() {
			close(paused)
			select {
			case <-resume:
			case <-ctx.Done():
			}
		})
	}
	go func() {
		defer close(doneA)
		out.ErrA = a(ctx, pause)
	}()
	select {
	case <-paused:
	case <-doneA:
		return out, fmt.Errorf("%w (it returned %v)", ErrNotPaused, out.ErrA)
	case <-ctx.Done():
		return out, fmt.Errorf("locktest: session A never paused: %w", ctx.Err())
	}

	doneB := make(chan struct{})
	go func() {
		defer close(doneB)
		out.ErrB = b(ctx)
	}()
	finished := func() bool {
		select {
		case <-doneB:
			return true
		default:
			return false
		}
	}
	waits, err := lockview.WaitFor(ctx, observer, flavor, nil, finished)
	close(resume)
	if err != nil {
		<-doneA
		return out, err
	}
	out.Waits, out.BWaited = waits, len(waits) > 0
	for _, ch := range []chan struct{}{doneA, doneB} {
		select {
		case <-ch:
		case <-ctx.Done():
			return out, fmt.Errorf("locktest: sessions did not finish after A continued: %w", ctx.Err())
		}
	}
	return out, nil
}

// ErrNotPaused marks a session A that finished before pausing.
var ErrNotPaused = errors.New("locktest: session A did not pause")
