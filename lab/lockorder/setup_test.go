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

// serverSpec is a server to open: its DSN, its driver, and the flavor its
// lock tables must be read as.
type serverSpec struct {
	name string
	dsn  func(testing.TB) string
	open func(context.Context, string) (driver.Driver, error)
	want lockview.Flavor
}

func openMySQL(ctx context.Context, dsn string) (driver.Driver, error) { return mysql.Open(ctx, dsn) }
func openPostgres(ctx context.Context, dsn string) (driver.Driver, error) {
	return postgres.Open(ctx, dsn)
}

func serverSpecs() []serverSpec {
	return []serverSpec{
		{"MariaDB", testdb.MySQL, openMySQL, lockview.MariaDB},
		{"OracleMySQL", testdb.OracleMySQL, openMySQL, lockview.MySQL},
		{"PostgreSQL", testdb.Postgres, openPostgres, lockview.Postgres},
	}
}

// servers opens MariaDB, Oracle MySQL and PostgreSQL, migrated.
func servers(t *testing.T) []server {
	var out []server
	for _, c := range serverSpecs() {
		out = append(out, openServer(t, c))
	}
	return out
}

// innodb opens the servers whose row locks are InnoDB's: MariaDB and
// Oracle MySQL.
func innodb(t *testing.T) []server {
	var out []server
	for _, c := range serverSpecs() {
		if c.want != lockview.Postgres {
			out = append(out, openServer(t, c))
		}
	}
	return out
}

// openServer opens c's driver and observer on a fresh database, and asks
// the server what it is.
func openServer(t *testing.T, c serverSpec) server {
	ctx := context.Background()
	dsn := c.dsn(t)
	drv, err := c.open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	obs, err := c.open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = obs.Close() })
	flavor, err := lockview.Detect(ctx, obs.DB())
	require.NoError(t, err)
	require.Equal(t, c.want, flavor, c.name)
	drivertest.Migrate(t, drv)
	return server{name: c.name, drv: drv, flavor: flavor, observer: obs}
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
	if s.flavor != lockview.Postgres {
		// And the data is the dangerous kind: the range cancel, written as
		// one range UPDATE on these tables, would be planned through the
		// status-led index here — the order the catalogue's hints prevent.
		// MariaDB and MySQL both pick it.
		requireKey(t, s, "UPDATE lockstep_jobs SET status = 'CANCELLED' WHERE run_id = 1 AND status IN ('PENDING', 'RUNNING')", "lockstep_jobs_heartbeat")
	}
	loadWorkflow(t, s)
}

// The workflow in run 3 of the almost-done distribution: two RUNNING jobs
// the fan-in job waits for, and a FAILED job whose failure cancelled its
// dependent — as InsertRun and the finishes would have left them, with
// each dependent's id above its dependencies'.
const (
	flowRunA, flowRunB = int64(2997), int64(2998) // RUNNING, attempt 1
	flowJoin           = int64(3000)              // WAITING on both
	flowFailed         = int64(2995)              // FAILED
	flowBlocked        = int64(2996)              // CANCELLED by 2995's failure
	runOfFlow          = int64(3)
)

// loadWorkflow writes that workflow over run 3's rows. The two RUNNING
// jobs have a fresh heartbeat, so the reaper leaves them alone.
func loadWorkflow(t *testing.T, s server) {
	t.Helper()
	now := "UTC_TIMESTAMP(6)"
	if s.flavor == lockview.Postgres {
		now = "now()"
	}
	for _, q := range []string{
		"UPDATE lockstep_jobs SET status = 'RUNNING', attempts = 1, started_at = " + now + ", heartbeat_at = " + now + ", finished_at = NULL, dependents = 1 WHERE id IN (2997, 2998)",
		"UPDATE lockstep_jobs SET status = 'WAITING', attempts = 0, started_at = NULL, heartbeat_at = NULL, finished_at = NULL, waiting_on = 2 WHERE id = 3000",
		"UPDATE lockstep_jobs SET status = 'FAILED', attempts = 1, dependents = 1, last_error = 'boom' WHERE id = 2995",
		"UPDATE lockstep_jobs SET status = 'CANCELLED', attempts = 0, waiting_on = 1, blocked_by = 2995, last_error = 'dependency 2995 ended FAILED' WHERE id = 2996",
		"INSERT INTO lockstep_job_deps (job_id, depends_on) VALUES (3000, 2997), (3000, 2998), (2996, 2995)",
	} {
		_, err := s.drv.DB().ExecContext(context.Background(), q)
		require.NoError(t, err, q)
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
