package lockstep

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/lockstep-queue/lockstep/rowtype"
)

const (
	// lockRetries bounds retries of lock conflicts, which clear in
	// milliseconds or point at a bug.
	lockRetries = 6
	// connRetryWindow bounds retries of connection errors when ctx has no
	// deadline: long enough for a database restart, short enough that a
	// caller learns of an outage.
	connRetryWindow = 30 * time.Second
	maxConnBackoff  = time.Second
)

// retryDB runs one whole unit of work, again with backoff and jitter while
// it fails with a retryable error (deadlock, serialization, lock timeout,
// busy). It is a safety net: lockstep's own statements are ordered so as
// not to deadlock. A lost connection is not retried here: the unit may
// have committed (see retryDBIdempotent).
func (c *Client) retryDB(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	return c.retry(ctx, op, false, fn)
}

// retryDBIdempotent is retryDB for work that is harmless to repeat after it
// committed: a finish fenced on its attempt, a heartbeat, a reap, a
// cancel. It also rides out a lost or refused connection (a database
// restart, a failover, a proxy dropping sessions), with backoff up to
// maxConnBackoff, until ctx ends or, without a deadline, for
// connRetryWindow.
func (c *Client) retryDBIdempotent(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	return c.retry(ctx, op, true, fn)
}

func (c *Client) retry(ctx context.Context, op string, idempotent bool, fn func(ctx context.Context) error) error {
	var giveUp time.Time
	if _, ok := ctx.Deadline(); !ok {
		giveUp = time.Now().Add(connRetryWindow)
	}
	for i := 1; ; i++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		kind := c.drv.ClassifyError(err)
		var wait time.Duration
		switch {
		case kind.Retryable() && i < lockRetries:
			wait = jitter(time.Duration(1<<min(i, 8))*10*time.Millisecond, 0.5)
		case kind == rowtype.ErrorConnection && idempotent && ctx.Err() == nil &&
			(giveUp.IsZero() || time.Now().Before(giveUp)):
			wait = jitter(min(time.Duration(1<<min(i, 8))*10*time.Millisecond, maxConnBackoff), 0.5)
		default:
			return err
		}
		if c.cfg.OnRetry != nil {
			c.cfg.OnRetry(op, err)
		}
		c.emit(dbRetryEvent(op, err))
		// A restart produces a retry a second per waiting call: log the
		// first and then every tenth, not each.
		if kind != rowtype.ErrorConnection || i == 1 || i%10 == 0 {
			c.logger.Warn("lockstep: retrying after database error", "op", op, "kind", kind.String(), "try", i, "wait", wait, "err", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
}

// DefaultRetryBackoff is attempt⁴ seconds with ±10% jitter, capped at 24h.
func DefaultRetryBackoff(attempt int) time.Duration {
	secs := math.Pow(float64(max(attempt, 1)), 4)
	d := time.Duration(secs * float64(time.Second))
	if d > 24*time.Hour || d <= 0 {
		d = 24 * time.Hour
	}
	return jitter(d, 0.1)
}

// jitter spreads d by ±frac so that retries of jobs that failed together
// do not return together.
func jitter(d time.Duration, frac float64) time.Duration {
	if d <= 0 {
		return d
	}
	return time.Duration(float64(d) * (1 - frac + 2*frac*rand.Float64()))
}

type retryTxKey struct{}

// RetryTx runs fn in a transaction of the queue's kind (READ COMMITTED;
// BEGIN IMMEDIATE on SQLite) and, when it fails with a deadlock,
// serialization failure, lock wait timeout or SQLite BUSY — classified by
// code — rolls back and runs the whole of fn again with backoff and jitter.
// fn must be safe to run more than once. RetryTx refuses to run inside
// another RetryTx's fn: a transaction can only be retried whole, by its
// owner. Retry is a safety net; fix the lock order first.
func (c *Client) RetryTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if ctx.Value(retryTxKey{}) != nil {
		return ErrNestedRetryTx
	}
	inner := context.WithValue(ctx, retryTxKey{}, true)
	return c.retryDB(ctx, "RetryTx", func(context.Context) error {
		tx, err := c.drv.BeginSQL(inner)
		if err != nil {
			return err
		}
		if err := fn(inner, tx); err != nil {
			_ = tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		return nil
	})
}
