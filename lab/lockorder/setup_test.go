package lockorder_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/drivertest"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/lab/planguard"
	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
	"github.com/lockstep-queue/lockstep/rowtype"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// server is one database under test: the driver the sessions use and a
// separate pool that watches the lock tables.
type server struct {
	name     string
	drv      driver.Driver
	flavor   lockview.Flavor
	observer driver.Driver
}

func servers(t *testing.T) []server {
	ctx := context.Background()
	myDSN := testdb.MySQL(t)
	my, err := mysql.Open(ctx, myDSN)
	require.NoError(t, err)
	myObs, err := mysql.Open(ctx, myDSN)
	require.NoError(t, err)
	pgDSN := testdb.Postgres(t)
	pg, err := postgres.Open(ctx, pgDSN)
	require.NoError(t, err)
	pgObs, err := postgres.Open(ctx, pgDSN)
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, d := range []driver.Driver{my, myObs, pg, pgObs} {
			_ = d.Close()
		}
	})
	drivertest.Migrate(t, my)
	drivertest.Migrate(t, pg)
	return []server{
		{name: "MariaDB", drv: my, flavor: lockview.MariaDB, observer: myObs},
		{name: "PostgreSQL", drv: pg, flavor: lockview.Postgres, observer: pgObs},
	}
}

// loadAlmostDone loads the dangerous distribution of the claim/cancel deadlock — runs of
// 1,000 jobs with 2 PENDING each — and asserts the precondition every
// interleaving depends on: each statement is planned as declared on it.
// Without that check a passing interleaving would protect nothing.
func loadAlmostDone(t *testing.T, s server) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, planguard.Load(ctx, s.drv, planguard.AlmostDone()))
	rep, err := planguard.Check(ctx, s.drv, planguard.Options{})
	require.NoError(t, err)
	require.Empty(t, rep.FailureLines(), "the plans the interleavings rely on")
	if s.flavor == lockview.MariaDB {
		// And the data is the dangerous kind: the range cancel, written as
		// one range UPDATE on these tables, would be planned through the
		// status-led index here — the order the catalogue's hints prevent.
		requireKey(t, s.drv.DB(), "UPDATE lockstep_jobs SET status = 'CANCELLED' WHERE run_id = 1 AND status IN ('PENDING', 'RUNNING')", "lockstep_jobs_heartbeat")
	}
}

// The almost-done distribution's rows the interleavings use: run 1's two
// PENDING jobs and run 6's RUNNING job (attempt 1, heartbeat an hour old).
const (
	pendingA, pendingB = int64(999), int64(1000)
	runOfPending       = int64(1)
	running            = int64(5500)
	runOfRunning       = int64(6)
	failedInRun        = int64(2) // FAILED, in run 1
)

func status(t *testing.T, s server, id int64) rowtype.JobStatus {
	t.Helper()
	j, err := s.drv.Executor().JobGet(context.Background(), id)
	require.NoError(t, err)
	return j.Status
}
