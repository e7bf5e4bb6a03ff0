// Package sqlexec is the one implementation of driver.Executor that every
// dialect shares. A dialect contributes its catalogue and a few hooks; the
// order of statements — and so the lock order — is written once, here.
package sqlexec

import (
	"context"
	"database/sql"
)

// Result is what an Exec reports.
type Result struct {
	RowsAffected int64
	LastInsertID int64 // 0 where the dialect does not report it
}

// Rows is a result set; *sql.Rows satisfies it.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// Querier is a connection, pool or transaction that statements run on.
type Querier interface {
	Exec(ctx context.Context, query string, args ...any) (Result, error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
}

type stdQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// SQL adapts a *sql.DB, *sql.Tx or *sql.Conn.
func SQL(q stdQuerier) Querier { return stdAdapter{q} }

type stdAdapter struct{ q stdQuerier }

func (a stdAdapter) Exec(ctx context.Context, query string, args ...any) (Result, error) {
	res, err := a.q.ExecContext(ctx, query, args...)
	if err != nil {
		return Result{}, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return Result{}, err
	}
	// LastInsertId is unsupported by some drivers (pgx); its error only
	// means "not reported".
	id, _ := res.LastInsertId()
	return Result{RowsAffected: n, LastInsertID: id}, nil
}

func (a stdAdapter) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	rows, err := a.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}
