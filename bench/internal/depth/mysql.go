package depth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/internal/mysqlplan"
	"github.com/lockstep-queue/lockstep/migrate"
)

// MySQL measures on MariaDB (or MySQL 8): lockstep's claim on the database
// lockstepDSN names, the literal claim on the database literalDSN names
// (both go-sql-driver DSNs; they may be the same). Both must be empty of the
// tables they get: depth never empties a table it did not create.
func MySQL(ctx context.Context, lockstepDSN, literalDSN string, o Options) (_ *Result, err error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	drv, err := mysql.Open(ctx, lockstepDSN)
	if err != nil {
		return nil, fmt.Errorf("depth: %w", err)
	}
	defer drv.Close()
	if err := migrateEmpty(ctx, drv); err != nil {
		return nil, err
	}
	cfg, err := gomysql.ParseDSN(literalDSN)
	if err != nil {
		return nil, fmt.Errorf("depth: literal claim dsn: %w", err)
	}
	connector, err := gomysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("depth: literal claim dsn: %w", err)
	}
	literalDB := sql.OpenDB(connector)
	defer literalDB.Close()
	lit, err := newMyLiteral(ctx, literalDB, o.LiteralReadCommitted)
	if err != nil {
		return nil, err
	}
	defer func() {
		if derr := lit.drop(context.WithoutCancel(ctx)); derr != nil && err == nil {
			err = derr
		}
	}()
	r := &Result{Database: "mysql"}
	if drv.MariaDB() {
		r.Database = "mariadb"
	}
	if r.Version, err = drv.Version(ctx); err != nil {
		return nil, fmt.Errorf("depth: %w", err)
	}
	// The lock tables are read through the literal claim's pool: a session
	// that is not the claim's.
	ls := &myLockstep{drv: drv, locks: literalDB}
	r.Points, err = run(ctx, []table{ls, lit}, []claimer{ls, lit, &myLiteralIndex{lit}}, o)
	return r, err
}

// migrateEmpty creates lockstep's schema and refuses a database whose
// lockstep_jobs already holds rows.
func migrateEmpty(ctx context.Context, drv driver.Driver) error {
	m, err := migrate.New(drv)
	if err != nil {
		return fmt.Errorf("depth: %w", err)
	}
	if _, err := m.Up(ctx); err != nil {
		return fmt.Errorf("depth: migrate: %w", err)
	}
	var one int
	err = drv.DB().QueryRowContext(ctx, "SELECT 1 FROM lockstep_jobs LIMIT 1").Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("depth: %w", err)
	}
	return errors.New("depth: lockstep_jobs already holds jobs; depth loads its own and needs an empty database")
}

// myNumbers is a derived table n = 1..10^k (k digits, 10^k >= max) from
// cross-joined digits, which MySQL 8 and MariaDB both accept.
func myNumbers(max int) string {
	digits := "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
	var from, sum []string
	for i, p := 0, 1; p < max || i == 0; i, p = i+1, p*10 {
		from = append(from, fmt.Sprintf("%s d%d", digits, i))
		sum = append(sum, fmt.Sprintf("%d*d%d.d", p, i))
	}
	return fmt.Sprintf("(SELECT %s + 1 AS n FROM %s) nums", strings.Join(sum, " + "), strings.Join(from, ", "))
}

// loadChunk is the rows one loading statement inserts, to keep each
// transaction's undo small.
const loadChunk = 100_000

// myInsert runs insert(first, count) for ids after+1..after+count in
// chunks; the statement inserts ids first+1..first+count.
func myInsert(ctx context.Context, db *sql.DB, after, count int, insert func(first, count int) string) error {
	for first := after; first < after+count; first += loadChunk {
		if _, err := db.ExecContext(ctx, insert(first, min(loadChunk, after+count-first))); err != nil {
			return err
		}
	}
	return nil
}

func myAnalyze(ctx context.Context, db *sql.DB, table string) error {
	rows, err := db.QueryContext(ctx, "ANALYZE TABLE "+table)
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	return errors.Join(rows.Err(), rows.Close())
}

// myAvailableAt makes the rows available in id order, a millisecond
// apart, well before now: jobs enqueued one after the other, all due. The
// %s is the clock, the %d the first id less one.
const myAvailableAt = "%s - INTERVAL 1 DAY + INTERVAL (%d + n) * 1000 MICROSECOND"

type myLockstep struct {
	drv   *mysql.Driver
	locks *sql.DB
}

func (*myLockstep) name() string       { return "lockstep" }
func (*myLockstep) isolation() string  { return "READ COMMITTED" }
func (*myLockstep) lockMethod() string { return myLockMethod }

func (s *myLockstep) insert(ctx context.Context, after, count int, done bool) error {
	return myInsert(ctx, s.drv.DB(), after, count, func(first, count int) string {
		at := fmt.Sprintf(myAvailableAt, "UTC_TIMESTAMP(6)", first)
		status, attempts, finished := "'PENDING'", 0, "NULL"
		if done {
			status, attempts, finished = "'DONE'", 1, at
		}
		return fmt.Sprintf(`INSERT INTO lockstep_jobs (id, queue, kind, args, status, priority, available_at, attempts, max_attempts,
  started_at, heartbeat_at, finished_at, error_history, created_at)
SELECT %[1]d + n, 'default', 'depth', '{}', %[2]s, 0, %[3]s, %[4]d, 25, %[5]s, %[5]s, %[5]s, '[]', %[3]s FROM %[6]s WHERE n <= %[7]d`,
			first, status, at, attempts, finished, myNumbers(count), count)
	})
}

func (s *myLockstep) analyze(ctx context.Context) error {
	return myAnalyze(ctx, s.drv.DB(), "lockstep_jobs")
}

func (s *myLockstep) plan(ctx context.Context, limit int) (string, error) {
	return myExplain(ctx, s.drv.DB(), s.drv.Catalog().Get("job.claim_select").SQL, "default", limit)
}

func (s *myLockstep) claim(ctx context.Context, limit int, locks bool) (smp sample, err error) {
	tx, err := s.drv.BeginSQL(ctx)
	if err != nil {
		return smp, err
	}
	defer func() { err = errors.Join(err, tx.Rollback()) }()
	ex, err := s.drv.UnwrapTx(tx)
	if err != nil {
		return smp, err
	}
	var conn int64
	if locks {
		if err := tx.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&conn); err != nil {
			return smp, err
		}
	}
	begin := time.Now()
	jobs, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "default", Max: limit})
	smp.took = time.Since(begin)
	if err != nil {
		return smp, err
	}
	smp.claimed = len(jobs)
	smp.rowsLocked, smp.lockStructs = -1, -1
	if locks {
		smp.rowsLocked, smp.lockStructs, err = innodbLocks(ctx, s.locks, conn)
	}
	return smp, err
}

type myLiteral struct {
	db          *sql.DB
	txOpts      *sql.TxOptions
	isolationIs string
}

// myLiteralSchema is the one-table queue's jobs table as its queries use
// it, with the (status, available_at) index it adds for its claim.
const myLiteralSchema = `CREATE TABLE jobs (
  id           BIGINT      NOT NULL AUTO_INCREMENT,
  payload      TEXT        NOT NULL,
  status       VARCHAR(16) NOT NULL,
  available_at DATETIME(6) NOT NULL,
  attempts     INT         NOT NULL DEFAULT 0,
  started_at   DATETIME(6) NULL,
  PRIMARY KEY (id),
  KEY idx_jobs_status_available_at (status, available_at)
) ENGINE=InnoDB COMMENT='lockstep-bench depth scratch table'`

const myComment = "lockstep-bench depth scratch table"

func newMyLiteral(ctx context.Context, db *sql.DB, readCommitted bool) (*myLiteral, error) {
	var comment string
	err := db.QueryRowContext(ctx, "SELECT TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'jobs'").Scan(&comment)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return nil, fmt.Errorf("depth: look for table jobs: %w", err)
	case comment != myComment:
		return nil, errors.New("depth: the literal claim's database has a table named jobs that depth did not create; use an empty database")
	default:
		if _, err := db.ExecContext(ctx, "DROP TABLE jobs"); err != nil {
			return nil, fmt.Errorf("depth: drop a previous run's jobs: %w", err)
		}
	}
	if _, err := db.ExecContext(ctx, myLiteralSchema); err != nil {
		return nil, fmt.Errorf("depth: create the literal claim's table: %w", err)
	}
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return nil, fmt.Errorf("depth: read the server version: %w", err)
	}
	if _, err := mysql.CheckVersion(version); err != nil {
		return nil, fmt.Errorf("depth: %w", err)
	}
	s := &myLiteral{db: db}
	if readCommitted {
		s.txOpts, s.isolationIs = &sql.TxOptions{Isolation: sql.LevelReadCommitted}, "READ COMMITTED"
		return s, nil
	}
	// The server's default, as the application would run it, under the
	// variable this server names it by (mysql.IsolationVariable).
	if err := db.QueryRowContext(ctx, "SELECT @@SESSION."+mysql.IsolationVariable(version)).Scan(&s.isolationIs); err != nil {
		return nil, fmt.Errorf("depth: read the default isolation level: %w", err)
	}
	s.isolationIs = strings.ReplaceAll(s.isolationIs, "-", " ")
	return s, nil
}

func (s *myLiteral) drop(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, "DROP TABLE IF EXISTS jobs"); err != nil {
		return fmt.Errorf("depth: drop the literal claim's table: %w", err)
	}
	return nil
}

func (*myLiteral) name() string        { return "literal" }
func (s *myLiteral) isolation() string { return s.isolationIs }
func (*myLiteral) lockMethod() string  { return myLockMethod }

// myLiteralSelect is the literal claim query; hint goes after the table name.
func myLiteralSelect(hint string, limit int) string {
	return fmt.Sprintf("SELECT * FROM jobs%s WHERE status = 'PENDING' AND available_at <= NOW() ORDER BY id LIMIT %d FOR UPDATE SKIP LOCKED", hint, limit)
}

func (s *myLiteral) insert(ctx context.Context, after, count int, done bool) error {
	return myInsert(ctx, s.db, after, count, func(first, count int) string {
		at := fmt.Sprintf(myAvailableAt, "NOW(6)", first)
		status, attempts, started := "'PENDING'", 0, "NULL"
		if done {
			status, attempts, started = "'DONE'", 1, at
		}
		return fmt.Sprintf("INSERT INTO jobs (id, payload, status, available_at, attempts, started_at) SELECT %d + n, '{}', %s, %s, %d, %s FROM %s WHERE n <= %d",
			first, status, at, attempts, started, myNumbers(count), count)
	})
}

func (s *myLiteral) analyze(ctx context.Context) error { return myAnalyze(ctx, s.db, "jobs") }

func (s *myLiteral) plan(ctx context.Context, limit int) (string, error) {
	return myExplain(ctx, s.db, myLiteralSelect("", limit))
}

func (s *myLiteral) claim(ctx context.Context, limit int, locks bool) (sample, error) {
	return s.claimWith(ctx, myLiteralSelect("", limit), locks)
}

// myLiteralIndex is the literal claim made to find its rows through its
// (status, available_at) index, as the optimizer does when PENDING rows
// are few.
type myLiteralIndex struct{ *myLiteral }

const myLiteralHint = " FORCE INDEX (idx_jobs_status_available_at)"

func (*myLiteralIndex) name() string { return "literal-index" }

func (s *myLiteralIndex) plan(ctx context.Context, limit int) (string, error) {
	return myExplain(ctx, s.db, myLiteralSelect(myLiteralHint, limit))
}

func (s *myLiteralIndex) claim(ctx context.Context, limit int, locks bool) (sample, error) {
	return s.claimWith(ctx, myLiteralSelect(myLiteralHint, limit), locks)
}

// claimWith is the literal claim: lock the next PENDING rows with q, then
// mark them RUNNING. Both statements are literal text, as an application
// would send them without server-side prepared statements.
func (s *myLiteral) claimWith(ctx context.Context, q string, locks bool) (smp sample, err error) {
	tx, err := s.db.BeginTx(ctx, s.txOpts)
	if err != nil {
		return smp, err
	}
	defer func() { err = errors.Join(err, tx.Rollback()) }()
	var conn int64
	if locks {
		if err := tx.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&conn); err != nil {
			return smp, err
		}
	}
	begin := time.Now()
	ids, err := literalSelect(ctx, tx, q)
	if err != nil {
		return smp, err
	}
	if len(ids) > 0 {
		if _, err := tx.ExecContext(ctx, "UPDATE jobs SET status = 'RUNNING', attempts = attempts + 1, started_at = NOW() WHERE id IN ("+idList(ids)+")"); err != nil {
			return smp, err
		}
	}
	smp.took, smp.claimed = time.Since(begin), len(ids)
	smp.rowsLocked, smp.lockStructs = -1, -1
	if locks {
		smp.rowsLocked, smp.lockStructs, err = innodbLocks(ctx, s.db, conn)
	}
	return smp, err
}

// literalSelect runs the literal claim's SELECT * and returns the ids (the
// first column), reading every column as the application would.
func literalSelect(ctx context.Context, tx *sql.Tx, q string, args ...any) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	cols, err := rows.Columns()
	if err != nil {
		rows.Close()
		return nil, err
	}
	var ids []int64
	dest := make([]any, len(cols))
	vals := make([]any, len(cols))
	for i := range dest {
		dest[i] = &vals[i]
	}
	var id int64
	dest[0] = &id
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, errors.Join(rows.Err(), rows.Close())
}

const myLockMethod = "information_schema.INNODB_TRX.trx_rows_locked of the claim's open transaction (index records locked: a row locked in a secondary index and the primary key counts twice)"

// innodbLocks reads trx_rows_locked and trx_lock_structs of the
// transaction connection conn holds. INNODB_TRX is a cache InnoDB refreshes
// only when more than 0.1 s passed since its previous read, so each read
// waits longer than that first.
func innodbLocks(ctx context.Context, db *sql.DB, conn int64) (rows, structs int64, err error) {
	for range 10 {
		if err := pause(ctx, 150*time.Millisecond); err != nil {
			return 0, 0, err
		}
		err = db.QueryRowContext(ctx, fmt.Sprintf("SELECT trx_rows_locked, trx_lock_structs FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = %d", conn)).Scan(&rows, &structs)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			continue
		case err != nil:
			return 0, 0, fmt.Errorf("read INNODB_TRX (needs the PROCESS privilege): %w", err)
		}
		if rows > 0 {
			return rows, structs, nil
		}
	}
	return 0, 0, fmt.Errorf("the claim's transaction (connection %d) never showed locks in INNODB_TRX", conn)
}

// myExplain is the classic EXPLAIN of q, one "table: type key rows extra"
// per row. It is read through internal/mysqlplan, which asks the server
// what it is: a bare EXPLAIN on MySQL 9.x prints a TREE, without these
// columns.
func myExplain(ctx context.Context, db *sql.DB, q string, args ...any) (string, error) {
	srv, err := mysqlplan.Detect(ctx, db)
	if err != nil {
		return "", err
	}
	plan, err := srv.Explain(ctx, db, q, args...)
	if err != nil {
		return "", err
	}
	var out []string
	for _, r := range plan.Rows {
		get := func(name string) string {
			if v := r.Columns[name]; v != "" {
				return v
			}
			return "NULL"
		}
		out = append(out, fmt.Sprintf("%s: type=%s key=%s rows≈%s (%s)", get("table"), get("type"), get("key"), get("rows"), get("Extra")))
	}
	return strings.Join(out, "; "), nil
}
