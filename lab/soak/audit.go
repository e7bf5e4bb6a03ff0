package soak

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/lockstep-queue/lockstep/driver"
)

// The audit is the database's own account of every status change of every
// job, written by a trigger inside the transaction that made the change, so
// it cannot disagree with what committed. The table has no secondary index
// and is only ever inserted into while the soak runs: it adds no lock order
// of its own. Its seq grows in commit order per job, because a job's
// changes are serialised by the job row's lock and seq is drawn while that
// lock is held.
const (
	auditTable    = "lockstep_soak_audit"
	auditTrigger  = "lockstep_soak_audit_trg"
	auditFunction = "lockstep_soak_audit_fn" // PostgreSQL only
	// probeTable is where txIsolation commits rows to see whether an open
	// transaction notices them.
	probeTable = "lockstep_soak_probe"
	// auditErrorLen is how much of last_error the audit keeps: enough to
	// tell a reap's message from a worker's error.
	auditErrorLen = 200
)

// The columns: errored is true when the change appended to error_history
// (a failure, retry or reap), snoozed when it raised max_attempts (a
// snooze gives its attempt back that way).
const auditInsert = "INSERT INTO " + auditTable +
	" (job_id, old_status, new_status, attempts, errored, snoozed, last_error) VALUES "

func auditDDL(dialect string) (create, drop []string, err error) {
	switch dialect {
	case "mysql":
		create = []string{
			"CREATE TABLE " + auditTable + " (seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, job_id BIGINT NOT NULL," +
				" old_status VARCHAR(16) NOT NULL, new_status VARCHAR(16) NOT NULL, attempts INT NOT NULL," +
				" errored BOOLEAN NOT NULL, snoozed BOOLEAN NOT NULL, last_error VARCHAR(255) NULL) ENGINE=InnoDB",
			"CREATE TRIGGER " + auditTrigger + " AFTER UPDATE ON lockstep_jobs FOR EACH ROW" +
				" IF NEW.status <> OLD.status THEN " + auditInsert +
				"(NEW.id, OLD.status, NEW.status, NEW.attempts," +
				" JSON_LENGTH(NEW.error_history) <> JSON_LENGTH(OLD.error_history), NEW.max_attempts <> OLD.max_attempts," +
				fmt.Sprintf(" LEFT(NEW.last_error, %d)); END IF", auditErrorLen),
			"CREATE TABLE " + probeTable + " (id BIGINT NOT NULL PRIMARY KEY) ENGINE=InnoDB",
		}
		drop = []string{"DROP TRIGGER IF EXISTS " + auditTrigger, "DROP TABLE IF EXISTS " + auditTable, "DROP TABLE IF EXISTS " + probeTable}
	case "postgres":
		create = []string{
			// A heap without any index: bigserial makes a sequence, not a key.
			"CREATE TABLE " + auditTable + " (seq bigserial, job_id bigint NOT NULL, old_status text NOT NULL," +
				" new_status text NOT NULL, attempts integer NOT NULL, errored boolean NOT NULL, snoozed boolean NOT NULL, last_error text)",
			"CREATE FUNCTION " + auditFunction + "() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN " + auditInsert +
				"(NEW.id, OLD.status, NEW.status, NEW.attempts," +
				" jsonb_array_length(NEW.error_history) <> jsonb_array_length(OLD.error_history), NEW.max_attempts <> OLD.max_attempts," +
				fmt.Sprintf(" left(NEW.last_error, %d)); RETURN NULL; END $$", auditErrorLen),
			"CREATE TRIGGER " + auditTrigger + " AFTER UPDATE ON lockstep_jobs FOR EACH ROW" +
				" WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION " + auditFunction + "()",
			"CREATE TABLE " + probeTable + " (id bigint PRIMARY KEY)",
		}
		drop = []string{
			"DROP TRIGGER IF EXISTS " + auditTrigger + " ON lockstep_jobs",
			"DROP FUNCTION IF EXISTS " + auditFunction + "()",
			"DROP TABLE IF EXISTS " + auditTable,
			"DROP TABLE IF EXISTS " + probeTable,
		}
	case "sqlite":
		create = []string{
			"CREATE TABLE " + auditTable + " (seq INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, old_status TEXT NOT NULL," +
				" new_status TEXT NOT NULL, attempts INTEGER NOT NULL, errored INTEGER NOT NULL, snoozed INTEGER NOT NULL, last_error TEXT)",
			"CREATE TRIGGER " + auditTrigger + " AFTER UPDATE OF status ON lockstep_jobs FOR EACH ROW" +
				" WHEN NEW.status <> OLD.status BEGIN " + auditInsert +
				"(NEW.id, OLD.status, NEW.status, NEW.attempts," +
				" json_array_length(NEW.error_history) <> json_array_length(OLD.error_history), NEW.max_attempts <> OLD.max_attempts," +
				fmt.Sprintf(" substr(NEW.last_error, 1, %d)); END", auditErrorLen),
		}
		drop = []string{"DROP TRIGGER IF EXISTS " + auditTrigger, "DROP TABLE IF EXISTS " + auditTable}
	default:
		return nil, nil, fmt.Errorf("soak: no audit trigger for dialect %q", dialect)
	}
	return create, drop, nil
}

// installAudit creates the audit table and trigger, replacing any left by
// an interrupted soak.
func installAudit(ctx context.Context, drv driver.Driver) error {
	create, _, err := auditDDL(drv.Dialect())
	if err != nil {
		return err
	}
	if err := dropAudit(ctx, drv); err != nil {
		return err
	}
	for _, stmt := range create {
		if _, err := drv.DB().ExecContext(ctx, stmt); err != nil {
			hint := ""
			if drv.Dialect() == "mysql" && strings.Contains(stmt, "TRIGGER") {
				hint = " (creating a trigger needs the TRIGGER privilege, and with binary logging on, SUPER or log_bin_trust_function_creators)"
			}
			return fmt.Errorf("soak: install audit: %w%s", err, hint)
		}
	}
	return nil
}

func dropAudit(ctx context.Context, drv driver.Driver) error {
	_, drop, err := auditDDL(drv.Dialect())
	if err != nil {
		return err
	}
	for _, stmt := range drop {
		if _, err := drv.DB().ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("soak: drop audit: %w", err)
		}
	}
	return nil
}

// transition is one audited status change.
type transition struct {
	seq      int64
	jobID    int64
	from, to driver.JobStatus
	attempts int
	errored  bool
	snoozed  bool
	lastErr  string
}

// readAudit returns every transition, grouped by job, each job's in order.
func readAudit(ctx context.Context, drv driver.Driver) (map[int64][]transition, int, error) {
	rows, err := drv.DB().QueryContext(ctx, "SELECT seq, job_id, old_status, new_status, attempts, errored, snoozed, last_error FROM "+
		auditTable+" ORDER BY seq")
	if err != nil {
		return nil, 0, fmt.Errorf("soak: read audit: %w", err)
	}
	defer rows.Close()
	out := map[int64][]transition{}
	n := 0
	for rows.Next() {
		var t transition
		var from, to string
		var lastErr sql.NullString
		if err := rows.Scan(&t.seq, &t.jobID, &from, &to, &t.attempts, &t.errored, &t.snoozed, &lastErr); err != nil {
			return nil, 0, fmt.Errorf("soak: read audit: %w", err)
		}
		t.from, t.to, t.lastErr = driver.JobStatus(from), driver.JobStatus(to), lastErr.String
		out[t.jobID] = append(out[t.jobID], t)
		n++
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("soak: read audit: %w", err)
	}
	return out, n, nil
}
