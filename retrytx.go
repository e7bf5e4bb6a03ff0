package lockstep

import (
	"context"
	"database/sql"
	"fmt"
)

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
