package mysql_test

import (
	"context"
	"os"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/driver/drivertest"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// serverFlavor is one MySQL-family server the package's tests run on,
// with the error codes it was measured to send where the two differ.
type serverFlavor struct {
	name    string
	mariadb bool                    // what Driver.MariaDB must report
	dsn     func(testing.TB) string // a fresh, empty database on the shared server
	env     string                  // the variable naming an external server instead
	// start starts a server of the test's own, for tests that stop it.
	start func(context.Context, testdb.ServerOptions) (*testdb.Server, error)
	// nowaitCode answers FOR UPDATE NOWAIT on a locked row.
	nowaitCode uint16
	// idleCode is sent before the server closes a session for
	// inactivity; 0: none, the socket just closes.
	idleCode uint16
	// shutdownCode reaches a session waiting for a lock when the server
	// shuts down; 0: none.
	shutdownCode uint16
}

func serverFlavors() []serverFlavor {
	return []serverFlavor{
		{name: "MariaDB", mariadb: true, dsn: testdb.MySQL, env: testdb.EnvMySQLDSN, start: testdb.StartMySQLServer,
			nowaitCode: 1205},
		{name: "OracleMySQL", mariadb: false, dsn: testdb.OracleMySQL, env: testdb.EnvOracleMySQLDSN, start: testdb.StartOracleMySQLServer,
			nowaitCode: 3572, idleCode: 4031, shutdownCode: 1053},
	}
}

// forEachFlavor runs fn in a parallel subtest per server.
func forEachFlavor(t *testing.T, fn func(t *testing.T, f serverFlavor)) {
	for _, f := range serverFlavors() {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			fn(t, f)
		})
	}
}

// openFlavor opens the driver on a fresh database of f, closed with t.
func openFlavor(t *testing.T, f serverFlavor) *mysql.Driver {
	t.Helper()
	drv, err := mysql.Open(context.Background(), f.dsn(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	return drv
}

// factory gives the conformance suite fresh databases on f's server.
func factory(f serverFlavor) drivertest.Factory {
	return func(t *testing.T) drivertest.Opener {
		dsn := f.dsn(t)
		return func(t *testing.T) driver.Driver {
			d, err := mysql.Open(context.Background(), dsn)
			require.NoError(t, err)
			t.Cleanup(func() { _ = d.Close() })
			return d
		}
	}
}

func TestConformance(t *testing.T) {
	forEachFlavor(t, func(t *testing.T, f serverFlavor) { drivertest.Run(t, factory(f)) })
}

// TestFlavorFromServer: the driver tells MariaDB from Oracle MySQL by the
// server's version and picks the catalogue that server can run (INSERT …
// RETURNING on MariaDB only).
func TestFlavorFromServer(t *testing.T) {
	forEachFlavor(t, func(t *testing.T, f serverFlavor) {
		drv := openFlavor(t, f)
		require.Equal(t, f.mariadb, drv.MariaDB())
		require.Equal(t, f.mariadb, drv.Catalog().Get(catalog.JobInsert).Returning)
		require.Equal(t, f.mariadb, drv.Catalog().Get(catalog.RunInsert).Returning)
	})
}

func TestCheckVersion(t *testing.T) {
	for v, ok := range map[string]bool{
		"10.11.19-MariaDB-0+deb12u1": true, "10.6.0-MariaDB": true, "10.5.27-MariaDB": false,
		"8.0.1": true, "8.0.0-dmr": false, "8.4.11": true, "5.7.44-log": false, "garbage": false,
		"5.7": false, "8.4": true,
	} {
		_, err := mysql.CheckVersion(v)
		if ok {
			require.NoError(t, err, v)
		} else {
			require.Error(t, err, v)
		}
	}
	_, err := mysql.CheckVersion("5.7")
	require.ErrorContains(t, err, "needs 8.0.1", "a version without a patch part is still read")
}

// galeraFactory gives the conformance suite fresh databases on the shared
// three-node Galera cluster; each pool a test opens goes through the next
// node, as processes spread over the nodes would, and each test's first
// pool through the node after the last test's, so that every node takes
// every kind of write.
func galeraFactory() drivertest.Factory {
	var tests atomic.Int64
	return func(t *testing.T) drivertest.Opener {
		dsns := testdb.Galera(t)
		next := int(tests.Add(1))
		return func(t *testing.T) driver.Driver {
			dsn := dsns[next%len(dsns)]
			next++
			d, err := mysql.Open(context.Background(), dsn)
			require.NoError(t, err)
			t.Cleanup(func() { _ = d.Close() })
			return d
		}
	}
}

// TestConformanceGalera runs the conformance suite on a MariaDB Galera
// cluster, a test's pools spread over its nodes.
func TestConformanceGalera(t *testing.T) {
	drivertest.Run(t, galeraFactory())
}
