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
		{"empty is the local sqlite file", "", Parsed{Dialect: SQLite, DSN: "lockstep.db", Redacted: "sqlite:lockstep.db"}},
		{"blank is the local sqlite file", "  ", Parsed{Dialect: SQLite, DSN: "lockstep.db", Redacted: "sqlite:lockstep.db"}},
		{"sqlite opaque", "sqlite:data/q.db", Parsed{Dialect: SQLite, DSN: "sqlite:data/q.db", Redacted: "sqlite:data/q.db"}},
		{"sqlite relative url", "sqlite://q.db", Parsed{Dialect: SQLite, DSN: "sqlite:q.db", Redacted: "sqlite:q.db"}},
		{"sqlite absolute url", "sqlite:///var/lib/q.db", Parsed{Dialect: SQLite, DSN: "sqlite:/var/lib/q.db", Redacted: "sqlite:/var/lib/q.db"}},
		{"sqlite opaque absolute", "sqlite:/tmp/q.db", Parsed{Dialect: SQLite, DSN: "sqlite:/tmp/q.db", Redacted: "sqlite:/tmp/q.db"}},
		{"sqlite scheme is case-insensitive", "SQLite:q.db", Parsed{Dialect: SQLite, DSN: "sqlite:q.db", Redacted: "sqlite:q.db"}},
		{"sqlite keeps a query", "sqlite:q.db?cache=shared", Parsed{Dialect: SQLite, DSN: "sqlite:q.db?cache=shared", Redacted: "sqlite:q.db?cache=shared"}},
		{"sqlite file uri", "file:q.db?mode=rwc", Parsed{Dialect: SQLite, DSN: "file:q.db?mode=rwc", Redacted: "file:q.db?mode=rwc"}},
		{"bare file name", "lockstep.db", Parsed{Dialect: SQLite, DSN: "sqlite:lockstep.db", Redacted: "sqlite:lockstep.db"}},
		{"bare relative path", "./data/q.db", Parsed{Dialect: SQLite, DSN: "sqlite:./data/q.db", Redacted: "sqlite:./data/q.db"}},
		{"bare absolute path", "/var/lib/q.sqlite3", Parsed{Dialect: SQLite, DSN: "sqlite:/var/lib/q.sqlite3", Redacted: "sqlite:/var/lib/q.sqlite3"}},
		{
			"mysql full", "mysql://app:secret@db.internal:3307/queue",
			Parsed{Dialect: MySQL, DSN: "app:secret@tcp(db.internal:3307)/queue", Redacted: "mysql://app:xxxxx@db.internal:3307/queue"},
		},
		{
			"mysql several hosts", "mysql://app:secret@db1:3306,db2/queue",
			Parsed{Dialect: MySQL, DSN: "app:secret@tcp(db1:3306)/queue", Redacted: "mysql://app:xxxxx@db1:3306,db2/queue",
				Hosts: []string{"db1:3306", "db2:3306"}},
		},
		{
			"mysql default port", "mysql://app:secret@db.internal/queue",
			Parsed{Dialect: MySQL, DSN: "app:secret@tcp(db.internal:3306)/queue", Redacted: "mysql://app:xxxxx@db.internal/queue"},
		},
		{
			"mysql default host", "mysql://root@/queue",
			Parsed{Dialect: MySQL, DSN: "root@tcp(127.0.0.1:3306)/queue", Redacted: "mysql://root@/queue"},
		},
		{
			"mariadb scheme", "mariadb://app:pw@127.0.0.1:3306/app",
			Parsed{Dialect: MySQL, DSN: "app:pw@tcp(127.0.0.1:3306)/app", Redacted: "mariadb://app:xxxxx@127.0.0.1:3306/app"},
		},
		{
			"mysql percent-decodes user and password", "mysql://us%40er:p%40ss%3Aw%2Fo@h/db",
			Parsed{Dialect: MySQL, DSN: "us@er:p@ss:w/o@tcp(h:3306)/db", Redacted: "mysql://us%40er:xxxxx@h/db"},
		},
		{
			"mysql keeps params", "mysql://u:p@h:3306/db?tls=skip-verify&loc=Asia%2FSeoul",
			Parsed{Dialect: MySQL, DSN: "u:p@tcp(h:3306)/db?tls=skip-verify&loc=Asia%2FSeoul", Redacted: "mysql://u:xxxxx@h:3306/db?tls=skip-verify&loc=Asia%2FSeoul"},
		},
		{
			"mysql ipv6 host", "mysql://u@[::1]/db",
			Parsed{Dialect: MySQL, DSN: "u@tcp([::1]:3306)/db", Redacted: "mysql://u@[::1]/db"},
		},
		{
			"mysql unix socket", "mysql://u:pw@/db?socket=/run/mysqld/mysqld.sock",
			Parsed{Dialect: MySQL, DSN: "u:pw@unix(/run/mysqld/mysqld.sock)/db", Redacted: "mysql://u:xxxxx@/db?socket=/run/mysqld/mysqld.sock"},
		},
		{
			"go-sql-driver dsn", "user:pass@tcp(127.0.0.1:3306)/db?parseTime=true",
			Parsed{Dialect: MySQL, DSN: "user:pass@tcp(127.0.0.1:3306)/db?parseTime=true", Redacted: "user:xxxxx@tcp(127.0.0.1:3306)/db?parseTime=true"},
		},
		{"go-sql-driver without password or port", "user@tcp(host)/db", Parsed{Dialect: MySQL, DSN: "user@tcp(host)/db", Redacted: "user@tcp(host)/db"}},
		{"go-sql-driver unix socket", "user@unix(/run/mysqld/mysqld.sock)/db", Parsed{Dialect: MySQL, DSN: "user@unix(/run/mysqld/mysqld.sock)/db", Redacted: "user@unix(/run/mysqld/mysqld.sock)/db"}},
		{"go-sql-driver defaults", "@/db", Parsed{Dialect: MySQL, DSN: "@/db", Redacted: "@/db"}},
		{
			"postgres passed as is", "postgres://app:secret@localhost:5432/queue?sslmode=disable",
			Parsed{Dialect: Postgres, DSN: "postgres://app:secret@localhost:5432/queue?sslmode=disable", Redacted: "postgres://app:xxxxx@localhost:5432/queue?sslmode=disable"},
		},
		{
			"postgresql scheme", "postgresql://app@localhost/queue",
			Parsed{Dialect: Postgres, DSN: "postgresql://app@localhost/queue", Redacted: "postgresql://app@localhost/queue"},
		},
		{
			"postgres password in the query is redacted", "postgres://app@localhost/queue?password=secret",
			Parsed{Dialect: Postgres, DSN: "postgres://app@localhost/queue?password=secret", Redacted: "postgres://app@localhost/queue?password=xxxxx"},
		},
		{
			"postgres several hosts, as pgx takes them", "postgres://app:secret@h1:5432,h2:5433/queue",
			Parsed{Dialect: Postgres, DSN: "postgres://app:secret@h1:5432,h2:5433/queue", Redacted: "postgres://app:xxxxx@h1:5432,h2:5433/queue"},
		},
		{
			"libpq key=value", "host=localhost port=5432 user=app dbname=app sslmode=disable",
			Parsed{Dialect: Postgres, DSN: "host=localhost port=5432 user=app dbname=app sslmode=disable", Redacted: "host=localhost port=5432 user=app dbname=app sslmode=disable"},
		},
		{
			"libpq key=value with a password", "host=localhost user=app password='s3 cret' dbname=app",
			Parsed{Dialect: Postgres, DSN: "host=localhost user=app password='s3 cret' dbname=app", Redacted: "host=localhost user=app password=xxxxx dbname=app"},
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
		{"unknown opaque scheme", "redis:localhost", `unknown database scheme "redis"`},
		{"a dialect alone", "postgres", `database DSN "postgres" names a database type but not the database`},
		{"key=value that is not libpq's", "hots=localhost prot=5432", "none of its keys is a PostgreSQL connection keyword"},
		{"sqlite without path", "sqlite:", "no file path"},
		{"sqlite url without path", "sqlite://", "no file path"},
		{"mysql without database", "mysql://app:secret@h:3306", "needs exactly one database name"},
		{"mysql with nested path", "mysql://app:secret@h:3306/a/b", "needs exactly one database name"},
		{"mysql bad port", "mysql://app:secret@h:port/db", "not a valid URL"},
		{"mysql opaque", "mysql:app:secret@h/db", "mysql DSN must be a URL"},
		{"mysql bad param", "mysql://app:secret@h/db?parseTime=maybe", "mysql DSN mysql://app:xxxxx@h/db"},
		{"mysql strict panics go-sql-driver", "mysql://app:secret@h/db?strict=true", "the strict parameter was removed"},
		{"go-sql-driver unterminated address", "app:secret@tcp(h:3306/db", "mysql DSN app:xxxxx@tcp(h:3306/db: invalid DSN: network address not terminated"},
		{"go-sql-driver bad param", "app:secret@tcp(h)/db?timeout=soon", `parameter timeout="soon" is not a duration`},
		{"postgres bad host", "postgres://app:secret@h o/db", "failed to parse as URL"},
		{"postgres bad sslmode", "host=h password=secret sslmode=maybe", "postgres DSN host=h password=xxxxx sslmode=maybe: failed to configure TLS (sslmode is invalid)"},
		{"libpq key=value unterminated", "host=h password='secret", "has a quoted value without its closing quote"},
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
	for _, form := range []string{"mysql://", "@tcp(", "postgres://", "dbname=", "sqlite:", "file:", "./lockstep.db"} {
		require.ErrorContains(t, err, form)
	}
}

func TestOpenSQLite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, in := range []string{
		"sqlite://" + filepath.Join(dir, "url.db"), // the path is absolute: sqlite:///tmp/...
		filepath.Join(dir, "bare.db"),
		"file:" + filepath.Join(dir, "uri.db") + "?mode=rwc",
	} {
		d, err := Open(ctx, in)
		require.NoError(t, err, in)
		require.Equal(t, "sqlite", d.Dialect())
		require.NoError(t, d.DB().PingContext(ctx))
		require.NoError(t, d.Close())
	}
	for _, name := range []string{"url.db", "bare.db", "uri.db"} {
		require.FileExists(t, filepath.Join(dir, name))
	}
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
		{"bad escape in a postgres password", "postgres://u:s%zzecret@h/db", "pgx cannot read its password"},
		{"sqlite path with a NUL", "sqlite:a\x00b.db", "contains a NUL byte"},
		{"mysql parameter with a newline", "mysql://u:secret@h/db?tls=%0A", `invalid value / unknown config name: \n`},
		{"go-sql-driver dsn with a newline", "u:secret@tcp(h)/d\nb?strict=1", `mysql DSN u:xxxxx@tcp(h)/d\nb?strict=1: the strict parameter`},
		// pgx splits at '&' only, so a=1;password=secret is refused; its
		// error shows the DSN redacted as if ';' split too.
		{"postgres password after a semicolon", "postgres://app@h/db?a=1;password=secret", `postgres DSN postgres://app@h/db?a=1;password=xxxxx: failed to parse as URL (extra key/value separator "=" in URI query parameter: "a")`},
		{"mysql host percent-encoding a control character", "mysql://u:secret@%10/db", "a host name holds white space, a control character"},
		{"mysql password with a raw slash", "mysql://u:sec/ret@h/db", "write them %2F, %3F and %23"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.in)
			require.ErrorContains(t, err, tt.wantErr)
			require.NotContains(t, err.Error(), "\n", "one line")
			require.NotContains(t, err.Error(), "secret")
			require.NotContains(t, err.Error(), "zzcret")
			require.NotContains(t, err.Error(), "zzecret")
			require.NotContains(t, err.Error(), "ret@")
		})
	}
	for _, tt := range []struct{ name, in, redacted string }{
		{"postgres password with a semicolon", "postgres://app@h/db?password=se;cret&sslmode=disable", "postgres://app@h/db?password=xxxxx&sslmode=disable"},
		{"postgres password that is a semicolon", "postgres://?password=;", "postgres://?password=xxxxx"},
		{"postgres password key escaped", "postgres://app@h/db?pass%77ord=secret", "postgres://app@h/db?pass%77ord=xxxxx"},
		{"empty password is not shown as one", "postgres://app:@h/db", "postgres://app:@h/db"},
		{"query order is kept", "postgres://app:secret@h/db?sslmode=disable&password=secret&application_name=x", "postgres://app:xxxxx@h/db?sslmode=disable&password=xxxxx&application_name=x"},
		{"postgres password holding '?' and '#', as libpq reads it", "postgres://app:se?c#ret@h/db", "postgres://app:xxxxx@h/db"},
		{"sqlite path starting with two slashes", "sqlite:////srv/q.db", "sqlite:////srv/q.db"},
		{"spaces in the query are shown escaped", "mysql://u:secret@h/db? a=b", "mysql://u:xxxxx@h/db?%20a=b"},
		{"non-ASCII space in the query", "postgres://u@h/db?application_name=a\u00a0b", "postgres://u@h/db?application_name=a%C2%A0b"},
		{"go-sql-driver password holding '@'", "u:se@cret@tcp(h)/db", "u:xxxxx@tcp(h)/db"},
		{"go-sql-driver switch named like a password", "u:secret@tcp(h)/db?allowCleartextPasswords=true", "u:xxxxx@tcp(h)/db?allowCleartextPasswords=true"},
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
	require.Equal(t, "sqlite:////srv/q.db", p.DSN)
	// go-sql-driver escapes the database name: a '?' in it survives.
	p, err = Parse("mysql://u:secret@h/d%3Fb")
	require.NoError(t, err)
	cfg, err := gomysql.ParseDSN(p.DSN)
	require.NoError(t, err)
	require.Equal(t, "d?b", cfg.DBName)
}
