// Package drivertest is the conformance suite every lockstep driver must
// pass. It runs against a real database: each call of the factory returns a
// driver on a fresh, empty database.
package drivertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/migrate"
)

// Factory creates a fresh, empty database and returns an Opener for it.
type Factory func(t *testing.T) Opener

// Opener opens a driver on the factory's database, closed by t.Cleanup.
// Each call opens another pool on the same database, as another process
// would.
type Opener func(t *testing.T) driver.Driver

// Run runs every conformance test.
func Run(t *testing.T, newDriver Factory) {
	t.Run("Migrate", func(t *testing.T) { testMigrate(t, newDriver) })
	t.Run("Executor", func(t *testing.T) { testExecutor(t, newDriver) })
	t.Run("Trace", func(t *testing.T) { testTrace(t, newDriver) })
	t.Run("Inspect", func(t *testing.T) { testInspect(t, newDriver) })
	t.Run("CompleteMany", func(t *testing.T) { testCompleteMany(t, newDriver) })
	t.Run("Prune", func(t *testing.T) { testPrune(t, newDriver) })
	t.Run("Features", func(t *testing.T) { testFeatures(t, newDriver) })
	t.Run("Client", func(t *testing.T) { testClient(t, newDriver) })
	t.Run("ThreeClients", func(t *testing.T) { testThreeClients(t, newDriver) })
	t.Run("Notify", func(t *testing.T) { testNotify(t, newDriver) })
}

// setup returns a driver on a fresh, migrated database.
func setup(t *testing.T, newDriver Factory) driver.Driver {
	t.Helper()
	drv, _ := setupOpener(t, newDriver)
	return drv
}

func setupOpener(t *testing.T, newDriver Factory) (driver.Driver, Opener) {
	t.Helper()
	open := newDriver(t)
	drv := open(t)
	m, err := migrate.New(drv)
	require.NoError(t, err)
	_, err = m.Up(context.Background())
	require.NoError(t, err)
	return drv, open
}

// waitFor polls observable state until cond holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
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

func testMigrate(t *testing.T, newDriver Factory) {
	ctx := context.Background()
	drv := newDriver(t)(t)
	m, err := migrate.New(drv)
	require.NoError(t, err)
	v, err := m.Version(ctx)
	require.NoError(t, err)
	require.Equal(t, 0, v)
	applied, err := m.Up(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, applied)
	v, err = m.Version(ctx)
	require.NoError(t, err)
	require.Equal(t, m.Latest(), v)
	again, err := m.Up(ctx)
	require.NoError(t, err)
	require.Empty(t, again, "a second up applies nothing")

	// A client refuses to start on a schema that is not the one it expects.
	down, err := m.Down(ctx, 1)
	require.NoError(t, err)
	require.Len(t, down, 1)
	ws := lockstep.NewWorkers()
	lockstep.AddWorker(ws, lockstep.WorkFunc(func(context.Context, *lockstep.Job[noopArgs]) error { return nil }))
	c, err := lockstep.NewClient(drv, lockstep.Config{Workers: ws})
	require.NoError(t, err)
	err = c.Start(ctx)
	require.ErrorContains(t, err, "migrate up")
	_, err = m.Up(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	require.NoError(t, c.Stop(ctx))
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

// Migrate applies every migration to drv, for drivers' own tests.
func Migrate(t *testing.T, drv driver.Driver) {
	t.Helper()
	m, err := migrate.New(drv)
	require.NoError(t, err)
	_, err = m.Up(context.Background())
	require.NoError(t, err)
}

type fillArgs struct{ I int }

func (fillArgs) Kind() string { return "fill" }

// FillPending enqueues PENDING jobs on the default queue until the
// database holds total of them (counting from already), in batches.
func FillPending(t *testing.T, drv driver.Driver, already, total int) {
	t.Helper()
	c, err := lockstep.NewClient(drv, lockstep.Config{})
	require.NoError(t, err)
	batch := make([]lockstep.InsertManyParams, 0, 5000)
	for i := already; i < total; i++ {
		batch = append(batch, lockstep.InsertManyParams{Args: fillArgs{I: i}})
		if len(batch) == cap(batch) || i == total-1 {
			_, err := c.InsertMany(context.Background(), batch)
			require.NoError(t, err)
			batch = batch[:0]
		}
	}
}

// insertedIDs are the ids of inserted jobs, in input order.
func insertedIDs(res []lockstep.InsertResult) []int64 {
	ids := make([]int64, len(res))
	for i, r := range res {
		ids[i] = r.ID
	}
	return ids
}
