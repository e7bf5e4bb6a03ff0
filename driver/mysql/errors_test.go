package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"

	"github.com/lockstep-queue/lockstep/driver/drivertest"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// waitLockWait waits until the server shows a transaction in LOCK WAIT:
// observable state, not a sleep. INNODB_TRX is a cache InnoDB refreshes
// only after 0.1 s without readers, so it is polled less often than that.
func waitLockWait(t *testing.T, db *sql.DB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'").Scan(&n))
		if n > 0 {
			return
		}
		require.False(t, time.Now().After(deadline), "no lock wait became visible")
		time.Sleep(150 * time.Millisecond)
	}
}

func twoRowTable(t *testing.T, db *sql.DB) {
	t.Helper()
	_, err := db.Exec("CREATE TABLE pair (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO pair VALUES (1, 0), (2, 0)")
	require.NoError(t, err)
}

// TestClassifiesRealErrors provokes a real deadlock (1213) and a real lock
// wait timeout (1205) and checks they are classified by code.
func TestClassifiesRealErrors(t *testing.T) {
	forEachFlavor(t, testClassifiesRealErrors)
}

func testClassifiesRealErrors(t *testing.T, f serverFlavor) {
	ctx := context.Background()
	drv := openFlavor(t, f)
	db := drv.DB()
	twoRowTable(t, db)

	a, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer a.Rollback()
	b, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer b.Rollback()
	_, err = a.Exec("UPDATE pair SET v = v + 1 WHERE id = 1")
	require.NoError(t, err)
	_, err = b.Exec("UPDATE pair SET v = v + 1 WHERE id = 2")
	require.NoError(t, err)
	errA := make(chan error, 1)
	go func() { _, err := a.Exec("UPDATE pair SET v = v + 1 WHERE id = 2"); errA <- err }()
	waitLockWait(t, db)
	_, errB := b.Exec("UPDATE pair SET v = v + 1 WHERE id = 1")
	first := <-errA
	// InnoDB picks the victim; exactly one of the two gets 1213.
	dead := errB
	if dead == nil {
		dead = first
	} else {
		require.NoError(t, first)
	}
	require.Error(t, dead)
	requireCode(t, dead, 1213)
	require.Equal(t, rowtype.ErrorDeadlock, drv.ClassifyError(dead))
	require.True(t, drv.ClassifyError(dead).Retryable())
	_ = a.Rollback()
	_ = b.Rollback()

	c, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer c.Rollback()
	_, err = c.Exec("UPDATE pair SET v = v + 1 WHERE id = 1")
	require.NoError(t, err)
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 1")
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, "UPDATE pair SET v = v + 1 WHERE id = 1")
	require.Error(t, err)
	requireCode(t, err, 1205)
	require.Equal(t, rowtype.ErrorLockTimeout, drv.ClassifyError(err))
}

// requireCode checks that err carries the server's error code.
func requireCode(t *testing.T, err error, code uint16) {
	t.Helper()
	var me *gomysql.MySQLError
	require.ErrorAs(t, err, &me)
	require.Equal(t, code, me.Number, "%v", err)
}

type countArgs struct{}

func (countArgs) Kind() string { return "count" }

// TestRetryTxRetriesDeadlockVictim: RetryTx runs the whole function again
// when its transaction is chosen as a deadlock victim.
func TestRetryTxRetriesDeadlockVictim(t *testing.T) {
	forEachFlavor(t, testRetryTxRetriesDeadlockVictim)
}

func testRetryTxRetriesDeadlockVictim(t *testing.T, f serverFlavor) {
	ctx := context.Background()
	drv := openFlavor(t, f)
	drivertest.Migrate(t, drv)
	db := drv.DB()
	twoRowTable(t, db)
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	require.NoError(t, err)

	_, err = db.Exec("CREATE TABLE ballast (id INT PRIMARY KEY) ENGINE=InnoDB")
	require.NoError(t, err)
	other, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer other.Rollback()
	_, err = other.Exec("UPDATE pair SET v = v + 1 WHERE id = 2")
	require.NoError(t, err)
	// InnoDB rolls back the lighter transaction; ballast makes the other one
	// heavy, so RetryTx's transaction is the victim.
	_, err = other.Exec("INSERT INTO ballast WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 500) SELECT n FROM s")
	require.NoError(t, err)

	calls := 0
	otherDone := make(chan error, 1)
	err = client.RetryTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		calls++
		if _, err := tx.ExecContext(ctx, "UPDATE pair SET v = v + 1 WHERE id = 1"); err != nil {
			return err
		}
		if _, err := client.InsertTx(ctx, tx, countArgs{}, nil); err != nil {
			return err
		}
		if calls == 1 {
			// Close a cycle: the other transaction waits for row 1, which
			// this one holds; this one then asks for row 2, which it holds.
			go func() {
				_, err := other.Exec("UPDATE pair SET v = v + 1 WHERE id = 1")
				if err == nil {
					err = other.Commit()
				}
				otherDone <- err
			}()
			waitLockWait(t, db)
		}
		_, err := tx.ExecContext(ctx, "UPDATE pair SET v = v + 1 WHERE id = 2")
		return err
	})
	require.NoError(t, <-otherDone, "the heavy transaction survives")
	require.NoError(t, err)
	require.Equal(t, 2, calls, "the deadlock victim ran again, whole")
	var jobs int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM lockstep_jobs").Scan(&jobs))
	require.Equal(t, 1, jobs, "the rolled-back attempt's job is gone, the retry's is there")
}

// TestClassifiesConnectionErrors: a session killed by the server and a
// server that refuses connections are ErrorConnection, which is not
// Retryable (a lost commit may have happened). Neither server sends the
// killed session an error packet (MariaDB 10.11 does not send its 1927):
// go-sql-driver reports ErrInvalidConn, or ErrBadConn when it notices the
// closed socket before writing.
func TestClassifiesConnectionErrors(t *testing.T) {
	forEachFlavor(t, testClassifiesConnectionErrors)
}

func testClassifiesConnectionErrors(t *testing.T, f serverFlavor) {
	ctx := context.Background()
	drv := openFlavor(t, f)
	db := drv.DB()

	victim, err := db.Conn(ctx)
	require.NoError(t, err)
	defer victim.Close()
	var id int64
	require.NoError(t, victim.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id))
	_, err = db.ExecContext(ctx, "KILL CONNECTION ?", id)
	require.NoError(t, err)
	_, err = victim.ExecContext(ctx, "SELECT 1")
	require.Error(t, err)
	require.Equal(t, rowtype.ErrorConnection, drv.ClassifyError(err), "%v", err)
	require.False(t, drv.ClassifyError(err).Retryable())

	// A port nobody listens on.
	_, err = mysql.Open(ctx, fmt.Sprintf("root@tcp(%s)/x?timeout=2s", testdb.ClosedAddr(t)))
	require.Error(t, err)
	require.Equal(t, rowtype.ErrorConnection, drv.ClassifyError(err), "%v", err)
}
