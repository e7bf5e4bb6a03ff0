package lockstep_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
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
