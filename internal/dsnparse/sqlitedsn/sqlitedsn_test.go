package sqlitedsn

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/dsnparse"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in               string
		form             dsnparse.Form
		path, shown, uri string
	}{
		{"sqlite:data/q.db", dsnparse.SQLiteScheme, "data/q.db", "sqlite:data/q.db", "file:data/q.db"},
		{"sqlite://q.db", dsnparse.SQLiteScheme, "q.db", "sqlite:q.db", "file:q.db"},
		{"sqlite:///var/lib/q.db", dsnparse.SQLiteScheme, "/var/lib/q.db", "sqlite:/var/lib/q.db", "file:/var/lib/q.db"},
		{"SQLite3:q.db?cache=shared", dsnparse.SQLiteScheme, "q.db?cache=shared", "sqlite:q.db?cache=shared", "file:q.db?cache=shared"},
		{"sqlite:////srv/q.db", dsnparse.SQLiteScheme, "//srv/q.db", "sqlite:////srv/q.db", "file:////srv/q.db"},
		{"lockstep.db", dsnparse.SQLitePath, "lockstep.db", "sqlite:lockstep.db", "file:lockstep.db"},
		{"./data/q.db", dsnparse.SQLitePath, "./data/q.db", "sqlite:./data/q.db", "file:./data/q.db"},
		{"/var/lib/q.sqlite3", dsnparse.SQLitePath, "/var/lib/q.sqlite3", "sqlite:/var/lib/q.sqlite3", "file:/var/lib/q.sqlite3"},
		{"/tmp/100%#1.db?mode=rwc", dsnparse.SQLitePath, "/tmp/100%#1.db?mode=rwc", "sqlite:/tmp/100%#1.db?mode=rwc", "file:/tmp/100%25%231.db?mode=rwc"},
		{"sqlite:host:port.db", dsnparse.SQLiteScheme, "host:port.db", "sqlite:host:port.db", "file:host:port.db"},
		{"sqlite:mysql", dsnparse.SQLiteScheme, "mysql", "sqlite:mysql", "file:mysql"},
		{"sqlite:a=b.db", dsnparse.SQLiteScheme, "a=b.db", "sqlite:a=b.db", "file:a=b.db"},
		{"file:q.db?mode=ro", dsnparse.SQLiteFileURI, "file:q.db?mode=ro", "file:q.db?mode=ro", "file:q.db?mode=ro"},
		{"FILE:///abs/q%20x.db", dsnparse.SQLiteFileURI, "file:///abs/q%20x.db", "file:///abs/q%20x.db", "file:///abs/q%20x.db"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			d, err := Parse(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.form, d.Form)
			require.Equal(t, tt.path, d.Path)
			require.Equal(t, tt.shown, d.Shown)
			require.Equal(t, tt.uri, d.URI())
			again, err := Parse(d.Shown)
			require.NoError(t, err)
			require.Equal(t, d.URI(), again.URI(), "Shown names the same database")
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"sqlite:", "sqlite DSN has no file path"},
		{"sqlite://", "sqlite DSN has no file path"},
		{"sqlite:?mode=ro", "sqlite DSN has no file path"},
		{"file:", "sqlite DSN has no file path; use file:path/to/file.db?params"},
		{"file://?x", "sqlite DSN has no file path"},
		{"sqlite:a\x00b.db", "contains a NUL byte"},
		{"a\x00b.db", "contains a NUL byte"},
		{"", "database DSN is empty; accepted forms: " + dsnparse.SQLiteForms},
		// A path with a ':' is taken for a scheme: sqlite:host:port.db
		// writes it (above).
		{"host:port.db", `unknown database scheme "host"`},
		{"redis:x", `unknown database scheme "redis"; accepted forms: ` + dsnparse.SQLiteForms},
	} {
		_, err := Parse(tt.in)
		require.ErrorContains(t, err, tt.want, tt.in)
	}
	for in, got := range map[string]dsnparse.Form{
		"mysql://app:secret@h/db":         dsnparse.MySQLURL,
		"app:secret@tcp(h:3306)/db":       dsnparse.MySQLNative,
		"postgres://app:secret@h/db":      dsnparse.PostgresURL,
		"host=h password=secret dbname=q": dsnparse.PostgresKeywords,
	} {
		_, err := Parse(in)
		var wd *dsnparse.WrongDialectError
		require.True(t, errors.As(err, &wd), "%s: %v", in, err)
		require.Equal(t, got, wd.Got)
		require.ErrorContains(t, err, "sqlite DSN expected, got "+got.String()+"; accepted forms: "+dsnparse.SQLiteForms)
		require.NotContains(t, err.Error(), "secret")
	}
}
