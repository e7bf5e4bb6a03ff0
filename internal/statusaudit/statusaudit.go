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
// snooze gives its attempt back that way).
const insert = "INSERT INTO " + Table +
	" (job_id, old_status, new_status, attempts, errored, snoozed, last_error) VALUES "

func ddl(dialect string) (create, drop []string, err error) {
	switch dialect {
	case "mysql":
		create = []string{
			"CREATE TABLE " + Table + " (seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, job_id BIGINT NOT NULL," +
				" old_status VARCHAR(16) NOT NULL, new_status VARCHAR(16) NOT NULL, attempts INT NOT NULL," +
				" errored BOOLEAN NOT NULL, snoozed BOOLEAN NOT NULL, last_error VARCHAR(255) NULL) ENGINE=InnoDB",
			"CREATE TRIGGER " + trigger + " AFTER UPDATE ON lockstep_jobs FOR EACH ROW" +
				" IF NEW.status <> OLD.status THEN " + insert +
				"(NEW.id, OLD.status, NEW.status, NEW.attempts," +
				" JSON_LENGTH(NEW.error_history) <> JSON_LENGTH(OLD.error_history), NEW.max_attempts <> OLD.max_attempts," +
				fmt.Sprintf(" LEFT(NEW.last_error, %d)); END IF", ErrorLen),
		}
		drop = []string{"DROP TRIGGER IF EXISTS " + trigger, "DROP TABLE IF EXISTS " + Table}
	case "postgres":
		create = []string{
			// A heap without any index: bigserial makes a sequence, not a key.
			"CREATE TABLE " + Table + " (seq bigserial, job_id bigint NOT NULL, old_status text NOT NULL," +
				" new_status text NOT NULL, attempts integer NOT NULL, errored boolean NOT NULL, snoozed boolean NOT NULL, last_error text)",
			"CREATE FUNCTION " + function + "() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN " + insert +
				"(NEW.id, OLD.status, NEW.status, NEW.attempts," +
				" jsonb_array_length(NEW.error_history) <> jsonb_array_length(OLD.error_history), NEW.max_attempts <> OLD.max_attempts," +
				fmt.Sprintf(" left(NEW.last_error, %d)); RETURN NULL; END $$", ErrorLen),
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
				" new_status TEXT NOT NULL, attempts INTEGER NOT NULL, errored INTEGER NOT NULL, snoozed INTEGER NOT NULL, last_error TEXT)",
			"CREATE TRIGGER " + trigger + " AFTER UPDATE OF status ON lockstep_jobs FOR EACH ROW" +
				" WHEN NEW.status <> OLD.status BEGIN " + insert +
				"(NEW.id, OLD.status, NEW.status, NEW.attempts," +
				" json_array_length(NEW.error_history) <> json_array_length(OLD.error_history), NEW.max_attempts <> OLD.max_attempts," +
				fmt.Sprintf(" substr(NEW.last_error, 1, %d)); END", ErrorLen),
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
}

// Read returns every transition, grouped by job, each job's in order, and
// how many there are.
func Read(ctx context.Context, drv driver.Driver) (map[int64][]Transition, int, error) {
	rows, err := drv.DB().QueryContext(ctx, "SELECT seq, job_id, old_status, new_status, attempts, errored, snoozed, last_error FROM "+
		Table+" ORDER BY seq")
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
		if err := rows.Scan(&t.Seq, &t.JobID, &from, &to, &t.Attempts, &t.Errored, &t.Snoozed, &lastErr); err != nil {
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
