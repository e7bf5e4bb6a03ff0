package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/drivertest"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/rowtype"
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

// TestClassifiesBusy: a second writer with no busy timeout gets SQLITE_BUSY,
// classified by code.
func TestClassifiesBusy(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "busy.db")
	d, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	holder, err := d.BeginSQL(ctx) // BEGIN IMMEDIATE: holds the write lock
	require.NoError(t, err)
	defer holder.Rollback()

	impatient, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)&_txlock=immediate")
	require.NoError(t, err)
	t.Cleanup(func() { _ = impatient.Close() })
	_, err = impatient.BeginTx(ctx, nil)
	require.Error(t, err)
	require.Equal(t, rowtype.ErrorBusy, d.ClassifyError(err))
	require.True(t, d.ClassifyError(err).Retryable())
}

// TestClassifiesDuplicateKeys: a duplicate primary key is a duplicate like
// a duplicate unique key, as it is on MySQL and PostgreSQL.
func TestClassifiesDuplicateKeys(t *testing.T) {
	ctx := context.Background()
	d, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "dup.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	_, err = d.DB().ExecContext(ctx, "CREATE TABLE dup (id INTEGER PRIMARY KEY, name TEXT UNIQUE)")
	require.NoError(t, err)
	_, err = d.DB().ExecContext(ctx, "INSERT INTO dup (id, name) VALUES (1, 'a')")
	require.NoError(t, err)
	_, err = d.DB().ExecContext(ctx, "INSERT INTO dup (id, name) VALUES (1, 'b')")
	require.Error(t, err)
	require.Equal(t, rowtype.ErrorDuplicate, d.ClassifyError(err), "primary key")
	_, err = d.DB().ExecContext(ctx, "INSERT INTO dup (id, name) VALUES (2, 'a')")
	require.Error(t, err)
	require.Equal(t, rowtype.ErrorDuplicate, d.ClassifyError(err), "unique index")
	require.False(t, d.ClassifyError(err).Retryable())
}
