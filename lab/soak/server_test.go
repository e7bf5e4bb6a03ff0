package soak

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// TestDeadlockReadingsCountADeadlock makes one deadlock on purpose and
// checks that the soak's before and after readings differ by exactly one:
// a counter that never moves would pass every soak. On PostgreSQL the
// victim's backend publishes the count only when it exits, so the after
// reading must wait for it as the soak does. It is not parallel with the
// soak: Innodb_deadlocks is server-wide.
func TestDeadlockReadingsCountADeadlock(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T) func(context.Context) (driver.Driver, error)
	}{
		{"MariaDB", func(t *testing.T) func(context.Context) (driver.Driver, error) {
			dsn := testdb.MySQL(t)
			return func(ctx context.Context) (driver.Driver, error) { return mysql.Open(ctx, dsn) }
		}},
		{"OracleMySQL", func(t *testing.T) func(context.Context) (driver.Driver, error) {
			dsn := testdb.OracleMySQL(t)
			return func(ctx context.Context) (driver.Driver, error) { return mysql.Open(ctx, dsn) }
		}},
		{"PostgreSQL", func(t *testing.T) func(context.Context) (driver.Driver, error) {
			dsn := testdb.Postgres(t)
			return func(ctx context.Context) (driver.Driver, error) { return postgres.Open(ctx, dsn) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			open := tc.open(t)
			probe, err := open(ctx)
			require.NoError(t, err)
			before, err := readDeadlocks(ctx, probe)
			require.NoError(t, err)
			require.True(t, before.counted)
			require.NoError(t, probe.Close())

			drv, err := open(ctx)
			require.NoError(t, err)
			deadlock(t, drv)
			require.NoError(t, drv.Close())

			fresh, err := open(ctx)
			require.NoError(t, err)
			defer fresh.Close()
			gone, err := waitBackends(ctx, fresh, before.backends, backendsTimeout)
			require.NoError(t, err)
			require.True(t, gone, "the deadlocked sessions' backends exit")
			after, err := readDeadlocks(ctx, fresh)
			require.NoError(t, err)
			require.EqualValues(t, 1, after.value-before.value, "%s", after.source)
		})
	}
}

// deadlock locks row 1 in one transaction and row 2 in another, then has
// each ask for the other's row: the server must roll one back.
func deadlock(t *testing.T, drv driver.Driver) {
	ctx := t.Context()
	db := drv.DB()
	_, err := db.ExecContext(ctx, "CREATE TABLE soak_deadlock (id INT PRIMARY KEY, n INT NOT NULL)")
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, "INSERT INTO soak_deadlock (id, n) VALUES (1, 0), (2, 0)")
	require.NoError(t, err)
	a, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = a.Rollback() }()
	b, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = b.Rollback() }()
	_, err = a.ExecContext(ctx, "UPDATE soak_deadlock SET n = n + 1 WHERE id = 1")
	require.NoError(t, err)
	_, err = b.ExecContext(ctx, "UPDATE soak_deadlock SET n = n + 1 WHERE id = 2")
	require.NoError(t, err)

	// Whichever asks second closes the cycle; the order does not matter.
	errs := make(chan error, 2)
	go func() { _, err := a.ExecContext(ctx, "UPDATE soak_deadlock SET n = n + 1 WHERE id = 2"); errs <- err }()
	go func() { _, err := b.ExecContext(ctx, "UPDATE soak_deadlock SET n = n + 1 WHERE id = 1"); errs <- err }()
	timeout := time.After(time.Minute)
	victims := 0
	for range 2 {
		select {
		case err := <-errs:
			if err != nil {
				require.Equal(t, rowtype.ErrorDeadlock, drv.ClassifyError(err), "%v", err)
				victims++
			}
		case <-timeout:
			t.Fatal("no deadlock detected within a minute")
		}
	}
	require.Equal(t, 1, victims)
}
