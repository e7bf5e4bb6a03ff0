package testdb_test

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// restartCases are the servers, with what differs between them.
var restartCases = []struct {
	name, driver, env string
	start             func(context.Context, testdb.ServerOptions) (*testdb.Server, error)
}{
	{"MariaDB", "mysql", testdb.EnvMySQLDSN, testdb.StartMySQLServer},
	{"OracleMySQL", "mysql", testdb.EnvOracleMySQLDSN, testdb.StartOracleMySQLServer},
	{"PostgreSQL", "pgx", testdb.EnvPostgresDSN, testdb.StartPostgresServer},
}

// TestServerStopStart: a standalone server stops (cleanly, or killed) and
// starts again on the same port and data directory; committed rows
// survive, an open transaction does not, connecting fails while it is
// down, and the DSNs from before work again, through the pool opened
// before the stop too.
func TestServerStopStart(t *testing.T) {
	t.Parallel()
	for _, c := range restartCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if os.Getenv(c.env) != "" {
				t.Skip("an external server is configured; this test starts its own")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			srv, err := c.start(ctx, testdb.ServerOptions{Logf: t.Logf})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, srv.Close()) })
			addr := srv.Addr()
			require.NotEmpty(t, addr)

			dsn, err := srv.NewDatabase(ctx)
			require.NoError(t, err)
			db, err := sql.Open(c.driver, dsn)
			require.NoError(t, err)
			defer db.Close()
			// At most one connection from before a stop stays in the pool.
			db.SetMaxIdleConns(1)
			_, err = db.ExecContext(ctx, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))")
			require.NoError(t, err)
			_, err = db.ExecContext(ctx, "INSERT INTO t VALUES (1, 'kept')")
			require.NoError(t, err)

			// A transaction open when the server stops is rolled back.
			tx, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			_, err = tx.ExecContext(ctx, "INSERT INTO t VALUES (2, 'lost')")
			require.NoError(t, err)

			begin := time.Now()
			require.NoError(t, srv.Stop(ctx))
			t.Logf("Stop took %v", time.Since(begin).Round(time.Millisecond))
			require.Error(t, tx.Commit(), "the transaction's connection is gone")
			requireDown(t, ctx, c.driver, dsn, addr)
			require.ErrorContains(t, srv.Stop(ctx), "not running")
			require.ErrorContains(t, srv.Kill(), "not running")
			_, err = srv.NewDatabase(ctx)
			require.Error(t, err, "no database can be created while the server is down")

			begin = time.Now()
			require.NoError(t, srv.Start(ctx))
			t.Logf("Start took %v", time.Since(begin).Round(time.Millisecond))
			require.Equal(t, addr, srv.Addr())
			require.ErrorContains(t, srv.Start(ctx), "already running")
			// The pool from before the stop reconnects by itself.
			requireRowsAfterRestart(t, ctx, db, 1)
			fresh, err := sql.Open(c.driver, dsn)
			require.NoError(t, err)
			defer fresh.Close()
			requireRows(t, ctx, fresh, 1)

			// Killed, it recovers what was committed.
			_, err = db.ExecContext(ctx, "INSERT INTO t VALUES (3, 'crash')")
			require.NoError(t, err)
			begin = time.Now()
			require.NoError(t, srv.Kill())
			t.Logf("Kill took %v", time.Since(begin).Round(time.Millisecond))
			requireDown(t, ctx, c.driver, dsn, addr)
			begin = time.Now()
			require.NoError(t, srv.Start(ctx))
			t.Logf("Start after Kill took %v", time.Since(begin).Round(time.Millisecond))
			requireRowsAfterRestart(t, ctx, db, 1, 3)

			begin = time.Now()
			require.NoError(t, srv.Restart(ctx))
			t.Logf("Restart took %v", time.Since(begin).Round(time.Millisecond))
			requireRows(t, ctx, fresh, 1, 3)
			_, err = srv.NewDatabase(ctx)
			require.NoError(t, err)
		})
	}
}

// requireDown checks that nothing answers at addr: a TCP connection is
// refused (the reserved port does not listen), and so is a database
// connection through a new pool.
func requireDown(t *testing.T, ctx context.Context, driverName, dsn, addr string) {
	t.Helper()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		conn.Close()
	}
	require.True(t, errors.Is(err, syscall.ECONNREFUSED), "dial %s: %v", addr, err)
	db, err := sql.Open(driverName, dsn)
	require.NoError(t, err)
	defer db.Close()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.Error(t, db.PingContext(pctx))
}

func requireRows(t *testing.T, ctx context.Context, db *sql.DB, want ...int) {
	t.Helper()
	got, err := ids(ctx, db)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// requireRowsAfterRestart reads through a pool that holds a connection
// from before the server stopped. go-sql-driver/mysql notices the dead
// connection before using it; pgx checks only a connection idle for more
// than a second, so its first statement on it may fail with a connection
// error (not retried by database/sql: the statement was sent). Either way
// the pool then works without being reopened.
func requireRowsAfterRestart(t *testing.T, ctx context.Context, db *sql.DB, want ...int) {
	t.Helper()
	got, err := ids(ctx, db)
	if err != nil {
		t.Logf("first statement on the stale connection: %v", err)
		got, err = ids(ctx, db)
	}
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func ids(ctx context.Context, db *sql.DB) ([]int, error) {
	rows, err := db.QueryContext(ctx, "SELECT id FROM t ORDER BY id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var got []int
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		got = append(got, id)
	}
	return got, rows.Err()
}

// TestServerExternalCannotStop: a Server for an external server (here, a
// second handle on one we started) refuses Stop, Kill and Start, and the
// server keeps running.
func TestServerExternalCannotStop(t *testing.T) {
	t.Parallel()
	if os.Getenv(testdb.EnvPostgresDSN) != "" {
		t.Skip("an external server is configured; this test starts its own")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ours, err := testdb.StartPostgresServer(ctx, testdb.ServerOptions{Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ours.Close()) })
	ext, err := testdb.StartPostgresServer(ctx, testdb.ServerOptions{ExternalDSN: ours.AdminDSN(), ExternalDSNSource: "THE_TEST_DSN"})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ext.Close()) })
	require.False(t, ext.Started())
	require.Equal(t, ours.Addr(), ext.Addr())

	for op, err := range map[string]error{"stop": ext.Stop(ctx), "kill": ext.Kill(), "start": ext.Start(ctx), "restart": ext.Restart(ctx)} {
		require.ErrorContains(t, err, "external server", op)
		require.ErrorContains(t, err, "THE_TEST_DSN", op)
	}
	_, err = ours.Version(ctx)
	require.NoError(t, err, "still running")
	_, err = ext.Version(ctx)
	require.NoError(t, err)
}

// DSNWithAddr points a DSN elsewhere and leaves the rest as it was.
func TestDSNAddr(t *testing.T) {
	for _, c := range []struct{ dsn, addr, moved string }{
		{"root@tcp(127.0.0.1:3306)/lst_x?parseTime=true&loc=UTC", "127.0.0.1:3306", "root@tcp(127.0.0.1:9)/lst_x?parseTime=true"},
		{"postgres://postgres@127.0.0.1:5432/lst_x?sslmode=disable", "127.0.0.1:5432", "postgres://postgres@127.0.0.1:9/lst_x?sslmode=disable"},
	} {
		addr, err := testdb.DSNAddr(c.dsn)
		require.NoError(t, err)
		require.Equal(t, c.addr, addr)
		moved, err := testdb.DSNWithAddr(c.dsn, "127.0.0.1:9")
		require.NoError(t, err)
		require.Equal(t, c.moved, moved)
	}
	_, err := testdb.DSNAddr("root@unix(/tmp/s)/x")
	require.Error(t, err)
}
