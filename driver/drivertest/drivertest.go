// Package drivertest is the conformance suite every lockstep driver must
// pass. It runs against a real database: each call of the factory returns a
// driver on a fresh, empty database. It tests the driver seam only — the
// executor's statements, the trace, migrations — and imports nothing above
// driver/; the client's end-to-end scenarios are the root package's tests.
package drivertest

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

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
	t.Run("TextIndex", func(t *testing.T) { testTextIndex(t, newDriver) })
	t.Run("CompleteMany", func(t *testing.T) { testCompleteMany(t, newDriver) })
	t.Run("Prune", func(t *testing.T) { testPrune(t, newDriver) })
	t.Run("Features", func(t *testing.T) { testFeatures(t, newDriver) })
	t.Run("Limits", func(t *testing.T) { testLimits(t, newDriver) })
	t.Run("History", func(t *testing.T) { testHistory(t, newDriver) })
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

	// One down and up again: the latest migration undoes and redoes.
	down, err := m.Down(ctx, 1)
	require.NoError(t, err)
	require.Len(t, down, 1)
	v, err = m.Version(ctx)
	require.NoError(t, err)
	// The one before, by version: the numbers need not be contiguous (a
	// dialect may lack a step another has).
	all := m.All()
	require.Equal(t, all[len(all)-2].Version, v)
	_, err = m.Up(ctx)
	require.NoError(t, err)
}

// Migrate applies every migration to drv, for drivers' own tests.
func Migrate(t *testing.T, drv driver.Driver) {
	t.Helper()
	m, err := migrate.New(drv)
	require.NoError(t, err)
	_, err = m.Up(context.Background())
	require.NoError(t, err)
}

// FillPending inserts PENDING jobs of kind "fill" on the default queue,
// through the executor, until the database holds total of them (counting
// from already), in batches.
func FillPending(t *testing.T, drv driver.Driver, already, total int) {
	t.Helper()
	batch := make([]driver.JobInsertParams, 0, 5000)
	for i := already; i < total; i++ {
		batch = append(batch, driver.JobInsertParams{
			Queue: "default", Kind: "fill", Args: []byte(fmt.Sprintf(`{"I":%d}`, i)), MaxAttempts: 25,
		})
		if len(batch) == cap(batch) || i == total-1 {
			_, err := drv.Executor().JobInsertMany(context.Background(), batch)
			require.NoError(t, err)
			batch = batch[:0]
		}
	}
}
