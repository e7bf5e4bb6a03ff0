// Package lockview reads the lock waits a database server shows: who waits
// for whom, on which table, index and record. It is what a deterministic
// lock-order test synchronises on ("B's lock wait is visible"), and what the
// lab and the dashboard print.
package lockview

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
)

// Flavor is the server family, which decides where lock waits are shown.
type Flavor string

// The flavors lockview reads.
const (
	MariaDB  Flavor = "mariadb"
	MySQL    Flavor = "mysql"
	Postgres Flavor = "postgres"
)

// Wait is one session waiting for a lock another session holds.
type Wait struct {
	// WaiterID and BlockerID are the sessions' ids (the connection id
	// CONNECTION_ID() returns on MySQL and MariaDB, the PostgreSQL pid);
	// the queries are what they run now (a blocker that is idle in its
	// transaction shows none).
	WaiterID, BlockerID       int64
	WaiterQuery, BlockerQuery string
	// Table, Index, Mode and Data describe the lock waited for, where the
	// server says (PostgreSQL names no index; its row locks are on tuples).
	// Mode is the server's word: MariaDB's X is MySQL's X,REC_NOT_GAP.
	Table, Index, Mode, Data string
	// Waiting is how long the session has waited; on MySQL, which keeps no
	// time a wait started, how long its statement has run.
	Waiting time.Duration
}

func (w Wait) String() string {
	return fmt.Sprintf("session %d waits %s for session %d: %s %s %s %s (%q)", w.WaiterID, w.Waiting.Round(time.Millisecond), w.BlockerID, w.Table, w.Index, w.Mode, w.Data, w.WaiterQuery)
}

// ErrPrivilege is returned when the server refuses to show its lock tables.
var ErrPrivilege = errors.New("lockview: the server refused to show its lock tables; MariaDB needs the PROCESS privilege (GRANT PROCESS ON *.* TO the user), MySQL 8+ SELECT on performance_schema (GRANT SELECT ON performance_schema.* TO the user)")

// Detect asks the server what it is: a version() that names neither
// PostgreSQL nor MariaDB is MySQL, 8.0 or later, whose lock views are in
// performance_schema.
func Detect(ctx context.Context, db *sql.DB) (Flavor, error) {
	var v string
	if err := db.QueryRowContext(ctx, "SELECT version()").Scan(&v); err != nil {
		return "", fmt.Errorf("lockview: detect server: %w", err)
	}
	switch lv := strings.ToLower(v); {
	case strings.Contains(lv, "postgresql"):
		return Postgres, nil
	case strings.Contains(lv, "mariadb"):
		return MariaDB, nil
	}
	return MySQL, nil
}

// Waits returns the lock waits for locks on the current database's tables,
// whichever database the waiting session is connected to: the same waits
// Locks lists as not granted. The lock tables are the server's, and a wait
// on another database's table can block nothing of this one's (OtherWaits
// counts them). On MariaDB the information_schema lock tables are a cache
// that InnoDB refreshes only after 0.1 s without readers: poll no faster
// than PollInterval or it never refreshes. MySQL's performance_schema is
// live. On PostgreSQL a session reaches only its own database's tables,
// so these are the waits of its sessions.
func Waits(ctx context.Context, db *sql.DB, f Flavor) ([]Wait, error) {
	q, err := pick(f, mariadbWaits, mysqlWaits, postgresWaits)
	if err != nil {
		return nil, err
	}
	var out []Wait
	err = read(ctx, db, f, q, func(rows *sql.Rows) error {
		var w Wait
		var micros float64
		if err := rows.Scan(&w.WaiterID, &w.WaiterQuery, &w.BlockerID, &w.BlockerQuery, &w.Table, &w.Index, &w.Mode, &w.Data, &micros); err != nil {
			return err
		}
		w.Waiting = time.Duration(micros) * time.Microsecond
		out = append(out, w)
		return nil
	})
	return out, err
}

// read runs q and hands each row to scan. On PostgreSQL it runs in a
// read-only transaction that turns sequential scans and sorts back on for
// itself: driver/postgres turns them off for the queue's pool (its claim
// plans depend on it), and under those settings the plans over
// pg_stat_activity, pg_locks and the catalogs behind them took seconds,
// past the dashboard's request timeout on a loaded machine.
func read(ctx context.Context, db *sql.DB, f Flavor, q string, scan func(*sql.Rows) error) error {
	var src interface {
		QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	} = db
	if f == Postgres {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return classify(err)
		}
		defer func() { _ = tx.Rollback() }()
		if _, err := tx.ExecContext(ctx, "SELECT set_config('enable_seqscan', 'on', true), set_config('enable_sort', 'on', true)"); err != nil {
			return classify(err)
		}
		src = tx
	}
	rows, err := src.QueryContext(ctx, q)
	if err != nil {
		return classify(err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return fmt.Errorf("lockview: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return classify(err)
	}
	return nil
}

// OtherWaits counts the lock waits the server has on other databases'
// tables: the ones Waits leaves out, counted as Waits lists them (one per
// waiting session and blocking session). It says whether a shared server
// is busy elsewhere without showing another database's statements or key
// values. On PostgreSQL it counts what pg_stat_activity shows of other
// databases' sessions, which may be less without pg_read_all_stats.
func OtherWaits(ctx context.Context, db *sql.DB, f Flavor) (int, error) {
	q, err := pick(f, mariadbOtherWaits, mysqlOtherWaits, postgresOtherWaits)
	if err != nil {
		return 0, err
	}
	var n int
	err = read(ctx, db, f, q, func(rows *sql.Rows) error { return rows.Scan(&n) })
	return n, err
}

// pick chooses the flavor's form of a query.
func pick(f Flavor, mariadb, mysql, postgres string) (string, error) {
	switch f {
	case MariaDB:
		return mariadb, nil
	case MySQL:
		return mysql, nil
	case Postgres:
		return postgres, nil
	}
	return "", fmt.Errorf("lockview: unknown flavor %q", f)
}

// PollInterval is how often WaitFor looks: slower than MariaDB's 0.1 s
// INNODB_TRX cache refresh.
const PollInterval = 150 * time.Millisecond

// WaitFor polls until a lock wait matching match (nil: any) is visible,
// and returns the waits seen then. It gives up when ctx ends or stop
// returns true (say, because the session expected to wait has finished).
func WaitFor(ctx context.Context, db *sql.DB, f Flavor, match func(Wait) bool, stop func() bool) ([]Wait, error) {
	// MariaDB refreshes its cache on a read that comes more than 0.1 s after
	// the previous read. Waiting once before the first read makes that read
	// a refresh, so a wait cached from before this call (a session of the
	// pool that waited earlier) cannot be mistaken for a new one.
	if f == MariaDB {
		if err := pause(ctx); err != nil {
			return nil, err
		}
	}
	for {
		ws, err := Waits(ctx, db, f)
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			if match == nil || match(w) {
				return ws, nil
			}
		}
		if stop != nil && stop() {
			return nil, nil
		}
		if err := pause(ctx); err != nil {
			return nil, err
		}
	}
}

func pause(ctx context.Context) error {
	t := time.NewTimer(PollInterval)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("lockview: gave up waiting: %w", ctx.Err())
	case <-t.C:
		return nil
	}
}

func classify(err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) && (me.Number == 1227 || me.Number == 1142) {
		return fmt.Errorf("%w: %v", ErrPrivilege, err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42501" {
		return fmt.Errorf("%w: %v", ErrPrivilege, err)
	}
	return fmt.Errorf("lockview: %w", err)
}

// MariaDB lists in INNODB_LOCKS only the locks involved in a wait, which
// is all a wait needs.
//
// INNODB_TRX is a cache; PROCESSLIST is not. A cached wait whose session is
// idle now (COMMAND = 'Sleep') is stale and is left out, and the waiter's
// statement comes from PROCESSLIST.INFO.
const mariadbWaitsFrom = `
FROM information_schema.INNODB_LOCK_WAITS w
JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id
JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id
LEFT JOIN information_schema.INNODB_LOCKS l ON l.lock_id = w.requested_lock_id
JOIN information_schema.PROCESSLIST p ON p.ID = r.trx_mysql_thread_id
WHERE p.COMMAND <> 'Sleep'`

// mariadbOwnWait keeps a wait for a lock on the current database's table;
// one whose lock the cache lost (INNODB_LOCKS is cut off when the cache
// is full) by the waiting session's database instead.
const mariadbOwnWait = "COALESCE(" + mariadbOwnTable + ", p.DB <=> DATABASE())"

const mariadbWaits = `SELECT r.trx_mysql_thread_id, COALESCE(p.INFO, ''), b.trx_mysql_thread_id, COALESCE(b.trx_query, ''),
  COALESCE(l.lock_table, ''), COALESCE(l.lock_index, ''), COALESCE(l.lock_mode, ''), COALESCE(l.lock_data, ''),
  COALESCE(TIMESTAMPDIFF(MICROSECOND, r.trx_wait_started, NOW(6)), 0)` + mariadbWaitsFrom + ` AND ` + mariadbOwnWait + `
ORDER BY r.trx_wait_started`

const mariadbOtherWaits = `SELECT COUNT(*)` + mariadbWaitsFrom + ` AND NOT ` + mariadbOwnWait

// mysqlTable names a data_locks row's table as MariaDB's lock tables do:
// `schema`.`table`.
const mysqlTable = "CONCAT('`', l.OBJECT_SCHEMA, '`.`', l.OBJECT_NAME, '`')"

// MySQL 8+ shows lock waits in performance_schema, which is read live
// (information_schema.INNODB_TRX is a cache, like MariaDB's) and needs only
// SELECT on performance_schema, not PROCESS. Its locks name the session by
// performance_schema's THREAD_ID; threads maps that to the PROCESSLIST_ID
// (CONNECTION_ID()) the other servers' ids are. performance_schema keeps no
// time a lock wait started: the waiter's running statement's time stands
// for it (a statement that locked rows before it had to wait counts that
// time too), or PROCESSLIST_TIME, in whole seconds, when the statement
// consumer is off. A blocker with no session (an XA transaction prepared
// by a session that is gone) is session 0.
const mysqlWaits = `SELECT rt.PROCESSLIST_ID, COALESCE(rt.PROCESSLIST_INFO, ''), COALESCE(bt.PROCESSLIST_ID, 0), COALESCE(bt.PROCESSLIST_INFO, ''),
  ` + mysqlTable + `, COALESCE(l.INDEX_NAME, ''), l.LOCK_MODE, COALESCE(l.LOCK_DATA, ''),
  COALESCE((SELECT MAX(s.TIMER_WAIT) FROM performance_schema.events_statements_current s
            WHERE s.THREAD_ID = w.REQUESTING_THREAD_ID AND s.END_EVENT_ID IS NULL) / 1000000, rt.PROCESSLIST_TIME * 1000000, 0) AS waited
FROM performance_schema.data_lock_waits w
JOIN performance_schema.data_locks l ON l.ENGINE = w.ENGINE AND l.ENGINE_LOCK_ID = w.REQUESTING_ENGINE_LOCK_ID
JOIN performance_schema.threads rt ON rt.THREAD_ID = w.REQUESTING_THREAD_ID
LEFT JOIN performance_schema.threads bt ON bt.THREAD_ID = ` + mysqlBlocker + `
WHERE l.OBJECT_SCHEMA = DATABASE()
ORDER BY waited DESC, rt.PROCESSLIST_ID, bt.PROCESSLIST_ID`

// mysqlOtherWaits counts the rows mysqlWaits leaves out.
const mysqlOtherWaits = `SELECT COUNT(*)
FROM performance_schema.data_lock_waits w
JOIN performance_schema.data_locks l ON l.ENGINE = w.ENGINE AND l.ENGINE_LOCK_ID = w.REQUESTING_ENGINE_LOCK_ID
JOIN performance_schema.threads rt ON rt.THREAD_ID = w.REQUESTING_THREAD_ID
WHERE NOT (l.OBJECT_SCHEMA <=> DATABASE())`

// mysqlBlocker and mysqlHolder are the THREAD_ID of the session whose
// transaction blocks a wait or holds a lock. A record lock's THREAD_ID is
// not always that: a row a transaction changed is locked implicitly, and
// the session that runs into it turns that into a lock row of the owner's
// transaction — with its own THREAD_ID (an INSERT that meets a duplicate
// in a unique index waits, by data_lock_waits, for itself). The
// transaction's table locks (IX before any record lock) are always taken
// by its own session.
const (
	mysqlBlocker = `COALESCE((SELECT MIN(o.THREAD_ID) FROM performance_schema.data_locks o
    WHERE o.ENGINE = w.ENGINE AND o.ENGINE_TRANSACTION_ID = w.BLOCKING_ENGINE_TRANSACTION_ID AND o.LOCK_TYPE = 'TABLE'), w.BLOCKING_THREAD_ID)`
	mysqlHolder = `COALESCE((SELECT MIN(o.THREAD_ID) FROM performance_schema.data_locks o
    WHERE o.ENGINE = l.ENGINE AND o.ENGINE_TRANSACTION_ID = l.ENGINE_TRANSACTION_ID AND o.LOCK_TYPE = 'TABLE'), l.THREAD_ID)`
)

// A row lock wait on PostgreSQL is a wait for the holder's transaction id;
// the row is named by the tuple lock the waiter holds meanwhile.
const postgresWaits = `SELECT a.pid, COALESCE(a.query, ''), b.pid, CASE WHEN b.state = 'active' THEN COALESCE(b.query, '') ELSE '' END,
  COALESCE(l.relation::regclass::text, tl.relation::regclass::text, ''), '', COALESCE(l.mode, ''),
  COALESCE(CASE WHEN tl.page IS NOT NULL THEN 'tuple (' || tl.page || ',' || tl.tuple || ')' END, l.locktype || CASE WHEN l.transactionid IS NOT NULL THEN ' ' || l.transactionid ELSE '' END, ''),
  COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - a.state_change) * 1000000, 0)
FROM pg_stat_activity a
CROSS JOIN LATERAL unnest(pg_blocking_pids(a.pid)) AS bp(pid)
JOIN pg_stat_activity b ON b.pid = bp.pid
LEFT JOIN pg_locks l ON l.pid = a.pid AND NOT l.granted
LEFT JOIN LATERAL (SELECT t.relation, t.page, t.tuple FROM pg_locks t WHERE t.pid = a.pid AND t.locktype = 'tuple' LIMIT 1) tl ON true
WHERE a.wait_event_type = 'Lock' AND a.datname = current_database()
ORDER BY a.pid`

const postgresOtherWaits = `SELECT COUNT(*)
FROM pg_stat_activity a
CROSS JOIN LATERAL unnest(pg_blocking_pids(a.pid)) AS bp(pid)
WHERE a.wait_event_type = 'Lock' AND a.datname IS DISTINCT FROM current_database()`

// Lock is one lock in the server's lock table.
type Lock struct {
	// Trx is the transaction id (MySQL/MariaDB) or the virtual transaction
	// (PostgreSQL); Session the thread id or pid.
	Trx     string
	Session int64
	Table   string
	Index   string
	// Mode is the server's word (X, S, "X,REC_NOT_GAP", RowExclusiveLock).
	Mode string
	// Granted is false for a lock being waited for.
	Granted bool
	// Data names the record (the index key on InnoDB, the tuple on
	// PostgreSQL).
	Data string
}

// LocksNote says what the lock table can show on each server.
func LocksNote(f Flavor) string {
	switch f {
	case MariaDB:
		return "MariaDB's information_schema.INNODB_LOCKS lists only locks that are part of a wait: locks no one waits for are not shown"
	case MySQL:
		return "MySQL's performance_schema.data_locks lists every lock InnoDB holds or waits for, table locks (IX) included; X,REC_NOT_GAP locks the record only, X the record and the gap before it, X,GAP only the gap"
	default:
		return "from pg_locks: relation, tuple and transaction locks of sessions in this database"
	}
}

// Locks returns the server's locks on the current database's tables,
// whichever database the session holding or waiting for one is connected
// to: its locks not granted are the waits Waits returns. On MariaDB it
// first waits PollInterval, so that its read comes more than 0.1 s after
// any earlier one and refreshes the cache instead of returning locks that
// may be gone.
func Locks(ctx context.Context, db *sql.DB, f Flavor) ([]Lock, error) {
	q, err := pick(f, mariadbLocks, mysqlLocks, postgresLocks)
	if err != nil {
		return nil, err
	}
	if f == MariaDB {
		if err := pause(ctx); err != nil {
			return nil, err
		}
	}
	var out []Lock
	err = read(ctx, db, f, q, func(rows *sql.Rows) error {
		var l Lock
		if err := rows.Scan(&l.Trx, &l.Session, &l.Table, &l.Index, &l.Mode, &l.Granted, &l.Data); err != nil {
			return err
		}
		out = append(out, l)
		return nil
	})
	return out, err
}

// mariadbOwnTable keeps the locks on the current database's tables:
// MariaDB names a lock's table `schema`.`table`, backticks doubled inside.
const mariadbOwnTable = "LEFT(l.lock_table, CHAR_LENGTH(REPLACE(DATABASE(), '`', '``')) + 3) = CONCAT('`', REPLACE(DATABASE(), '`', '``'), '`.')"

const mariadbLocks = `SELECT CAST(l.lock_trx_id AS CHAR), COALESCE(t.trx_mysql_thread_id, 0), l.lock_table, COALESCE(l.lock_index, ''), l.lock_mode,
  NOT EXISTS (SELECT 1 FROM information_schema.INNODB_LOCK_WAITS w WHERE w.requested_lock_id = l.lock_id),
  COALESCE(l.lock_data, '')
FROM information_schema.INNODB_LOCKS l
LEFT JOIN information_schema.INNODB_TRX t ON t.trx_id = l.lock_trx_id
WHERE ` + mariadbOwnTable + ` AND EXISTS (` + mariadbLiveWait + `)
ORDER BY l.lock_trx_id, l.lock_index, CHAR_LENGTH(l.lock_data), l.lock_data`

// mariadbLiveWait keeps a lock of a wait that Waits shows: INNODB_LOCKS
// lists a lock only for a wait it is part of, and a cached wait whose
// waiting session is idle now is stale, as in mariadbWaits; its locks
// would be a wait the page's other view does not show.
const mariadbLiveWait = `SELECT 1 FROM information_schema.INNODB_LOCK_WAITS lw
  JOIN information_schema.INNODB_TRX lr ON lr.trx_id = lw.requesting_trx_id
  JOIN information_schema.PROCESSLIST lp ON lp.ID = lr.trx_mysql_thread_id
  WHERE (lw.requested_lock_id = l.lock_id OR lw.blocking_lock_id = l.lock_id) AND lp.COMMAND <> 'Sleep'`

// MySQL's data_locks has every lock, table (IX) and record alike, live.
// Shorter lock data first puts 99 before 100 (the keys are text).
const mysqlLocks = `SELECT CAST(l.ENGINE_TRANSACTION_ID AS CHAR), COALESCE(t.PROCESSLIST_ID, 0), ` + mysqlTable + `,
  COALESCE(l.INDEX_NAME, ''), l.LOCK_MODE, l.LOCK_STATUS = 'GRANTED', COALESCE(l.LOCK_DATA, '')
FROM performance_schema.data_locks l
LEFT JOIN performance_schema.threads t ON t.THREAD_ID = ` + mysqlHolder + `
WHERE l.OBJECT_SCHEMA = DATABASE()
ORDER BY l.ENGINE_TRANSACTION_ID, l.LOCK_TYPE DESC, l.INDEX_NAME, CHAR_LENGTH(l.LOCK_DATA), l.LOCK_DATA`

const postgresLocks = `SELECT COALESCE(l.virtualtransaction, ''), l.pid, COALESCE(l.relation::regclass::text, ''), '', l.mode, l.granted,
  CASE WHEN l.locktype = 'tuple' THEN 'tuple (' || l.page || ',' || l.tuple || ')'
       WHEN l.locktype = 'transactionid' THEN 'transaction ' || l.transactionid
       ELSE l.locktype END
FROM pg_locks l
JOIN pg_stat_activity a ON a.pid = l.pid
WHERE a.datname = current_database() AND l.pid <> pg_backend_pid() AND l.locktype IN ('relation', 'tuple', 'transactionid')
ORDER BY l.pid, l.locktype, l.relation`
