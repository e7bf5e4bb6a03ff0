package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"time"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
)

// LedgerTable is the ledger's table: one row per execution, written by the
// worker itself in statements of their own, so a row is there whether or
// not the job's result ever was.
const LedgerTable = "lockstep_chaos_ledger"

// LedgerKind is the kind of the ledger's jobs.
const LedgerKind = "ledger"

// LedgerArgs are a ledger job's args.
type LedgerArgs struct {
	// Millis is how long the job works between its two ledger writes.
	Millis int `json:"ms"`
	// FirstMillis, when set, is how long the first attempt works instead:
	// a test holds a job in its first attempt to kill its process there.
	FirstMillis int `json:"first_ms,omitempty"`
}

// Kind implements lockstep.JobArgs.
func (LedgerArgs) Kind() string { return LedgerKind }

// LedgerCallbackKind is the kind of the workflow runs' callbacks: their
// worker receives lockstep.CallbackArgs[LedgerCallback].
const LedgerCallbackKind = "ledger_callback"

// LedgerCallback is what a chaos run's callback carries.
type LedgerCallback struct {
	On lockstep.CallbackOn `json:"on"`
}

// Kind implements lockstep.JobArgs.
func (LedgerCallback) Kind() string { return LedgerCallbackKind }

func ledgerDDL(dialect string) (create, drop string, err error) {
	drop = "DROP TABLE IF EXISTS " + LedgerTable
	switch dialect {
	case "mysql":
		create = "CREATE TABLE " + LedgerTable + " (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, job_id BIGINT NOT NULL," +
			" attempt INT NOT NULL, pid INT NOT NULL, started_at DATETIME(6) NOT NULL, ended_at DATETIME(6) NULL) ENGINE=InnoDB"
	case "postgres":
		create = "CREATE TABLE " + LedgerTable + " (id bigserial PRIMARY KEY, job_id bigint NOT NULL," +
			" attempt integer NOT NULL, pid integer NOT NULL, started_at timestamptz NOT NULL, ended_at timestamptz)"
	case "sqlite":
		create = "CREATE TABLE " + LedgerTable + " (id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL," +
			" attempt INTEGER NOT NULL, pid INTEGER NOT NULL, started_at TIMESTAMP NOT NULL, ended_at TIMESTAMP)"
	default:
		return "", "", fmt.Errorf("chaos: no ledger for dialect %q", dialect)
	}
	return create, drop, nil
}

// InstallLedger creates the ledger table, replacing any left behind.
func InstallLedger(ctx context.Context, drv driver.Driver) error {
	create, drop, err := ledgerDDL(drv.Dialect())
	if err != nil {
		return err
	}
	for _, stmt := range []string{drop, create} {
		if _, err := drv.DB().ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("chaos: install ledger: %w", err)
		}
	}
	return nil
}

// LedgerWorker runs ledger jobs: it records the execution's start, works
// for the job's Millis (or until its context ends), and records the end.
// Each record is its own statement, committed at once, so a process killed
// at any point leaves behind exactly what it had done.
type LedgerWorker struct {
	drv driver.Driver
	pid int
}

// NewLedgerWorker returns a worker writing the ledger through drv.
func NewLedgerWorker(drv driver.Driver) *LedgerWorker {
	return &LedgerWorker{drv: drv, pid: os.Getpid()}
}

// Register adds the worker to ws, and the worker of the runs' callbacks,
// which record their executions in the same ledger.
func (w *LedgerWorker) Register(ws *lockstep.Workers) error {
	if err := lockstep.AddWorkerSafely[LedgerArgs](ws, w); err != nil {
		return err
	}
	return lockstep.AddWorkerSafely(ws, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[lockstep.CallbackArgs[LedgerCallback]]) error {
		id, err := w.start(ctx, job.ID, job.Attempts)
		if err != nil {
			return fmt.Errorf("ledger: record start: %w", err)
		}
		return w.end(ctx, id)
	}))
}

// Work implements lockstep.Worker.
func (w *LedgerWorker) Work(ctx context.Context, job *lockstep.Job[LedgerArgs]) error {
	id, err := w.start(ctx, job.ID, job.Attempts)
	if err != nil {
		return fmt.Errorf("ledger: record start: %w", err)
	}
	ms := job.Args.Millis
	if job.Attempts == 1 && job.Args.FirstMillis > 0 {
		ms = job.Args.FirstMillis
	}
	if ms > 0 {
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
	}
	return w.end(ctx, id)
}

func (w *LedgerWorker) end(ctx context.Context, id int64) error {
	q := "UPDATE " + LedgerTable + " SET ended_at = ? WHERE id = ?"
	if w.drv.Dialect() == "postgres" {
		q = "UPDATE " + LedgerTable + " SET ended_at = $1 WHERE id = $2"
	}
	if _, err := w.drv.DB().ExecContext(ctx, q, time.Now().UTC(), id); err != nil {
		return fmt.Errorf("ledger: record end: %w", err)
	}
	return nil
}

func (w *LedgerWorker) start(ctx context.Context, jobID int64, attempt int) (int64, error) {
	now := time.Now().UTC()
	if w.drv.Dialect() == "postgres" {
		var id int64
		err := w.drv.DB().QueryRowContext(ctx, "INSERT INTO "+LedgerTable+" (job_id, attempt, pid, started_at) VALUES ($1, $2, $3, $4) RETURNING id",
			jobID, attempt, w.pid, now).Scan(&id)
		return id, err
	}
	res, err := w.drv.DB().ExecContext(ctx, "INSERT INTO "+LedgerTable+" (job_id, attempt, pid, started_at) VALUES (?, ?, ?, ?)",
		jobID, attempt, w.pid, now)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// execution is one ledger row.
type execution struct {
	jobID    int64
	attempt  int
	pid      int
	complete bool
	// started and ended are the worker's clock (ended zero if it never
	// recorded its end).
	started, ended time.Time
}

// readLedger returns every execution, grouped by job.
func readLedger(ctx context.Context, drv driver.Driver) (map[int64][]execution, int, error) {
	rows, err := drv.DB().QueryContext(ctx, "SELECT job_id, attempt, pid, started_at, ended_at FROM "+LedgerTable+" ORDER BY id")
	if err != nil {
		return nil, 0, fmt.Errorf("chaos: read ledger: %w", err)
	}
	defer rows.Close()
	out := map[int64][]execution{}
	n := 0
	for rows.Next() {
		var e execution
		var ended sql.NullTime
		if err := rows.Scan(&e.jobID, &e.attempt, &e.pid, &e.started, &ended); err != nil {
			return nil, 0, fmt.Errorf("chaos: read ledger: %w", err)
		}
		e.complete, e.ended = ended.Valid, ended.Time
		out[e.jobID] = append(out[e.jobID], e)
		n++
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("chaos: read ledger: %w", err)
	}
	return out, n, nil
}
