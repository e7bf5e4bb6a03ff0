// Package statusaudit records every status change of every job, written
// by a trigger inside the transaction that made the change, so the record
// cannot disagree with what committed. The soak and the chaos test check
// their runs against it: a job finished twice, or changed after it
// finished, shows in it whatever the queue believed.
//
// The table has no secondary index and is only ever inserted into while a
// check runs: it adds no lock order of its own. Seq grows in commit order
// per job, because a job's changes are serialised by the job row's lock
// and seq is drawn while that lock is held.
package statusaudit

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

const (
	// Table is the audit's table.
	Table    = "lockstep_status_audit"
	trigger  = "lockstep_status_audit_trg"
	function = "lockstep_status_audit_fn" // PostgreSQL only
	// ErrorLen is how much of last_error the audit keeps: enough to tell
	// a reap's message from a worker's error.
	ErrorLen = 200
)

// The columns: errored is true when the change appended to error_history
// (a failure, retry or reap), snoozed when it raised max_attempts (a
// snooze gives its attempt back that way); started_at and finished_at are
// the row's after the change, changed_at the database's clock as it
// happened.
const insert = "INSERT INTO " + Table +
	" (job_id, old_status, new_status, attempts, errored, snoozed, last_error, started_at, finished_at, changed_at) VALUES "

func ddl(dialect string) (create, drop []string, err error) {
	switch dialect {
	case "mysql":
		create = []string{
			"CREATE TABLE " + Table + " (seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, job_id BIGINT NOT NULL," +
				" old_status VARCHAR(16) NOT NULL, new_status VARCHAR(16) NOT NULL, attempts INT NOT NULL," +
				" errored BOOLEAN NOT NULL, snoozed BOOLEAN NOT NULL, last_error VARCHAR(255) NULL," +
				" started_at DATETIME(6) NULL, finished_at DATETIME(6) NULL, changed_at DATETIME(6) NOT NULL) ENGINE=InnoDB",
			"CREATE TRIGGER " + trigger + " AFTER UPDATE ON lockstep_jobs FOR EACH ROW" +
				" IF NEW.status <> OLD.status THEN " + insert +
				"(NEW.id, OLD.status, NEW.status, NEW.attempts," +
				" JSON_LENGTH(NEW.error_history) <> JSON_LENGTH(OLD.error_history), NEW.max_attempts <> OLD.max_attempts," +
				fmt.Sprintf(" LEFT(NEW.last_error, %d), NEW.started_at, NEW.finished_at, UTC_TIMESTAMP(6)); END IF", ErrorLen),
		}
		drop = []string{"DROP TRIGGER IF EXISTS " + trigger, "DROP TABLE IF EXISTS " + Table}
	case "postgres":
		create = []string{
			// A heap without any index: bigserial makes a sequence, not a key.
			"CREATE TABLE " + Table + " (seq bigserial, job_id bigint NOT NULL, old_status text NOT NULL," +
				" new_status text NOT NULL, attempts integer NOT NULL, errored boolean NOT NULL, snoozed boolean NOT NULL, last_error text," +
				" started_at timestamptz, finished_at timestamptz, changed_at timestamptz NOT NULL)",
			"CREATE FUNCTION " + function + "() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN " + insert +
				"(NEW.id, OLD.status, NEW.status, NEW.attempts," +
				" jsonb_array_length(NEW.error_history) <> jsonb_array_length(OLD.error_history), NEW.max_attempts <> OLD.max_attempts," +
				fmt.Sprintf(" left(NEW.last_error, %d), NEW.started_at, NEW.finished_at, clock_timestamp()); RETURN NULL; END $$", ErrorLen),
			"CREATE TRIGGER " + trigger + " AFTER UPDATE ON lockstep_jobs FOR EACH ROW" +
				" WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION " + function + "()",
		}
		drop = []string{
			"DROP TRIGGER IF EXISTS " + trigger + " ON lockstep_jobs",
			"DROP FUNCTION IF EXISTS " + function + "()",
			"DROP TABLE IF EXISTS " + Table,
		}
	case "sqlite":
		create = []string{
			"CREATE TABLE " + Table + " (seq INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, old_status TEXT NOT NULL," +
				" new_status TEXT NOT NULL, attempts INTEGER NOT NULL, errored INTEGER NOT NULL, snoozed INTEGER NOT NULL, last_error TEXT," +
				" started_at TEXT, finished_at TEXT, changed_at TEXT NOT NULL)",
			"CREATE TRIGGER " + trigger + " AFTER UPDATE OF status ON lockstep_jobs FOR EACH ROW" +
				" WHEN NEW.status <> OLD.status BEGIN " + insert +
				"(NEW.id, OLD.status, NEW.status, NEW.attempts," +
				" json_array_length(NEW.error_history) <> json_array_length(OLD.error_history), NEW.max_attempts <> OLD.max_attempts," +
				fmt.Sprintf(" substr(NEW.last_error, 1, %d), NEW.started_at, NEW.finished_at, strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now')); END", ErrorLen),
		}
		drop = []string{"DROP TRIGGER IF EXISTS " + trigger, "DROP TABLE IF EXISTS " + Table}
	default:
		return nil, nil, fmt.Errorf("statusaudit: no trigger for dialect %q", dialect)
	}
	return create, drop, nil
}

// Install creates the audit table and trigger, replacing any left by an
// interrupted check.
func Install(ctx context.Context, drv driver.Driver) error {
	create, _, err := ddl(drv.Dialect())
	if err != nil {
		return err
	}
	if err := Drop(ctx, drv); err != nil {
		return err
	}
	for _, stmt := range create {
		if _, err := drv.DB().ExecContext(ctx, stmt); err != nil {
			hint := ""
			if drv.Dialect() == "mysql" && strings.Contains(stmt, "TRIGGER") {
				hint = " (creating a trigger needs the TRIGGER privilege, and with binary logging on, SUPER or log_bin_trust_function_creators)"
			}
			return fmt.Errorf("statusaudit: install: %w%s", err, hint)
		}
	}
	return nil
}

// Drop removes the trigger and the table.
func Drop(ctx context.Context, drv driver.Driver) error {
	_, drop, err := ddl(drv.Dialect())
	if err != nil {
		return err
	}
	for _, stmt := range drop {
		if _, err := drv.DB().ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("statusaudit: drop: %w", err)
		}
	}
	return nil
}

// Transition is one audited status change.
type Transition struct {
	Seq      int64
	JobID    int64
	From, To rowtype.JobStatus
	Attempts int
	// Errored: the change appended to the error history.
	Errored bool
	// Snoozed: the change raised max_attempts.
	Snoozed bool
	// LastError: the first ErrorLen characters of last_error.
	LastError string
	// StartedAt and FinishedAt are the row's after the change (zero when
	// NULL): a claim's StartedAt is the database's clock of the claim, the
	// instant a rate limit counts.
	StartedAt, FinishedAt time.Time
	// ChangedAt is the database's clock when the change was written (on
	// MySQL the clock of the statement that made it).
	ChangedAt time.Time
}

// Read returns every transition, grouped by job, each job's in order, and
// how many there are.
func Read(ctx context.Context, drv driver.Driver) (map[int64][]Transition, int, error) {
	rows, err := drv.DB().QueryContext(ctx, "SELECT seq, job_id, old_status, new_status, attempts, errored, snoozed, last_error,"+
		" started_at, finished_at, changed_at FROM "+Table+" ORDER BY seq")
	if err != nil {
		return nil, 0, fmt.Errorf("statusaudit: read: %w", err)
	}
	defer rows.Close()
	out := map[int64][]Transition{}
	n := 0
	for rows.Next() {
		var t Transition
		var from, to string
		var lastErr sql.NullString
		if err := rows.Scan(&t.Seq, &t.JobID, &from, &to, &t.Attempts, &t.Errored, &t.Snoozed, &lastErr,
			nullTime{&t.StartedAt}, nullTime{&t.FinishedAt}, nullTime{&t.ChangedAt}); err != nil {
			return nil, 0, fmt.Errorf("statusaudit: read: %w", err)
		}
		t.From, t.To, t.LastError = rowtype.JobStatus(from), rowtype.JobStatus(to), lastErr.String
		out[t.JobID] = append(out[t.JobID], t)
		n++
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("statusaudit: read: %w", err)
	}
	return out, n, nil
}

// nullTime scans a nullable timestamp as each driver returns it: a
// time.Time (MySQL with parseTime, PostgreSQL) or SQLite's text.
type nullTime struct{ t *time.Time }

func (n nullTime) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*n.t = time.Time{}
		return nil
	case time.Time:
		*n.t = v.UTC()
		return nil
	case []byte:
		src = string(v)
	}
	s, ok := src.(string)
	if !ok {
		return fmt.Errorf("statusaudit: scan time: unsupported type %T", src)
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", time.RFC3339Nano, "2006-01-02 15:04:05.999999999-07:00", "2006-01-02T15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			*n.t = t.UTC()
			return nil
		}
	}
	return fmt.Errorf("statusaudit: scan time: cannot parse %q", s)
}

// Allowed reports whether the queue ever changes a job from one status to
// another. The changes, by what makes them:
//
//	PENDING → RUNNING          a claim (the only change that adds an attempt)
//	PENDING → BLOCKED          a claim of a limited queue: the job's key is at
//	                           its limit, or earlier jobs of its sequence live
//	BLOCKED → PENDING          a release: its key has room again
//	RUNNING → DONE | FAILED    the worker's result, or the reaper (FAILED)
//	RUNNING → PENDING          a retry, a snooze, the reaper
//	WAITING → PENDING          a promotion: its dependencies ended
//	FAILED → PENDING           RetryJob
//	CANCELLED → WAITING|PENDING a revival: the failure that cancelled it was retried
//	WAITING|PENDING|BLOCKED|RUNNING → CANCELLED
//
// Whether a revival or a RetryJob was asked for is the caller's to know.
func Allowed(from, to rowtype.JobStatus) bool {
	const (
		waiting   = rowtype.StatusWaiting
		pending   = rowtype.StatusPending
		blocked   = rowtype.StatusBlocked
		running   = rowtype.StatusRunning
		done      = rowtype.StatusDone
		failed    = rowtype.StatusFailed
		cancelled = rowtype.StatusCancelled
	)
	switch from {
	case pending:
		return to == running || to == blocked || to == cancelled
	case blocked:
		return to == pending || to == cancelled
	case running:
		return to == done || to == failed || to == pending || to == cancelled
	case waiting:
		return to == pending || to == cancelled
	case failed:
		return to == pending
	case cancelled:
		return to == waiting || to == pending
	}
	return false
}

// Attempts is how many attempts a change adds: one for a claim, none for
// any other (a snooze gives its attempt back through max_attempts).
func Attempts(from, to rowtype.JobStatus) int {
	if from == rowtype.StatusPending && to == rowtype.StatusRunning {
		return 1
	}
	return 0
}

// TimesProblem says what is wrong with a change's finished_at (or a
// claim's started_at), or "" when nothing is. A job that is not final has
// no finished_at; DONE and FAILED have one; CANCELLED has one, unless the
// job was cancelled while RUNNING: its slot is held, and finished_at stays
// NULL, until its worker returns (job.release sets it, a change of no
// status, which the audit does not see) — or for good if the worker died.
func TimesProblem(t Transition) string {
	switch {
	case !t.To.Final() && !t.FinishedAt.IsZero():
		return fmt.Sprintf("%s→%s left finished_at %s set on a job that is not final", t.From, t.To, t.FinishedAt.Format(time.RFC3339Nano))
	case (t.To == rowtype.StatusDone || t.To == rowtype.StatusFailed) && t.FinishedAt.IsZero():
		return fmt.Sprintf("%s→%s did not set finished_at", t.From, t.To)
	case t.To == rowtype.StatusCancelled && t.From == rowtype.StatusRunning && !t.FinishedAt.IsZero():
		return "RUNNING→CANCELLED set finished_at: the cancelled job's worker may still run it, and its slot must stay held"
	case t.To == rowtype.StatusCancelled && t.From != rowtype.StatusRunning && t.FinishedAt.IsZero():
		return fmt.Sprintf("%s→CANCELLED did not set finished_at", t.From)
	case t.To == rowtype.StatusRunning && t.StartedAt.IsZero():
		return "a claim did not set started_at"
	}
	return ""
}
