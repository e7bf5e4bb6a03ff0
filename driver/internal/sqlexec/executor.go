package sqlexec

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// Dialect is what a database contributes to the shared executor.
type Dialect struct {
	Catalog *catalog.Catalog
	// BeginTx opens the queue's own short transaction.
	BeginTx func(ctx context.Context, db *sql.DB) (*sql.Tx, error)
	// Classify returns the kind and code of a database error.
	Classify func(err error) (rowtype.ErrorKind, string)
	// TimeArg converts a time parameter; nil passes time.Time unchanged.
	TimeArg func(time.Time) any
	// ColumnarInsert builds the array-per-column arguments of "job.insert"
	// for dialects that insert from arrays; nil expands {rows}.
	ColumnarInsert func(jobs []driver.JobInsertParams) []any
	// ColumnarFlow builds job.insert_flow's arguments the same way.
	ColumnarFlow func(jobs []driver.JobInsertParams) []any
	// ChunkSize bounds the ids one multi-row statement names.
	ChunkSize int
	// InsertIDStep is the distance between the ids one multi-row insert
	// without RETURNING assigns (MySQL's auto_increment_increment); 0
	// means 1.
	InsertIDStep int64
	// Wake, when set on a dialect with the Notify capability, paces
	// the wake-ups that inserts and retries send to other processes'
	// listeners (driver.Notifier); nil sends none.
	Wake *Wake
}

// Executor implements driver.Executor on a pool or inside a transaction.
type Executor struct {
	d    *Dialect
	q    Querier
	pool *sql.DB // nil: q is a transaction someone else owns
}

// New returns an Executor over a pool; multi-statement operations open
// their own transaction.
func New(d *Dialect, pool *sql.DB) *Executor {
	return &Executor{d: d, q: SQL(pool), pool: pool}
}

// InTx returns an Executor that runs inside an existing transaction.
func InTx(d *Dialect, q Querier) *Executor { return &Executor{d: d, q: q} }

var _ driver.Executor = (*Executor)(nil)

func (e *Executor) cat() *catalog.Catalog { return e.d.Catalog }

// caps are the dialect's declared capabilities; the executor chooses its
// way through a stage by them alone.
func (e *Executor) caps() catalog.Capabilities { return e.d.Catalog.Capabilities() }

// wrap classifies a database error by code and names the operation.
func (e *Executor) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, rowtype.ErrNotFound) || errors.Is(err, rowtype.ErrRunCancelled) || errors.Is(err, rowtype.ErrRunClosed) || rowtype.KindOf(err) != rowtype.ErrorOther {
		return fmt.Errorf("%s: %w", op, err)
	}
	if kind, code := e.d.Classify(err); kind != rowtype.ErrorOther {
		return fmt.Errorf("%s: %w", op, &rowtype.DBError{Kind: kind, Code: code, Err: err})
	}
	return fmt.Errorf("%s: %w", op, err)
}

// query and exec run one catalogue statement, telling the context's
// statement trace first.
func (e *Executor) query(ctx context.Context, q Querier, name catalog.Name, sqlText string, args ...any) (Rows, error) {
	if err := driver.TraceBefore(ctx, string(name)); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	return q.Query(ctx, sqlText, args...)
}

func (e *Executor) exec(ctx context.Context, q Querier, name catalog.Name, sqlText string, args ...any) (Result, error) {
	if err := driver.TraceBefore(ctx, string(name)); err != nil {
		return Result{}, fmt.Errorf("trace: %w", err)
	}
	return q.Exec(ctx, sqlText, args...)
}

func (e *Executor) timeArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	if e.d.TimeArg != nil {
		return e.d.TimeArg(t)
	}
	return t.UTC()
}

func micros(d time.Duration) int64 { return d.Microseconds() }

// execIDs runs an IDList statement over ascending ids in chunks, locking
// the chunk first where the dialect needs it (LockIDsFirst, job.lock_ids:
// PostgreSQL locks rows in plan order, so the ids are locked ORDER BY id
// first).
func (e *Executor) execIDs(ctx context.Context, q Querier, name catalog.Name, ids []int64, args ...any) (int64, error) {
	st := e.cat().Get(name)
	var lock catalog.Statement
	needLock := e.caps().LockIDsFirst
	if needLock {
		lock = e.cat().Get(catalog.JobLockIDs)
	}
	chunk := e.chunkSize()
	var total int64
	for start := 0; start < len(ids); start += chunk {
		part := ids[start:min(start+chunk, len(ids))]
		if needLock {
			if err := e.lockRows(ctx, q, lock, part); err != nil {
				return total, err
			}
		}
		sqlText, bargs := e.cat().BindIDs(st, part, args...)
		res, err := e.exec(ctx, q, name, sqlText, bargs...)
		if err != nil {
			return total, err
		}
		total += res.RowsAffected
	}
	return total, nil
}

// chunkSize is how many ids one IDList statement binds.
func (e *Executor) chunkSize() int {
	if e.d.ChunkSize <= 0 {
		return 500
	}
	return e.d.ChunkSize
}

// lockRows runs a locking read over ids (ascending) and discards its rows:
// the locks are what it is for.
func (e *Executor) lockRows(ctx context.Context, q Querier, st catalog.Statement, ids []int64) error {
	sqlText, args := e.cat().BindIDs(st, ids)
	rows, err := e.query(ctx, q, st.Name, sqlText, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	return errors.Join(rows.Err(), rows.Close())
}

func sortedUnique(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// jsonArg binds optional JSON as text, or NULL when there is none.
// keyArg is a limit key as a parameter: NULL for none, so that a job
// without a key has no entry in the partial limit index.
func keyArg(k string) any {
	if k == "" {
		return nil
	}
	return k
}

func jsonArg(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

func (e *Executor) queryIDs(ctx context.Context, q Querier, name catalog.Name, sqlText string, args ...any) ([]int64, error) {
	rows, err := e.query(ctx, q, name, sqlText, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func historyEntry(attempt int, msg string) string {
	b, _ := json.Marshal([]rowtype.AttemptError{{Attempt: attempt, At: time.Now().UTC(), Error: msg}})
	return string(b)
}
