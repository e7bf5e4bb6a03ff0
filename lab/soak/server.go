package soak

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// deadlockReading is the server's deadlock counter at one moment.
type deadlockReading struct {
	counted bool   // false where the database has no counter (SQLite)
	source  string // what was read
	value   int64
	// backends is, on PostgreSQL, how many other client sessions were
	// connected to the database when the reading was taken.
	backends int
}

// readDeadlocks reads the server's deadlock counter on one connection.
// PostgreSQL backends publish their statistics asynchronously and at exit,
// and a session caches what it read: the snapshot is cleared first, and
// the "after" reading is taken by a fresh session once the soak's own
// backends are gone (waitBackends).
func readDeadlocks(ctx context.Context, drv driver.Driver) (deadlockReading, error) {
	switch drv.Dialect() {
	case "mysql":
		return readInnoDBDeadlocks(ctx, drv.DB())
	case "postgres":
		conn, err := drv.DB().Conn(ctx)
		if err != nil {
			return deadlockReading{}, fmt.Errorf("soak: read pg_stat_database: %w", err)
		}
		defer conn.Close()
		r := deadlockReading{counted: true, source: "pg_stat_database.deadlocks (this database)"}
		if _, err := conn.ExecContext(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
			return r, fmt.Errorf("soak: pg_stat_clear_snapshot: %w", err)
		}
		err = conn.QueryRowContext(ctx, "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()").Scan(&r.value)
		if err != nil {
			return r, fmt.Errorf("soak: read pg_stat_database: %w", err)
		}
		r.backends, err = otherBackends(ctx, conn)
		return r, err
	default:
		return deadlockReading{source: "n/a (" + drv.Dialect() + " has no deadlock counter)"}, nil
	}
}

// readInnoDBDeadlocks reads InnoDB's server-wide deadlock count. MariaDB
// publishes it as the status variable Innodb_deadlocks; Oracle MySQL has no
// such variable (SHOW GLOBAL STATUS returns no row for it) and counts
// deadlocks in information_schema.INNODB_METRICS as lock_deadlocks, a
// counter enabled by default. What the server answers decides which one is
// read.
func readInnoDBDeadlocks(ctx context.Context, db *sql.DB) (deadlockReading, error) {
	var name, value string
	err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'").Scan(&name, &value)
	switch {
	case err == nil:
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return deadlockReading{}, fmt.Errorf("soak: read Innodb_deadlocks: %q is not a number", value)
		}
		return deadlockReading{counted: true, source: "Innodb_deadlocks (server-wide)", value: n}, nil
	case !errors.Is(err, sql.ErrNoRows):
		return deadlockReading{}, fmt.Errorf("soak: read Innodb_deadlocks: %w", err)
	}
	var n int64
	var status string
	err = db.QueryRowContext(ctx, "SELECT COUNT, STATUS FROM information_schema.INNODB_METRICS WHERE NAME = 'lock_deadlocks'").Scan(&n, &status)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return deadlockReading{}, errors.New("soak: the server counts deadlocks neither in Innodb_deadlocks nor in INNODB_METRICS lock_deadlocks")
	case err != nil:
		return deadlockReading{}, fmt.Errorf("soak: read INNODB_METRICS lock_deadlocks (needs the PROCESS privilege): %w", err)
	case status != "enabled":
		return deadlockReading{}, fmt.Errorf("soak: the INNODB_METRICS counter lock_deadlocks is %s: SET GLOBAL innodb_monitor_enable = 'lock_deadlocks'", status)
	}
	return deadlockReading{counted: true, source: "INNODB_METRICS lock_deadlocks (server-wide)", value: n}, nil
}

func otherBackends(ctx context.Context, conn *sql.Conn) (int, error) {
	var n int
	err := conn.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"+
		" AND pid <> pg_backend_pid() AND backend_type = 'client backend'").Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("soak: read pg_stat_activity: %w", err)
	}
	return n, nil
}

// waitBackends waits, on PostgreSQL, until no more client sessions are
// connected to the database than before the soak: a backend flushes its
// statistics, deadlocks included, before it leaves pg_stat_activity. It
// reports false if they were still there at the deadline.
func waitBackends(ctx context.Context, drv driver.Driver, baseline int, timeout time.Duration) (bool, error) {
	if drv.Dialect() != "postgres" {
		return true, nil
	}
	conn, err := drv.DB().Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("soak: wait for backends: %w", err)
	}
	defer conn.Close()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		n, err := otherBackends(ctx, conn)
		if err != nil {
			return false, err
		}
		if n <= baseline {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-tick.C:
		}
	}
}

// statusCounts counts jobs by status: a plain, non-locking read.
func statusCounts(ctx context.Context, drv driver.Driver) (map[rowtype.JobStatus]int, error) {
	rows, err := drv.DB().QueryContext(ctx, "SELECT status, COUNT(*) FROM lockstep_jobs GROUP BY status")
	if err != nil {
		return nil, fmt.Errorf("soak: count jobs: %w", err)
	}
	defer rows.Close()
	out := map[rowtype.JobStatus]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			return nil, fmt.Errorf("soak: count jobs: %w", err)
		}
		out[rowtype.JobStatus(s)] = n
	}
	return out, rows.Err()
}

// sessionIsolation reads the isolation level the pool's sessions start at.
func sessionIsolation(ctx context.Context, drv driver.Driver) (string, error) {
	var q string
	switch drv.Dialect() {
	case "mysql":
		version, err := drv.Version(ctx)
		if err != nil {
			return "", fmt.Errorf("soak: read session isolation level: %w", err)
		}
		q = "SELECT @@SESSION." + mysql.IsolationVariable(version)
	case "postgres":
		q = "SHOW transaction_isolation"
	default:
		return "SERIALIZABLE", nil // SQLite: one writer at a time
	}
	var v string
	if err := drv.DB().QueryRowContext(ctx, q).Scan(&v); err != nil {
		return "", fmt.Errorf("soak: read session isolation level: %w", err)
	}
	return v, nil
}

// Isolation levels as observed in a queue transaction.
const (
	observedReadCommitted  = "READ COMMITTED"
	observedRepeatableRead = "REPEATABLE READ"
	observedSerializable   = "SERIALIZABLE"
)

// txIsolation observes the isolation of the queue's own transactions by
// what they do: one opened as the queue opens them reads the probe table,
// another session commits a row into it (with the unique id n), and the
// transaction reads again. READ COMMITTED sees the row; REPEATABLE READ
// keeps its snapshot. Asking is no help: inside a transaction begun with
// SET TRANSACTION ISOLATION LEVEL, MariaDB's @@tx_isolation and
// INNODB_TRX.trx_isolation_level both report the session's level.
func txIsolation(ctx context.Context, drv, writer driver.Driver, n int) (string, error) {
	if drv.Dialect() == "sqlite" {
		// BEGIN IMMEDIATE holds the only write lock: the other session's
		// insert would wait for it. One writer at a time is serializable.
		return observedSerializable, nil
	}
	tx, err := drv.BeginSQL(ctx)
	if err != nil {
		return "", fmt.Errorf("soak: observe isolation: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	count := "SELECT COUNT(*) FROM " + probeTable
	var before, after int
	if err := tx.QueryRowContext(ctx, count).Scan(&before); err != nil {
		return "", fmt.Errorf("soak: observe isolation: %w", err)
	}
	if _, err := writer.DB().ExecContext(ctx, fmt.Sprintf("INSERT INTO %s (id) VALUES (%d)", probeTable, n)); err != nil {
		return "", fmt.Errorf("soak: observe isolation: %w", err)
	}
	if err := tx.QueryRowContext(ctx, count).Scan(&after); err != nil {
		return "", fmt.Errorf("soak: observe isolation: %w", err)
	}
	if after == before {
		return observedRepeatableRead, nil
	}
	return observedReadCommitted, nil
}

// probeDeadlocks takes the "before" reading on a pool of its own.
func (s *soak) probeDeadlocks(ctx context.Context) (deadlockReading, error) {
	drv, err := s.cfg.Open(ctx)
	if err != nil {
		return deadlockReading{}, fmt.Errorf("soak: open: %w", err)
	}
	defer drv.Close()
	return readDeadlocks(ctx, drv)
}

// afterDeadlocks takes the "after" reading from a fresh pool, once every
// pool the soak used is closed and, on PostgreSQL, their backends are gone.
func (s *soak) afterDeadlocks(ctx context.Context, before deadlockReading) (deadlockReading, string, error) {
	drv, err := s.cfg.Open(ctx)
	if err != nil {
		return deadlockReading{}, "", fmt.Errorf("soak: open: %w", err)
	}
	defer drv.Close()
	gone, err := waitBackends(ctx, drv, before.backends, backendsTimeout)
	if err != nil {
		return deadlockReading{}, "", err
	}
	note := ""
	if !gone {
		note = fmt.Sprintf("more sessions than before the soak were still connected %s after its pools closed; deadlocks they hit may not be counted yet", backendsTimeout)
	}
	after, err := readDeadlocks(ctx, drv)
	return after, note, err
}
