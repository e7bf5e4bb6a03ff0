package planguard_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/driver/drivertest"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/lab/planguard"
	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
	"github.com/lockstep-queue/lockstep/migrate"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func openMariaDB(t *testing.T) driver.Driver { return openMySQLFamily(t, testdb.MySQL(t)) }

func openOracleMySQL(t *testing.T) driver.Driver { return openMySQLFamily(t, testdb.OracleMySQL(t)) }

// openGaleraCatalog is MariaDB with the catalogue of a Galera node, whose
// certifying writes are planned like any other statement.
func openGaleraCatalog(t *testing.T) driver.Driver {
	return openMySQLFamily(t, testdb.MySQL(t)).(*mysql.Driver).WithGalera(true)
}

// openOracleGaleraCatalog is Oracle MySQL with the certifying writes: a
// MySQL build with Galera (Percona XtraDB Cluster) gets that catalogue.
func openOracleGaleraCatalog(t *testing.T) driver.Driver {
	return openMySQLFamily(t, testdb.OracleMySQL(t)).(*mysql.Driver).WithGalera(true)
}

func openMySQLFamily(t *testing.T, dsn string) driver.Driver {
	drv, err := mysql.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	drivertest.Migrate(t, drv)
	// The optional text index too, so that the search through it is
	// explained with the rest.
	require.NoError(t, migrate.TextIndex(context.Background(), drv, true))
	return drv
}

func openPostgres(t *testing.T) driver.Driver {
	drv, err := postgres.Open(context.Background(), testdb.Postgres(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	drivertest.Migrate(t, drv)
	require.NoError(t, migrate.TextIndex(context.Background(), drv, true))
	return drv
}

func logReport(t *testing.T, rep *planguard.Report) {
	var b strings.Builder
	require.NoError(t, rep.WriteText(&b, false))
	t.Log("\n" + b.String())
}

// TestGuard: every catalogue statement is planned as declared under every
// distribution, on MariaDB (with its own catalogue and a Galera node's),
// Oracle MySQL and PostgreSQL.
func TestGuard(t *testing.T) {
	for name, open := range map[string]func(*testing.T) driver.Driver{"MariaDB": openMariaDB, "MariaDB-GaleraCatalog": openGaleraCatalog, "OracleMySQL-GaleraCatalog": openOracleGaleraCatalog, "OracleMySQL": openOracleMySQL, "PostgreSQL": openPostgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			drv := open(t)
			rep, err := planguard.CheckDistributions(context.Background(), drv, planguard.Default(), planguard.Options{})
			require.NoError(t, err)
			logReport(t, rep)
			require.Empty(t, rep.FailureLines())
			checked := map[string]bool{}
			for _, r := range rep.Results {
				if r.Skipped == "" {
					checked[r.Distribution+"/"+r.Statement+"/"+r.Variant] = true
				}
			}
			// Every statement with an access path was explained under every
			// distribution, live and (for by-id writes) stale.
			for _, st := range drv.Catalog().All() {
				if st.Finds == "" {
					continue
				}
				for _, d := range planguard.Default() {
					require.True(t, checked[d.Name+"/"+string(st.Name)+"/live"], "%s not checked under %s", st.Name, d.Name)
				}
			}
		})
	}
}

// TestGuardCatchesUnhintedWrites runs the guard on a catalogue copy with
// the index hint taken out of one statement at a time. Where the server
// then finds the rows through another index — for a by-id write, the
// status-led heartbeat index: the secondary record before PRIMARY, the
// reverse of every other writer's order — the guard must say so. Which
// statements flip is the server's own choice, so the test asks the server
// what it is and asserts what it does: MariaDB flips every by-id write on
// the near-empty or almost-done table; Oracle MySQL (9.7) keeps the
// single-row writes and the claim's update on PRIMARY unhinted and flips
// only the prune's locking read: on MySQL that is the one by-id write the
// hint is load-bearing for. The workflow's read of a job's dependents
// leaves its index on both once the edges are many.
func TestGuardCatchesUnhintedWrites(t *testing.T) {
	for _, srv := range []struct {
		name string
		open func(*testing.T) driver.Driver
	}{{"MariaDB", openMariaDB}, {"OracleMySQL", openOracleMySQL}} {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			drv := srv.open(t)
			flavor, err := lockview.Detect(context.Background(), drv.DB())
			require.NoError(t, err)
			mariadb := flavor == lockview.MariaDB
			const pk, heartbeat = "FORCE INDEX (PRIMARY) ", "through lockstep_jobs_heartbeat"
			for _, c := range []struct {
				name  catalog.Name
				hint  string
				flips bool
				says  string
			}{
				{catalog.JobClaimUpdate, pk, mariadb, heartbeat},
				{catalog.JobFinishDone, pk, mariadb, heartbeat},
				{catalog.JobHeartbeat, pk, mariadb, heartbeat},
				{catalog.JobReap, pk, mariadb, heartbeat},
				{catalog.JobPruneLock, pk, true, heartbeat},
				{catalog.JobSetWaiting, pk, mariadb, heartbeat},
				{catalog.JobPromote, pk, mariadb, heartbeat},
				{catalog.JobCancelWaiting, pk, mariadb, heartbeat},
				{catalog.JobRevive, pk, mariadb, heartbeat},
				{catalog.JobLockFlow, pk, false, ""},
				{catalog.DepDependents, "FORCE INDEX (lockstep_job_deps_up) ", true, "does not use the declared lockstep_job_deps_up"},
			} {
				t.Run(string(c.name), func(t *testing.T) {
					st := drv.Catalog().Get(c.name)
					require.Contains(t, st.SQL, c.hint)
					st.SQL = strings.Replace(st.SQL, c.hint, "", 1)
					broken, err := drv.Catalog().With(st)
					require.NoError(t, err)
					rep, err := planguard.CheckDistributions(context.Background(), drv,
						[]planguard.Distribution{planguard.NearEmpty(), planguard.AlmostDone()},
						planguard.Options{Catalog: broken, Statements: []string{string(c.name)}})
					require.NoError(t, err)
					logReport(t, rep)
					failed := rep.FailureLines()
					if !c.flips {
						require.Empty(t, failed, "%s now plans an unhinted %s off its index: its hint has become load-bearing there too", flavor, c.name)
						return
					}
					require.NotEmpty(t, failed, "the guard passed an unhinted %s on %s", c.name, flavor)
					for _, f := range failed {
						require.Contains(t, f, c.says)
					}
				})
			}
		})
	}
}

// TestGuardCatchesAClaimAfterReadFromTheHead: the claim after a key is
// only worth having if the plan seeks to the key. With the key's columns
// hidden from the optimizer (priority + 0), every server reads the claim
// index from the queue's head, past the claimAfterDepth jobs before the
// key, and the guard must say so on a queue with a backlog.
func TestGuardCatchesAClaimAfterReadFromTheHead(t *testing.T) {
	for _, srv := range []struct {
		name   string
		open   func(*testing.T) driver.Driver
		stmt   catalog.Name
		from   string
		broken string
	}{
		{"MariaDB", openMariaDB, catalog.JobClaimSelectAfter, "(priority > ? OR (priority = ?", "(priority + 0 > ? OR (priority + 0 = ?"},
		{"OracleMySQL", openOracleMySQL, catalog.JobClaimSelectAfter, "(priority > ? OR (priority = ?", "(priority + 0 > ? OR (priority + 0 = ?"},
		{"PostgreSQL", openPostgres, catalog.JobClaimAfter, "(priority, available_at, id) >", "(priority + 0, available_at, id) >"},
	} {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			drv := srv.open(t)
			st := drv.Catalog().Get(srv.stmt)
			require.Contains(t, st.SQL, srv.from)
			st.SQL = strings.Replace(st.SQL, srv.from, srv.broken, 1)
			broken, err := drv.Catalog().With(st)
			require.NoError(t, err)
			opts := planguard.Options{Catalog: broken, Statements: []string{string(srv.stmt)}}
			rep, err := planguard.CheckDistributions(context.Background(), drv, []planguard.Distribution{planguard.Backlog()}, opts)
			require.NoError(t, err)
			logReport(t, rep)
			failed := rep.FailureLines()
			require.NotEmpty(t, failed, "the guard passed a claim after a key that reads from the queue's head")
			for _, f := range failed {
				require.Contains(t, f, "index entries for LIMIT")
			}
			// The catalogue's own statement passes on the same data.
			opts.Catalog = nil
			rep, err = planguard.CheckDistributions(context.Background(), drv, []planguard.Distribution{planguard.Backlog()}, opts)
			require.NoError(t, err)
			require.Empty(t, rep.FailureLines())
		})
	}
}
