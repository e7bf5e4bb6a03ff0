package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/drivertest"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
)

func factory(t *testing.T) drivertest.Opener {
	path := filepath.Join(t.TempDir(), "lockstep.db")
	return func(t *testing.T) driver.Driver {
		d, err := sqlite.Open(context.Background(), path)
		require.NoError(t, err)
		t.Cleanup(func() { _ = d.Close() })
		return d
	}
}

func TestConformance(t *testing.T) { drivertest.Run(t, factory) }
