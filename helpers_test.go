package lockstep_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/drivertest"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/migrate"
)

// insertedIDs are the ids of inserted jobs, in input order.
func insertedIDs(res []lockstep.InsertResult) []int64 {
	ids := make([]int64, len(res))
	for i, r := range res {
		ids[i] = r.ID
	}
	return ids
}

// testDialect is a database the root tests run on. openN opens n drivers
// (n pools, as n processes have) on one fresh, migrated database.
type testDialect struct {
	name  string
	openN func(t *testing.T, n int) []driver.Driver
}

// open opens one driver on a fresh, migrated database.
func (d testDialect) open(t *testing.T) driver.Driver { return d.openN(t, 1)[0] }

var testDialects = []testDialect{
	{"sqlite", func(t *testing.T, n int) []driver.Driver {
		path := filepath.Join(t.TempDir(), "test.db")
		return openShared(t, n, func() (driver.Driver, error) { return sqlite.Open(context.Background(), path) })
	}},
	{"mariadb", func(t *testing.T, n int) []driver.Driver {
		dsn := testdb.MySQL(t)
		return openShared(t, n, func() (driver.Driver, error) { return mysql.Open(context.Background(), dsn) })
	}},
	{"oraclemysql", func(t *testing.T, n int) []driver.Driver {
		dsn := testdb.OracleMySQL(t)
		return openShared(t, n, func() (driver.Driver, error) { return mysql.Open(context.Background(), dsn) })
	}},
	{"postgres", func(t *testing.T, n int) []driver.Driver {
		dsn := testdb.Postgres(t)
		return openShared(t, n, func() (driver.Driver, error) { return postgres.Open(context.Background(), dsn) })
	}},
}

func openShared(t *testing.T, n int, open func() (driver.Driver, error)) []driver.Driver {
	t.Helper()
	var out []driver.Driver
	for i := range n {
		drv, err := open()
		require.NoError(t, err)
		if i == 0 {
			openMigrated(t, drv)
		} else {
			t.Cleanup(func() { _ = drv.Close() })
		}
		out = append(out, drv)
	}
	return out
}

func openMigrated(t *testing.T, drv driver.Driver) driver.Driver {
	t.Helper()
	t.Cleanup(func() { _ = drv.Close() })
	m, err := migrate.New(drv)
	require.NoError(t, err)
	_, err = m.Up(context.Background())
	require.NoError(t, err)
	return drv
}

// forEachDialect runs fn on each database, in parallel.
func forEachDialect(t *testing.T, fn func(t *testing.T, drv driver.Driver)) {
	forEachDialectN(t, 1, func(t *testing.T, drvs []driver.Driver) { fn(t, drvs[0]) })
}

// forEachDialectN runs fn on each database, in parallel, with n drivers
// on it (n processes).
func forEachDialectN(t *testing.T, n int, fn func(t *testing.T, drvs []driver.Driver)) {
	for _, d := range testDialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			fn(t, d.openN(t, n))
		})
	}
}

func quietBadInputLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// eventually polls observable state until cond holds.
func eventually(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		require.False(t, time.Now().After(deadline), "timed out after %s waiting for %s", limit, what)
		time.Sleep(20 * time.Millisecond)
	}
}

func quietClient(t *testing.T, drv driver.Driver, cfg lockstep.Config) *lockstep.Client {
	t.Helper()
	cfg.Logger = slog.New(slog.DiscardHandler)
	c, err := lockstep.NewClient(drv, cfg)
	require.NoError(t, err)
	return c
}

// countJobs counts the jobs whose column (kind, status) has value.
func countJobs(t *testing.T, drv driver.Driver, column, value string) int {
	t.Helper()
	q := "SELECT COUNT(*) FROM lockstep_jobs WHERE " + column + " = ?"
	if drv.Dialect() == "postgres" {
		q = "SELECT COUNT(*) FROM lockstep_jobs WHERE " + column + " = $1"
	}
	var n int
	require.NoError(t, drv.DB().QueryRow(q, value).Scan(&n))
	return n
}

// rebind turns ? placeholders into $n for PostgreSQL; test-only SQL.
func rebind(drv driver.Driver, q string) string {
	if drv.Dialect() != "postgres" {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func countWhere(t *testing.T, drv driver.Driver, where string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, drv.DB().QueryRow(rebind(drv, "SELECT COUNT(*) FROM lockstep_jobs WHERE "+where), args...).Scan(&n))
	return n
}

// ledger is the per-job execution record the multi-client test's worker
// writes, each row in its own transaction.
func createLedger(t *testing.T, drv driver.Driver) {
	t.Helper()
	_, err := drv.DB().Exec("CREATE TABLE test_ledger (job_id BIGINT NOT NULL, attempt INT NOT NULL, worker VARCHAR(64) NOT NULL)")
	require.NoError(t, err)
}

func insertLedger(ctx context.Context, drv driver.Driver, jobID int64, attempt int, worker string) error {
	_, err := drv.DB().ExecContext(ctx, rebind(drv, "INSERT INTO test_ledger (job_id, attempt, worker) VALUES (?, ?, ?)"), jobID, attempt, worker)
	return err
}

// Factory creates a fresh, empty database and returns an Opener for it:
// the client's end-to-end scenarios run on every driver through one.
type Factory func(t *testing.T) Opener

// Opener opens a driver on the factory's database, closed by t.Cleanup.
// Each call opens another pool on the same database, as another process
// would.
type Opener func(t *testing.T) driver.Driver

// clientFactories are the drivers the end-to-end scenarios run on: each
// database, and PostgreSQL both through its pool and through a *sql.DB.
func clientFactories() []struct {
	name string
	new  Factory
} {
	opener := func(open func() (driver.Driver, error)) Opener {
		return func(t *testing.T) driver.Driver {
			d, err := open()
			require.NoError(t, err)
			t.Cleanup(func() { _ = d.Close() })
			return d
		}
	}
	return []struct {
		name string
		new  Factory
	}{
		{"sqlite", func(t *testing.T) Opener {
			path := filepath.Join(t.TempDir(), "lockstep.db")
			return opener(func() (driver.Driver, error) { return sqlite.Open(context.Background(), path) })
		}},
		{"mariadb", func(t *testing.T) Opener {
			dsn := testdb.MySQL(t)
			return opener(func() (driver.Driver, error) { return mysql.Open(context.Background(), dsn) })
		}},
		{"oraclemysql", func(t *testing.T) Opener {
			dsn := testdb.OracleMySQL(t)
			return opener(func() (driver.Driver, error) { return mysql.Open(context.Background(), dsn) })
		}},
		{"postgres-pool", func(t *testing.T) Opener {
			dsn := testdb.Postgres(t)
			return opener(func() (driver.Driver, error) { return postgres.Open(context.Background(), dsn) })
		}},
		{"postgres-sqldb", func(t *testing.T) Opener {
			dsn := testdb.Postgres(t)
			return func(t *testing.T) driver.Driver {
				db, err := sql.Open("pgx", dsn)
				require.NoError(t, err)
				t.Cleanup(func() { _ = db.Close() })
				d, err := postgres.NewDB(context.Background(), db)
				require.NoError(t, err)
				return d
			}
		}},
	}
}

// forEachClientFactory runs fn on every driver of clientFactories.
func forEachClientFactory(t *testing.T, fn func(t *testing.T, newDriver Factory)) {
	for _, f := range clientFactories() {
		t.Run(f.name, func(t *testing.T) { fn(t, f.new) })
	}
}

// setup returns a driver on a fresh, migrated database.
func setup(t *testing.T, newDriver Factory) driver.Driver {
	t.Helper()
	drv, _ := setupOpener(t, newDriver)
	return drv
}

// setupOpener is setup that also returns the opener, for scenarios that
// open more pools on the same database.
func setupOpener(t *testing.T, newDriver Factory) (driver.Driver, Opener) {
	t.Helper()
	open := newDriver(t)
	drv := open(t)
	drivertest.Migrate(t, drv)
	return drv, open
}

// claimOneFrom claims exactly one job of queue through the driver itself,
// as a process without a client would.
func claimOneFrom(t *testing.T, ex driver.Executor, queue string) *lockstep.JobRow {
	t.Helper()
	got, err := ex.JobClaim(context.Background(), &driver.JobClaimParams{Queue: queue, Max: 1})
	require.NoError(t, err)
	require.Len(t, got, 1)
	return got[0]
}
