package depth

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/postgres"
)

// Postgres measures on PostgreSQL: lockstep's claim on the database
// lockstepDSN names, the literal claim on the database literalDSN names
// (postgres:// URLs; they may be the same). Both must be empty of the
// tables they get. Rows locked are counted with pgrowlocks, which depth
// creates in both databases when it can (it ships with PostgreSQL's
// contrib modules and needs a superuser to create); otherwise from EXPLAIN
// ANALYZE.
func Postgres(ctx context.Context, lockstepDSN, literalDSN string, o Options) (_ *Result, err error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	drv, err := postgres.Open(ctx, lockstepDSN)
	if err != nil {
		return nil, fmt.Errorf("depth: %w", err)
	}
	defer drv.Close()
	if err := migrateEmpty(ctx, drv); err != nil {
		return nil, err
	}
	pgxCfg, err := pgx.ParseConfig(literalDSN)
	if err != nil {
		return nil, fmt.Errorf("depth: literal claim dsn: %w", err)
	}
	// No statement cache: a cached plan would outlive the planner settings
	// literal-index changes, and the two literal claims share their text.
	pgxCfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	literalDB := stdlib.OpenDB(*pgxCfg)
	defer literalDB.Close()
	lit, err := newPgLiteral(ctx, literalDB)
	if err != nil {
		return nil, err
	}
	defer func() {
		if derr := lit.drop(context.WithoutCancel(ctx)); derr != nil && err == nil {
			err = derr
		}
	}()
	ls := &pgLockstep{drv: drv, rowlocks: pgRowlocks(ctx, drv.DB())}
	if !pgRowlocks(ctx, literalDB) {
		ls.rowlocks = false
	}
	lit.rowlocks = ls.rowlocks
	if !ls.rowlocks {
		o.logf("depth: pgrowlocks is not available; rows locked come from EXPLAIN ANALYZE's LockRows node")
	}
	r := &Result{Database: "postgres"}
	if r.Version, err = drv.Version(ctx); err != nil {
		return nil, fmt.Errorf("depth: %w", err)
	}
	r.Points, err = run(ctx, []table{ls, lit}, []claimer{ls, lit, &pgLiteralIndex{lit}}, o)
	return r, err
}

// pgRowlocks creates the pgrowlocks extension, reporting whether it can
// be used.
func pgRowlocks(ctx context.Context, db *sql.DB) bool {
	if _, err := db.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS pgrowlocks"); err != nil {
		return false
	}
	var n int
	return db.QueryRowContext(ctx, "SELECT count(*) FROM pgrowlocks('pg_catalog.pg_class')").Scan(&n) == nil
}

func pgLockMethod(rowlocks bool) string {
	if rowlocks {
		return "pgrowlocks: tuples whose locker is the claim's open transaction"
	}
	return "EXPLAIN ANALYZE: rows out of the LockRows node"
}

// pgAvailableAt makes the rows available in id order, a millisecond
// apart, well before now.
const pgAvailableAt = "now() - interval '1 day' + n * interval '1 millisecond'"

// pgAnalyze vacuums and analyzes the table so that neither hint bits nor
// statistics are left for the claims to set.
func pgAnalyze(ctx context.Context, db *sql.DB, table string) error {
	_, err := db.ExecContext(ctx, "VACUUM (ANALYZE) "+table)
	return err
}

// pgCountLocks counts the tuples of table locked by backend pid.
func pgCountLocks(ctx context.Context, db *sql.DB, table string, pid int64) (int64, error) {
	var n int64
	err := db.QueryRowContext(ctx, "SELECT count(*) FROM pgrowlocks($1) WHERE $2::int = ANY(pids)", table, pid).Scan(&n)
	return n, err
}

// pgExplainLockRows runs EXPLAIN ANALYZE of q inside tx (so it locks what
// q locks) and sums the rows its LockRows nodes let through.
func pgExplainLockRows(ctx context.Context, tx *sql.Tx, q string, args ...any) (int64, error) {
	var doc string
	if err := tx.QueryRowContext(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+q, args...).Scan(&doc); err != nil {
		return 0, err
	}
	var plans []struct{ Plan pgNode }
	if err := json.Unmarshal([]byte(doc), &plans); err != nil {
		return 0, err
	}
	var n int64
	var walk func(pgNode)
	walk = func(p pgNode) {
		if p.NodeType == "LockRows" {
			n += int64(p.ActualRows * max(p.ActualLoops, 1))
		}
		for _, c := range p.Plans {
			walk(c)
		}
	}
	for _, p := range plans {
		walk(p.Plan)
	}
	return n, nil
}

type pgNode struct {
	NodeType    string   `json:"Node Type"`
	ActualRows  float64  `json:"Actual Rows"`
	ActualLoops float64  `json:"Actual Loops"`
	Plans       []pgNode `json:"Plans"`
}

// pgExplain is EXPLAIN (COSTS OFF) of q after the settings, its lines
// joined.
func pgExplain(ctx context.Context, db *sql.DB, settings []string, q string, args ...any) (_ string, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, tx.Rollback()) }()
	for _, s := range settings {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return "", err
		}
	}
	rows, err := tx.QueryContext(ctx, "EXPLAIN (COSTS OFF) "+q, args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			return "", err
		}
		lines = append(lines, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "->")))
	}
	return strings.Join(lines, " / "), rows.Err()
}

type pgLockstep struct {
	drv      *postgres.Driver
	rowlocks bool
}

func (*pgLockstep) name() string         { return "lockstep" }
func (*pgLockstep) isolation() string    { return "READ COMMITTED" }
func (s *pgLockstep) lockMethod() string { return pgLockMethod(s.rowlocks) }

func (s *pgLockstep) insert(ctx context.Context, after, count int, done bool) error {
	status, attempts, finished := "'PENDING'", 0, "NULL::timestamptz"
	if done {
		status, attempts, finished = "'DONE'", 1, pgAvailableAt
	}
	q := fmt.Sprintf(`INSERT INTO lockstep_jobs (id, queue, kind, args, status, priority, available_at, attempts, max_attempts,
  started_at, heartbeat_at, finished_at, error_history, created_at)
SELECT n, 'default', 'depth', '{}', %[1]s, 0, %[2]s, %[3]d, 25, %[4]s, %[4]s, %[4]s, '[]', %[2]s FROM generate_series(%[5]d, %[6]d) AS g(n)`,
		status, pgAvailableAt, attempts, finished, after+1, after+count)
	if _, err := s.drv.DB().ExecContext(ctx, q); err != nil {
		return err
	}
	_, err := s.drv.DB().ExecContext(ctx, "SELECT setval(pg_get_serial_sequence('lockstep_jobs', 'id'), $1::bigint)", after+count)
	return err
}

func (s *pgLockstep) analyze(ctx context.Context) error {
	return pgAnalyze(ctx, s.drv.DB(), "lockstep_jobs")
}

func (s *pgLockstep) claimSQL() string { return s.drv.Catalog().Get("job.claim").SQL }

// plan explains on lockstep's own pool, with its planner settings.
func (s *pgLockstep) plan(ctx context.Context, limit int) (string, error) {
	return pgExplain(ctx, s.drv.DB(), nil, s.claimSQL(), "default", limit, nil) // claimed_by: none
}

func (s *pgLockstep) claim(ctx context.Context, limit int, locks bool) (smp sample, err error) {
	tx, err := s.drv.BeginSQL(ctx)
	if err != nil {
		return smp, err
	}
	defer func() { err = errors.Join(err, tx.Rollback()) }()
	smp.rowsLocked = -1
	if locks && !s.rowlocks {
		n, err := pgExplainLockRows(ctx, tx, s.claimSQL(), "default", limit, nil)
		smp.rowsLocked, smp.claimed = n, int(n)
		return smp, err
	}
	var pid int64
	if locks {
		if err := tx.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			return smp, err
		}
	}
	ex, err := s.drv.UnwrapTx(tx)
	if err != nil {
		return smp, err
	}
	begin := time.Now()
	jobs, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "default", Max: limit})
	smp.took = time.Since(begin)
	if err != nil {
		return smp, err
	}
	smp.claimed = len(jobs)
	if locks {
		smp.rowsLocked, err = pgCountLocks(ctx, s.drv.DB(), "lockstep_jobs", pid)
	}
	return smp, err
}

type pgLiteral struct {
	db       *sql.DB
	rowlocks bool
}

const pgLiteralComment = "lockstep-bench depth scratch table"

func newPgLiteral(ctx context.Context, db *sql.DB) (*pgLiteral, error) {
	var comment sql.NullString
	err := db.QueryRowContext(ctx, "SELECT obj_description(to_regclass('jobs'), 'pg_class')").Scan(&comment)
	if err != nil {
		return nil, fmt.Errorf("depth: look for table jobs: %w", err)
	}
	var exists bool
	if err := db.QueryRowContext(ctx, "SELECT to_regclass('jobs') IS NOT NULL").Scan(&exists); err != nil {
		return nil, fmt.Errorf("depth: look for table jobs: %w", err)
	}
	if exists {
		if comment.String != pgLiteralComment {
			return nil, errors.New("depth: the literal claim's database has a table named jobs that depth did not create; use an empty database")
		}
		if _, err := db.ExecContext(ctx, "DROP TABLE jobs"); err != nil {
			return nil, fmt.Errorf("depth: drop a previous run's jobs: %w", err)
		}
	}
	for _, q := range []string{
		`CREATE TABLE jobs (
  id           bigserial   PRIMARY KEY,
  payload      text        NOT NULL,
  status       varchar(16) NOT NULL,
  available_at timestamptz NOT NULL,
  attempts     integer     NOT NULL DEFAULT 0,
  started_at   timestamptz
)`,
		"CREATE INDEX idx_jobs_status_available_at ON jobs (status, available_at)",
		"COMMENT ON TABLE jobs IS '" + pgLiteralComment + "'",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("depth: create the literal claim's table: %w", err)
		}
	}
	return &pgLiteral{db: db}, nil
}

func (s *pgLiteral) drop(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, "DROP TABLE IF EXISTS jobs"); err != nil {
		return fmt.Errorf("depth: drop the literal claim's table: %w", err)
	}
	return nil
}

func (*pgLiteral) name() string         { return "literal" }
func (*pgLiteral) isolation() string    { return "READ COMMITTED" }
func (s *pgLiteral) lockMethod() string { return pgLockMethod(s.rowlocks) }

func pgLiteralSelect(limit int) string {
	return fmt.Sprintf("SELECT * FROM jobs WHERE status = 'PENDING' AND available_at <= now() ORDER BY id LIMIT %d FOR UPDATE SKIP LOCKED", limit)
}

func (s *pgLiteral) insert(ctx context.Context, after, count int, done bool) error {
	status, attempts, started := "'PENDING'", 0, "NULL::timestamptz"
	if done {
		status, attempts, started = "'DONE'", 1, pgAvailableAt
	}
	_, err := s.db.ExecContext(ctx, fmt.Sprintf("INSERT INTO jobs (id, payload, status, available_at, attempts, started_at) SELECT n, '{}', %s, %s, %d, %s FROM generate_series(%d, %d) AS g(n)",
		status, pgAvailableAt, attempts, started, after+1, after+count))
	return err
}

func (s *pgLiteral) analyze(ctx context.Context) error { return pgAnalyze(ctx, s.db, "jobs") }

// plan explains on a plain pool, with the server's planner settings, as
// the application would run it.
func (s *pgLiteral) plan(ctx context.Context, limit int) (string, error) {
	return pgExplain(ctx, s.db, nil, pgLiteralSelect(limit))
}

func (s *pgLiteral) claim(ctx context.Context, limit int, locks bool) (sample, error) {
	return s.claimWith(ctx, nil, limit, locks)
}

// pgLiteralIndex is the literal claim planned through its index, as
// the planner does when PENDING rows are few: PostgreSQL has no index
// hints, so the transaction turns off plain index scans (and sequential
// scans), which leaves a bitmap scan of idx_jobs_status_available_at and a
// sort by id.
type pgLiteralIndex struct{ *pgLiteral }

var pgLiteralIndexSettings = []string{"SET LOCAL enable_indexscan = off", "SET LOCAL enable_seqscan = off"}

func (*pgLiteralIndex) name() string { return "literal-index" }

func (s *pgLiteralIndex) plan(ctx context.Context, limit int) (string, error) {
	return pgExplain(ctx, s.db, pgLiteralIndexSettings, pgLiteralSelect(limit))
}

func (s *pgLiteralIndex) claim(ctx context.Context, limit int, locks bool) (sample, error) {
	return s.claimWith(ctx, pgLiteralIndexSettings, limit, locks)
}

// claimWith runs the literal claim after the settings (untimed).
func (s *pgLiteral) claimWith(ctx context.Context, settings []string, limit int, locks bool) (smp sample, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return smp, err
	}
	defer func() { err = errors.Join(err, tx.Rollback()) }()
	for _, q := range settings {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return smp, err
		}
	}
	smp.rowsLocked = -1
	if locks && !s.rowlocks {
		n, err := pgExplainLockRows(ctx, tx, pgLiteralSelect(limit))
		smp.rowsLocked, smp.claimed = n, int(n)
		return smp, err
	}
	var pid int64
	if locks {
		if err := tx.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			return smp, err
		}
	}
	begin := time.Now()
	ids, err := literalSelect(ctx, tx, pgLiteralSelect(limit))
	if err != nil {
		return smp, err
	}
	if len(ids) > 0 {
		if _, err := tx.ExecContext(ctx, "UPDATE jobs SET status = 'RUNNING', attempts = attempts + 1, started_at = now() WHERE id IN ("+idList(ids)+")"); err != nil {
			return smp, err
		}
	}
	smp.took, smp.claimed = time.Since(begin), len(ids)
	if locks {
		smp.rowsLocked, err = pgCountLocks(ctx, s.db, "jobs", pid)
	}
	return smp, err
}
