package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// waitLockWait waits until a backend waits on a lock: observable state.
func waitLockWait(t *testing.T, db *sql.DB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()").Scan(&n))
		if n > 0 {
			return
		}
		require.False(t, time.Now().After(deadline), "no lock wait became visible")
		time.Sleep(5 * time.Millisecond)
	}
}

// TestClassifiesRealErrors provokes a real deadlock (40P01) and a real
// lock timeout (55P03) and checks they are classified by code.
func TestClassifiesRealErrors(t *testing.T) {
	ctx := context.Background()
	drv, err := postgres.Open(ctx, testdb.Postgres(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	db := drv.DB()
	_, err = db.Exec("CREATE TABLE pair (id int PRIMARY KEY, v int); INSERT INTO pair VALUES (1, 0), (2, 0)")
	require.NoError(t, err)

	a, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer a.Rollback()
	b, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer b.Rollback()
	for _, tx := range []*sql.Tx{a, b} {
		_, err = tx.Exec("SET LOCAL deadlock_timeout = '50ms'")
		require.NoError(t, err)
	}
	_, err = a.Exec("UPDATE pair SET v = v + 1 WHERE id = 1")
	require.NoError(t, err)
	_, err = b.Exec("UPDATE pair SET v = v + 1 WHERE id = 2")
	require.NoError(t, err)
	errA := make(chan error, 1)
	go func() { _, err := a.Exec("UPDATE pair SET v = v + 1 WHERE id = 2"); errA <- err }()
	waitLockWait(t, db)
	_, errB := b.Exec("UPDATE pair SET v = v + 1 WHERE id = 1")
	first := <-errA
	dead := errB
	if dead == nil {
		dead = first
	} else {
		require.NoError(t, first)
	}
	require.Error(t, dead)
	require.Equal(t, rowtype.ErrorDeadlock, drv.ClassifyError(dead))
	_ = a.Rollback()
	_ = b.Rollback()

	c, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer c.Rollback()
	_, err = c.Exec("UPDATE pair SET v = v + 1 WHERE id = 1")
	require.NoError(t, err)
	d, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer d.Rollback()
	_, err = d.Exec("SET LOCAL lock_timeout = '50ms'")
	require.NoError(t, err)
	_, err = d.Exec("UPDATE pair SET v = v + 1 WHERE id = 1")
	require.Error(t, err)
	require.Equal(t, rowtype.ErrorLockTimeout, drv.ClassifyError(err))
}

// TestClassifiesConnectionErrors: a backend terminated by the server
// (57P01) and a server that refuses connections are ErrorConnection, which
// is not Retryable (a lost commit may have happened).
func TestClassifiesConnectionErrors(t *testing.T) {
	ctx := context.Background()
	drv, err := postgres.Open(ctx, testdb.Postgres(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	db := drv.DB()

	victim, err := db.Conn(ctx)
	require.NoError(t, err)
	defer victim.Close()
	var pid int64
	require.NoError(t, victim.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid))
	var ok bool
	require.NoError(t, db.QueryRowContext(ctx, "SELECT pg_terminate_backend($1)", pid).Scan(&ok))
	require.True(t, ok)
	_, err = victim.ExecContext(ctx, "SELECT 1")
	require.Error(t, err)
	require.Equal(t, rowtype.ErrorConnection, drv.ClassifyError(err), "%v", err)
	require.False(t, drv.ClassifyError(err).Retryable())

	_, err = postgres.Open(ctx, fmt.Sprintf("postgres://postgres@%s/x?connect_timeout=2", testdb.ClosedAddr(t)))
	require.Error(t, err)
	require.Equal(t, rowtype.ErrorConnection, drv.ClassifyError(err), "%v", err)
}
