package sqlexec

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/lockstep-queue/lockstep/driver"
)

// inTx runs fn in the queue's own transaction, or in the caller's.
func (e *Executor) inTx(ctx context.Context, fn func(q Querier) error) error {
	if e.pool == nil {
		return fn(e.q)
	}
	tx, err := e.d.BeginTx(ctx, e.pool)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(SQL(tx)); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := driver.TraceBefore(ctx, driver.TraceCommit); err != nil {
		_ = tx.Rollback()
		return fmt.Errorf("trace: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Tx is an Executor inside a transaction the driver opened.
type Tx struct {
	*Executor
	tx *sql.Tx
}

// NewTx wraps a transaction the driver began.
func NewTx(d *Dialect, tx *sql.Tx) *Tx { return &Tx{Executor: InTx(d, SQL(tx)), tx: tx} }

// Commit commits the transaction.
func (t *Tx) Commit() error { return t.tx.Commit() }

// Rollback rolls the transaction back.
func (t *Tx) Rollback() error { return t.tx.Rollback() }
