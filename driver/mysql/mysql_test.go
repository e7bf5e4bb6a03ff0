package mysql_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/drivertest"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func factory(t *testing.T) drivertest.Opener {
	dsn := testdb.MySQL(t)
	return func(t *testing.T) driver.Driver {
		d, err := mysql.Open(context.Background(), dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = d.Close() })
		return d
	}
}

func TestConformance(t *testing.T) { drivertest.Run(t, factory) }

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
