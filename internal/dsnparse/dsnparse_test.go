package dsnparse

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDetect(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Form
	}{
		{"mysql://u:p@h:3306/db", MySQLURL},
		{"MariaDB://u@h/db", MySQLURL},
		{"mysql://u:p@h1:3306,h2:3306/db", MySQLURL},
		{"user:pass@tcp(127.0.0.1:3306)/db?parseTime=true", MySQLNative},
		{"user@tcp(host)/db", MySQLNative},
		{"user@tcp/db", MySQLNative},
		{"user@unix(/run/mysqld/mysqld.sock)/db", MySQLNative},
		{"@/db", MySQLNative},
		{"u:p@/db", MySQLNative},
		{"tcp(h:3306)/db", MySQLNative},
		{"unix(/tmp/m.sock)/db", MySQLNative},
		{"u:p@cloudsql(project:region:instance)/db", MySQLNative},
		{"mysql:pw@tcp(h)/db", MySQLNative}, // a user named mysql
		{"postgres://u:p@h:5432/db", PostgresURL},
		{"postgresql://u@h1,h2/db", PostgresURL},
		{"host=localhost port=5432 user=app dbname=app sslmode=disable", PostgresKeywords},
		{"dbname=app", PostgresKeywords},
		{"search_path=x host=h", PostgresKeywords}, // a later key is libpq's
		{"host = localhost", PostgresKeywords},
		{"hots=localhost password=secret", PostgresKeywords}, // password is libpq's: pgx reports hots
		{"host='unterminated", PostgresKeywords},             // broken, but meant as key=value
		{"sqlite:q.db", SQLiteScheme},
		{"SQLite3:q.db", SQLiteScheme},
		{"sqlite:///abs/q.db", SQLiteScheme},
		{"file:q.db?mode=ro", SQLiteFileURI},
		{"lockstep.db", SQLitePath},
		{"./data/q.db", SQLitePath},
		{"../q.db", SQLitePath},
		{"/var/lib/q.sqlite3", SQLitePath},
		{"/tmp/u@tcp(h)/q.db", SQLitePath}, // a leading '/' is always a path
		{"data/q.db", SQLitePath},
		{"me@home/q.db", SQLitePath}, // home is no network go-sql-driver knows
		{"backups@2024/q.db", SQLitePath},
		{`C:\data\q.db`, SQLitePath},
		{":memory:", SQLitePath},
		{"my queue.db", SQLitePath},
	} {
		got, err := Detect(tt.in)
		require.NoError(t, err, tt.in)
		require.Equal(t, tt.want, got, tt.in)
	}
}

func TestDetectRefuses(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", "database DSN is empty"},
		{"foo://x", `unknown database scheme "foo"; accepted forms: ` + Forms},
		{"Oracle://scott:tiger@h/db", `unknown database scheme "Oracle"`},
		{"redis:localhost", `unknown database scheme "redis"`},
		{"mysql:app:secret@h/db", "mysql DSN must be a URL (mysql://…) or go-sql-driver's user:pass@tcp(host:port)/db"},
		{"postgres:h/db", "postgres DSN must be a URL"},
		{"mysql", `database DSN "mysql" names a database type but not the database (for a SQLite file of that name, write sqlite:mysql)`},
		{"hots=localhost prot=5432", "none of its keys is a PostgreSQL connection keyword"},
		{"a=b.db", "for a SQLite file whose name has '=', write sqlite:NAME"},
	} {
		_, err := Detect(tt.in)
		require.ErrorContains(t, err, tt.want, tt.in)
		require.NotContains(t, err.Error(), "secret")
		require.NotContains(t, err.Error(), "tiger")
	}
}

func TestKeywords(t *testing.T) {
	s := `host=h  password='it''s' user = app sslpassword=a\ b dbname=`
	_, err := Keywords(s)
	require.Error(t, err, "'' is no escape in libpq: the quote ends the value and s is left without '='")

	s = `host=h password='two words\'' user = app sslpassword=a\ b dbname=`
	pairs, err := Keywords(s)
	require.NoError(t, err)
	require.Equal(t, []Pair{
		{Key: "host", Value: "h", Start: 5, End: 6},
		{Key: "password", Value: "two words'", Start: 16, End: 29},
		{Key: "user", Value: "app", Start: 37, End: 40},
		{Key: "sslpassword", Value: "a b", Start: 53, End: 57},
		{Key: "dbname", Value: "", Start: 65, End: 65},
	}, pairs)
	require.Equal(t, `host=h password=xxxxx user = app sslpassword=xxxxx dbname=`, RedactKeywords(s, pairs))

	for _, bad := range []string{"host", "host=h port", "=x", "password='secret", "a b=c", "host=\x00"} {
		_, err := Keywords(bad)
		require.Error(t, err, bad)
		require.NotContains(t, err.Error(), "secret")
	}
	pairs, err = Keywords(`password=ends\`)
	require.NoError(t, err, "a trailing backslash ends the value, as in pgx")
	require.Equal(t, "ends", pairs[0].Value)
}

func TestSecretKey(t *testing.T) {
	for k, secret := range map[string]bool{
		"password": true, "PassWord": true, "sslpassword": true, "passfile": true,
		"oauth_client_secret": true, "scram_client_key": true,
		"allowCleartextPasswords": false, "allowNativePasswords": false, "host": false, "user": false,
	} {
		require.Equal(t, secret, SecretKey(k), k)
	}
}

func TestRedactQuery(t *testing.T) {
	require.Equal(t, "sslmode=disable&password=xxxxx&allowCleartextPasswords=true&a=%20b",
		RedactQuery("sslmode=disable&password=se;x=1&allowCleartextPasswords=true&a= b"))
	require.Equal(t, "a=1;password=xxxxx&b=2", RedactQuery("a=1;password=se;cret&b=2"))
	require.Equal(t, "password=xxxxx", RedactQuery("password=;"), "pgx reads the password ;")
	require.Equal(t, "pass%77ord=xxxxx", RedactQuery("pass%77ord=secret"))
}
