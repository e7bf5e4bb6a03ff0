package sqlite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/internal/dsnparse"
)

// TestOpenDSNForms: Open takes every SQLite form the CLI takes, and a path
// is a file name however it is written, '%' and '#' included.
func TestOpenDSNForms(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Chdir(dir)
	for dsn, file := range map[string]string{
		"bare.db":                    "bare.db",
		"./sub/../dot.db":            "dot.db",
		filepath.Join(dir, "abs.db"): "abs.db",
		"sqlite:scheme.db":           "scheme.db",
		"sqlite://" + filepath.Join(dir, "url.db"): "url.db", // sqlite:///tmp/…
		"file:uri.db?mode=rwc":                     "uri.db",
		"100%#1.db":                                "100%#1.db",
	} {
		if dsn == "./sub/../dot.db" {
			require.NoError(t, os.Mkdir("sub", 0o755))
		}
		d, err := sqlite.Open(ctx, dsn)
		require.NoError(t, err, dsn)
		require.NoError(t, d.DB().PingContext(ctx), dsn)
		require.NoError(t, d.Close())
		require.FileExists(t, filepath.Join(dir, file), dsn)
	}
}

func TestOpenRefusesOtherDialects(t *testing.T) {
	for dsn, got := range map[string]dsnparse.Form{
		"mysql://app:secret@db:3306/q":              dsnparse.MySQLURL,
		"app:secret@tcp(db:3306)/q":                 dsnparse.MySQLNative,
		"postgres://app:secret@db/q":                dsnparse.PostgresURL,
		"host=db user=app password=secret dbname=q": dsnparse.PostgresKeywords,
	} {
		_, err := sqlite.Open(context.Background(), dsn)
		var wd *dsnparse.WrongDialectError
		require.True(t, errors.As(err, &wd), "%s: %v", dsn, err)
		require.Equal(t, got, wd.Got)
		require.EqualError(t, err, "sqlite: sqlite DSN expected, got "+got.String()+"; accepted forms: "+dsnparse.SQLiteForms)
	}
	_, err := sqlite.Open(context.Background(), "sqlite:")
	require.EqualError(t, err, "sqlite: sqlite DSN has no file path; use sqlite:path/to/file.db or sqlite:///abs/path.db")
}
