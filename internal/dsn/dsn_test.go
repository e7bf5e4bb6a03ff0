package dsn

import (
	"context"
	"path/filepath"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, in string
		want     Parsed
	}{
		{"empty is the local sqlite file", "", Parsed{SQLite, "lockstep.db", "sqlite:lockstep.db"}},
		{"blank is the local sqlite file", "  ", Parsed{SQLite, "lockstep.db", "sqlite:lockstep.db"}},
		{"sqlite opaque", "sqlite:data/q.db", Parsed{SQLite, "data/q.db", "sqlite:data/q.db"}},
		{"sqlite relative url", "sqlite://q.db", Parsed{SQLite, "q.db", "sqlite:q.db"}},
		{"sqlite absolute url", "sqlite:///var/lib/q.db", Parsed{SQLite, "/var/lib/q.db", "sqlite:/var/lib/q.db"}},
		{"sqlite opaque absolute", "sqlite:/tmp/q.db", Parsed{SQLite, "/tmp/q.db", "sqlite:/tmp/q.db"}},
		{"sqlite scheme is case-insensitive", "SQLite:q.db", Parsed{SQLite, "q.db", "sqlite:q.db"}},
		{"sqlite keeps a query", "sqlite:q.db?cache=shared", Parsed{SQLite, "q.db?cache=shared", "sqlite:q.db?cache=shared"}},
		{
			"mysql full", "mysql://app:secret@db.internal:3307/queue",
			Parsed{MySQL, "app:secret@tcp(db.internal:3307)/queue", "mysql://app:xxxxx@db.internal:3307/queue"},
		},
		{
			"mysql default port", "mysql://app:secret@db.internal/queue",
			Parsed{MySQL, "app:secret@tcp(db.internal:3306)/queue", "mysql://app:xxxxx@db.internal/queue"},
		},
		{
			"mysql default host", "mysql://root@/queue",
			Parsed{MySQL, "root@tcp(127.0.0.1:3306)/queue", "mysql://root@/queue"},
		},
		{
			"mariadb scheme", "mariadb://app:pw@127.0.0.1:3306/app",
			Parsed{MySQL, "app:pw@tcp(127.0.0.1:3306)/app", "mariadb://app:xxxxx@127.0.0.1:3306/app"},
		},
		{
			"mysql percent-decodes user and password", "mysql://us%40er:p%40ss%3Aw%2Fo@h/db",
			Parsed{MySQL, "us@er:p@ss:w/o@tcp(h:3306)/db", "mysql://us%40er:xxxxx@h/db"},
		},
		{
			"mysql keeps params", "mysql://u:p@h:3306/db?tls=skip-verify&loc=Asia%2FSeoul",
			Parsed{MySQL, "u:p@tcp(h:3306)/db?tls=skip-verify&loc=Asia%2FSeoul", "mysql://u:xxxxx@h:3306/db?tls=skip-verify&loc=Asia%2FSeoul"},
		},
		{
			"mysql ipv6 host", "mysql://u@[::1]/db",
			Parsed{MySQL, "u@tcp([::1]:3306)/db", "mysql://u@[::1]/db"},
		},
		{
			"postgres passed as is", "postgres://app:secret@localhost:5432/queue?sslmode=disable",
			Parsed{Postgres, "postgres://app:secret@localhost:5432/queue?sslmode=disable", "postgres://app:xxxxx@localhost:5432/queue?sslmode=disable"},
		},
		{
			"postgresql scheme", "postgresql://app@localhost/queue",
			Parsed{Postgres, "postgresql://app@localhost/queue", "postgresql://app@localhost/queue"},
		},
		{
			"postgres password in the query is redacted", "postgres://app@localhost/queue?password=secret",
			Parsed{Postgres, "postgres://app@localhost/queue?password=secret", "postgres://app@localhost/queue?password=xxxxx"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
	}{
		{"unknown scheme", "oracle://scott:tiger@h/db", `unknown database scheme "oracle"`},
		{"no scheme", "lockstep.db", "has no scheme"},
		{"go-sql-driver dsn", "app:secret@tcp(h:3306)/db", "looks like a go-sql-driver DSN"},
		{"sqlite without path", "sqlite:", "no file path"},
		{"sqlite url without path", "sqlite://", "no file path"},
		{"mysql without database", "mysql://app:secret@h:3306", "needs exactly one database name"},
		{"mysql with nested path", "mysql://app:secret@h:3306/a/b", "needs exactly one database name"},
		{"mysql bad port", "mysql://app:secret@h:port/db", "not a valid URL"},
		{"mysql opaque", "mysql:app:secret@h/db", "must have the form"},
		{"mysql bad param", "mysql://app:secret@h/db?parseTime=maybe", "mysql DSN mysql://app:xxxxx@h/db"},
		{"postgres bad host", "postgres://app:secret@h o/db", "not a valid URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.in)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.wantErr)
			require.NotContains(t, err.Error(), "secret", "an error message must never show a password")
			require.NotContains(t, err.Error(), "tiger", "an error message must never show a password")
		})
	}
}

func TestErrorsNameTheAcceptedForms(t *testing.T) {
	_, err := Parse("redis://localhost")
	require.ErrorContains(t, err, "mysql://")
	require.ErrorContains(t, err, "postgres://")
	require.ErrorContains(t, err, "sqlite:")
}

func TestOpenSQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.db")
	d, err := Open(ctx, "sqlite://"+path) // path is absolute: sqlite:///tmp/...
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	require.Equal(t, "sqlite", d.Dialect())
	require.NoError(t, d.DB().PingContext(ctx))
	require.FileExists(t, path)
}

func TestOpenRefusesBadDSN(t *testing.T) {
	_, err := Open(context.Background(), "mysql://u:secret@h")
	require.ErrorContains(t, err, "database name")
	require.NotContains(t, err.Error(), "secret")
}

// The converted DSN must read back, in go-sql-driver, as the URL meant.
func TestMySQLRoundTrip(t *testing.T) {
	p, err := Parse("mysql://us%40er:p%40ss%3Aw%2Fo%3F@db.example:3307/app?parseTime=true&loc=Asia%2FSeoul")
	require.NoError(t, err)
	cfg, err := gomysql.ParseDSN(p.DSN)
	require.NoError(t, err)
	require.Equal(t, "us@er", cfg.User)
	require.Equal(t, "p@ss:w/o?", cfg.Passwd)
	require.Equal(t, "tcp", cfg.Net)
	require.Equal(t, "db.example:3307", cfg.Addr)
	require.Equal(t, "app", cfg.DBName)
	require.True(t, cfg.ParseTime)
	require.Equal(t, "Asia/Seoul", cfg.Loc.String())
}

// Inputs the fuzzer found (each is also in the corpus under
// testdata/fuzz/FuzzParse): what go-sql-driver cannot carry is refused,
// not silently changed; no error or redacted form shows a password.
func TestParseFuzzFindings(t *testing.T) {
	for _, tt := range []struct{ name, in, wantErr string }{
		{"mysql password without a user", "mysql://:secret@h/db", "has a password but no user name"},
		{"mysql user with a colon", "mysql://us%3Aer:secret@h/db", "its user name and password cannot be passed to go-sql-driver as written (its DSN cannot carry a ':' in the user name)"},
		{"bad escape in the password", "mysql://u:se%zzcret@h/db", "a '%' is not followed by two hex digits"},
		{"bad escape in a postgres password", "postgres://u:s%zzecret@h/db", "a '%' is not followed by two hex digits"},
		{"sqlite path with a NUL", "sqlite:a\x00b.db", "contains a NUL byte"},
		{"mysql parameter with a newline", "mysql://u:secret@h/db?tls=%0A", `invalid value / unknown config name: \n`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.in)
			require.ErrorContains(t, err, tt.wantErr)
			require.NotContains(t, err.Error(), "\n", "one line")
			require.NotContains(t, err.Error(), "secret")
			require.NotContains(t, err.Error(), "zzcret")
			require.NotContains(t, err.Error(), "zzecret")
		})
	}
	for _, tt := range []struct{ name, in, redacted string }{
		{"postgres password with a semicolon", "postgres://app@h/db?password=se;cret&sslmode=disable", "postgres://app@h/db?password=xxxxx;cret&sslmode=disable"},
		{"postgres password after a semicolon", "postgres://app@h/db?a=1;password=secret", "postgres://app@h/db?a=1;password=xxxxx"},
		{"postgres password key escaped", "postgres://app@h/db?pass%77ord=secret", "postgres://app@h/db?pass%77ord=xxxxx"},
		{"empty password is not shown as one", "postgres://app:@h/db", "postgres://app:@h/db"},
		{"query order is kept", "postgres://app:secret@h/db?sslmode=disable&password=secret&application_name=x", "postgres://app:xxxxx@h/db?sslmode=disable&password=xxxxx&application_name=x"},
		{"sqlite path starting with two slashes", "sqlite:////srv/q.db", "sqlite:////srv/q.db"},
		{"spaces in the query are shown escaped", "mysql://u:secret@h/db? #", "mysql://u:xxxxx@h/db?%20"},
		{"non-ASCII space in the query", "postgres://u@h/db?application_name=a\u00a0b", "postgres://u@h/db?application_name=a%C2%A0b"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.redacted, p.Redacted)
			require.NotContains(t, p.Redacted, "secret")
			again, err := Parse(p.Redacted)
			require.NoError(t, err)
			require.Equal(t, p.Redacted, again.Redacted)
		})
	}
	p, err := Parse("sqlite:////srv/q.db")
	require.NoError(t, err)
	require.Equal(t, "//srv/q.db", p.DSN)
	// go-sql-driver escapes the database name: a '?' in it survives.
	p, err = Parse("mysql://u:secret@h/d%3Fb")
	require.NoError(t, err)
	cfg, err := gomysql.ParseDSN(p.DSN)
	require.NoError(t, err)
	require.Equal(t, "d?b", cfg.DBName)
}
