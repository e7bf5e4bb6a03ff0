package planguard

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/lockstep-queue/lockstep/internal/mysqlplan"
)

// mysqlDialect reads plans through internal/mysqlplan, which asks each
// server in its own words (MariaDB: EXPLAIN, ANALYZE; MySQL: EXPLAIN
// FORMAT=TRADITIONAL, EXPLAIN ANALYZE) and returns the same facts.
type mysqlDialect struct {
	srv mysqlplan.Server
}

func newMySQLDialect(ctx context.Context, db *sql.DB) (mysqlDialect, error) {
	srv, err := mysqlplan.Detect(ctx, db)
	if err != nil {
		return mysqlDialect{}, fmt.Errorf("planguard: %w", err)
	}
	return mysqlDialect{srv: srv}, nil
}

func (mysqlDialect) locksIndexRecords() bool { return true }

func (mysqlDialect) rebind(q string) string { return q }

func (m mysqlDialect) explain(ctx context.Context, q querier, sqlText string, args []any) (Plan, error) {
	p, err := m.srv.Explain(ctx, q, sqlText, args...)
	if err != nil {
		return Plan{}, err
	}
	return fromMySQL(p), nil
}

// analyzeClaim: ANALYZE (EXPLAIN ANALYZE on MySQL) runs the statement, so
// the claim runs in a transaction that is rolled back; what each access
// read is what it really read. Index condition pushdown is off for it:
// with it, InnoDB drops the entries that fail a condition on the index's
// columns before the server counts a row, so a claim that reads from the
// queue's head past every entry before its key would be measured as
// reading only what it returned (MariaDB's Handler_icp_attempts sees
// them; neither ANALYZE does). The access path is the same either way.
func (m mysqlDialect) analyzeClaim(ctx context.Context, db *sql.DB, sqlText string, args []any) (Plan, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return Plan{}, err
	}
	defer func() { _ = conn.Close() }()
	if _, err := conn.ExecContext(ctx, "SET SESSION optimizer_switch = 'index_condition_pushdown=off'"); err != nil {
		return Plan{}, err
	}
	// The connection goes back to the pool as it came.
	defer func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "SET SESSION optimizer_switch = 'index_condition_pushdown=on'")
	}()
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return Plan{}, err
	}
	defer func() { _ = tx.Rollback() }()
	p, err := m.srv.Analyze(ctx, tx, sqlText, args...)
	if err != nil {
		return Plan{}, err
	}
	return fromMySQL(p), nil
}

// fromMySQL keeps the rows that read a table: a row with none (MariaDB's
// "Impossible WHERE noticed after reading const tables", MySQL's "no
// matching row in const table") leaves the statement with no access, which
// judge reports.
func fromMySQL(p mysqlplan.Plan) Plan {
	out := Plan{Raw: p.Raw, Sorts: p.Sorts()}
	for _, r := range p.Rows {
		if r.Table == "" {
			continue
		}
		out.Accesses = append(out.Accesses, Access{Table: r.Table, Index: r.Key, Method: r.Type, Rows: r.Rows, ReadRows: r.Read})
	}
	return out
}

// numbers is a derived table of n = 1..max from cross-joined digits: it
// works on MySQL 8 and MariaDB alike (MariaDB's seq_1_to_N engine does
// not exist on MySQL, and recursive CTEs are capped at 1,000 there).
func numbers(max int) string {
	digits := "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
	var from, sum []string
	for i, p := 0, 1; p < max || i == 0; i, p = i+1, p*10 {
		from = append(from, fmt.Sprintf("%s d%d", digits, i))
		sum = append(sum, fmt.Sprintf("%d*d%d.d", p, i))
	}
	return fmt.Sprintf("(SELECT %s + 1 AS n FROM %s) nums", strings.Join(sum, " + "), strings.Join(from, ", "))
}

func (mysqlDialect) load(ctx context.Context, db *sql.DB, d Distribution) error {
	stmts := []string{"TRUNCATE TABLE lockstep_jobs", "TRUNCATE TABLE lockstep_runs", "TRUNCATE TABLE lockstep_job_deps",
		"TRUNCATE TABLE lockstep_queues", "TRUNCATE TABLE lockstep_limit_keys", "TRUNCATE TABLE lockstep_limit_starts",
		"TRUNCATE TABLE lockstep_processes", "TRUNCATE TABLE lockstep_history"}
	if runs := d.Runs(); runs > 0 {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO lockstep_runs (id, name, status, created_at) SELECT n, CONCAT('planguard-', n), 'ACTIVE', UTC_TIMESTAMP(6) FROM %s WHERE n <= %d", numbers(runs), runs))
	}
	if d.Jobs > 0 {
		queue := "'default'"
		if d.Queues > 1 {
			queue = fmt.Sprintf("CONCAT('q', n %% %d)", d.Queues)
		}
		run := "NULL"
		if d.RunSize > 0 {
			run = fmt.Sprintf("(n - 1) DIV %d + 1", d.RunSize)
		}
		key := d.LimitKey
		if key == "" {
			key = "NULL"
		}
		const past = "UTC_TIMESTAMP(6) - INTERVAL 1 HOUR"
		// Every job is unique by its own key, held while PENDING, BLOCKED
		// or RUNNING, so the unique index is as full as the live jobs. A
		// BLOCKED job's heartbeat_at is when it was blocked; a job
		// cancelled while running (CANCELLING) keeps a fresh heartbeat and
		// no finished_at.
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO lockstep_jobs (id, run_id, queue, kind, args, status, priority, available_at, attempts, max_attempts, started_at, heartbeat_at, finished_at, error_history, created_at, unique_key, unique_states, limit_key)
SELECT n, %[1]s, %[2]s, 'planguard', '{}', IF(st = 'CANCELLING', 'CANCELLED', st), 0, %[3]s, IF(st IN ('PENDING', 'WAITING', 'BLOCKED'), 0, 1), 25,
  IF(st IN ('PENDING', 'WAITING', 'BLOCKED'), NULL, %[3]s), IF(st IN ('PENDING', 'WAITING'), NULL, IF(st = 'CANCELLING', UTC_TIMESTAMP(6), %[3]s)),
  IF(st IN ('PENDING', 'RUNNING', 'WAITING', 'BLOCKED', 'CANCELLING'), NULL, %[3]s), '[]', %[3]s, LOWER(LPAD(HEX(n), 64, '0')), 3, lk
FROM (SELECT n, %[4]s AS st, %[7]s AS lk FROM %[5]s WHERE n <= %[6]d) s`, run, queue, past, d.Status, numbers(d.Jobs), d.Jobs, key))
	}
	for _, e := range d.Edges {
		where := "TRUE"
		if e.Where != "" {
			where = e.Where
		}
		stmts = append(stmts, fmt.Sprintf("INSERT IGNORE INTO lockstep_job_deps (job_id, depends_on) SELECT %s, %s FROM %s WHERE n <= %d AND %s", e.Job, e.On, numbers(e.Count), e.Count, where))
	}
	// Every queue limited; a row per key; the starts of the RUNNING and
	// cancelling jobs (per key, and the queue's own under ''), and old
	// starts of some finished ones, which a claim would prune.
	stmts = append(stmts,
		"INSERT INTO lockstep_queues (name, concurrency, key_concurrency, sequence, rate, rate_period_us, rate_by_key, updated_at)"+
			" SELECT DISTINCT queue, "+limitsSQL+", UTC_TIMESTAMP(6) FROM lockstep_jobs",
		"INSERT INTO lockstep_limit_keys (queue, limit_key, created_at) SELECT DISTINCT queue, limit_key, UTC_TIMESTAMP(6) FROM lockstep_jobs WHERE limit_key IS NOT NULL",
		"INSERT INTO lockstep_limit_starts (queue, limit_key, started_at, job_id) SELECT queue, limit_key, started_at, id FROM lockstep_jobs"+
			" WHERE limit_key IS NOT NULL AND started_at IS NOT NULL AND (finished_at IS NULL OR id % 97 = 0)",
		"INSERT INTO lockstep_limit_starts (queue, limit_key, started_at, job_id) SELECT queue, '', started_at, id FROM lockstep_jobs WHERE status = 'RUNNING'",
		// processRows processes, the RUNNING jobs claimed by them in turn.
		fmt.Sprintf("INSERT INTO lockstep_processes (id, host, pid, version, queues, workers, started_at, heartbeat_at)"+
			" SELECT CONCAT('planguard-', n), 'planguard', n, '(devel)', 'default=10', 10, UTC_TIMESTAMP(6) - INTERVAL 1 HOUR, UTC_TIMESTAMP(6) - INTERVAL n SECOND FROM %s WHERE n <= %d", numbers(processRows), processRows),
		fmt.Sprintf("UPDATE lockstep_jobs SET claimed_by = CONCAT('planguard-', id %% %d + 1) WHERE status = 'RUNNING'", processRows),
		// Three days of history per queue, a row a minute.
		"INSERT INTO lockstep_history (bucket, queue, kind, done, failed, retried, cancelled, run_ms)"+
			" SELECT CAST(DATE_FORMAT(UTC_TIMESTAMP() - INTERVAL n MINUTE, '%Y-%m-%d %H:%i:00') AS DATETIME), q.queue, 'planguard', n % 50, n % 3, n % 5, n % 7, n * 10"+
			" FROM "+numbers(historyMinutes)+" CROSS JOIN (SELECT DISTINCT queue FROM lockstep_jobs) q WHERE n <= "+fmt.Sprint(historyMinutes),
		"ANALYZE TABLE lockstep_jobs, lockstep_runs, lockstep_job_deps, lockstep_queues, lockstep_limit_keys, lockstep_limit_starts, lockstep_processes, lockstep_history")
	for _, s := range stmts {
		if err := drain(ctx, db, s); err != nil {
			return err
		}
	}
	return nil
}

// drain runs a statement and reads whatever it returns (ANALYZE TABLE
// answers with a result set).
func drain(ctx context.Context, db *sql.DB, q string) error {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("%s: %w", oneLine(q), err)
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return fmt.Errorf("%s: %w", oneLine(q), err)
	}
	return rows.Close()
}
