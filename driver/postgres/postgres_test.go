package postgres_test

import (
	"context"
	"database/sql"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/drivertest"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/migrate"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// poolFactory drives the suite through a *pgxpool.Pool.
func poolFactory(t *testing.T) drivertest.Opener {
	dsn := testdb.Postgres(t)
	return func(t *testing.T) driver.Driver {
		d, err := postgres.Open(context.Background(), dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = d.Close() })
		return d
	}
}

// sqlFactory drives it through a *sql.DB opened with pgx's stdlib driver.
func sqlFactory(t *testing.T) drivertest.Opener {
	dsn := testdb.Postgres(t)
	return func(t *testing.T) driver.Driver {
		db, err := sql.Open("pgx", dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		d, err := postgres.NewDB(context.Background(), db)
		require.NoError(t, err)
		return d
	}
}

func TestConformancePool(t *testing.T) { drivertest.Run(t, poolFactory) }

func TestConformanceSQLDB(t *testing.T) { drivertest.Run(t, sqlFactory) }

type outboxArgs struct{ Order int }

func (outboxArgs) Kind() string { return "outbox" }

// InsertTx with a pgx.Tx: the job commits and rolls back with it.
func TestEnqueueTxPgx(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testdb.Postgres(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	drv, err := postgres.New(ctx, pool)
	require.NoError(t, err)
	m, err := migrate.New(drv)
	require.NoError(t, err)
	_, err = m.Up(ctx)
	require.NoError(t, err)
	c, err := lockstep.NewClient(drv, lockstep.Config{})
	require.NoError(t, err)

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	idRes, err := c.InsertTx(ctx, tx, outboxArgs{Order: 1}, nil)
	require.NoError(t, err)
	id := idRes.ID
	require.NoError(t, tx.Rollback(ctx))
	_, err = c.Job(ctx, id)
	require.ErrorIs(t, err, lockstep.ErrNotFound)

	tx, err = pool.Begin(ctx)
	require.NoError(t, err)
	run, _, err := c.InsertRun(ctx, "outbox-run", nil)
	require.NoError(t, err)
	idsRes, err := c.InsertManyTx(ctx, tx, []lockstep.InsertManyParams{
		{Args: outboxArgs{Order: 2}, Opts: &lockstep.InsertOpts{RunID: run.ID}},
		{Args: outboxArgs{Order: 3}, Opts: &lockstep.InsertOpts{RunID: run.ID}},
	})
	require.NoError(t, err)
	ids := insertedIDs(idsRes)
	require.NoError(t, tx.Commit(ctx))
	for _, id := range ids {
		j, err := c.Job(ctx, id)
		require.NoError(t, err)
		require.Equal(t, run.ID, j.RunID)
		require.Equal(t, lockstep.StatusPending, j.Status)
	}
}

func TestCheckVersion(t *testing.T) {
	require.NoError(t, postgres.CheckVersion("15.19 (Debian 15.19-0+deb12u1)"))
	require.NoError(t, postgres.CheckVersion("12.0"))
	require.Error(t, postgres.CheckVersion("11.22"))
	require.Error(t, postgres.CheckVersion("x"))
}

// insertedIDs are the ids of inserted jobs, in input order.
func insertedIDs(res []lockstep.InsertResult) []int64 {
	ids := make([]int64, len(res))
	for i, r := range res {
		ids[i] = r.ID
	}
	return ids
}
