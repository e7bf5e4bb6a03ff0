package pgdsn

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/dsnparse"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in                   string
		form                 dsnparse.Form
		conn, redacted       string
		host, user, pass, db string
		port                 uint16
		fallbacks            int
	}{
		{"postgres://app:secret@localhost:5433/queue?sslmode=disable", dsnparse.PostgresURL,
			"postgres://app:secret@localhost:5433/queue?sslmode=disable", "postgres://app:xxxxx@localhost:5433/queue?sslmode=disable",
			"localhost", "app", "secret", "queue", 5433, 0},
		{"PostgreSQL://app@h/queue", dsnparse.PostgresURL,
			"postgresql://app@h/queue", "postgresql://app@h/queue", "h", "app", "", "queue", 5432, 0},
		{"postgres://app@h/queue?password=secret&application_name=x", dsnparse.PostgresURL,
			"postgres://app@h/queue?password=secret&application_name=x", "postgres://app@h/queue?password=xxxxx&application_name=x",
			"h", "app", "secret", "queue", 5432, 0},
		// libpq's reading, not net/url's: the user info ends at the first
		// '@', and '?' and '#' before it are the password's.
		{"postgres://app:se?c#ret@h/db", dsnparse.PostgresURL,
			"postgres://app:se?c#ret@h/db", "postgres://app:xxxxx@h/db", "h", "app", "se?c#ret", "db", 5432, 0},
		{"postgres://app:secret@h1:5432,[::1]:5433/db", dsnparse.PostgresURL,
			"postgres://app:secret@h1:5432,[::1]:5433/db", "postgres://app:xxxxx@h1:5432,[::1]:5433/db", "h1", "app", "secret", "db", 5432, 1},
		{"host=localhost port=5433 user=app dbname=app sslmode=disable", dsnparse.PostgresKeywords,
			"host=localhost port=5433 user=app dbname=app sslmode=disable", "host=localhost port=5433 user=app dbname=app sslmode=disable",
			"localhost", "app", "", "app", 5433, 0},
		{"host=h user=app password='two secret words' dbname=q", dsnparse.PostgresKeywords,
			"host=h user=app password='two secret words' dbname=q", "host=h user=app password=xxxxx dbname=q", "h", "app", "two secret words", "q", 5432, 0},
		{"host=h\tuser=app\ndbname=q", dsnparse.PostgresKeywords,
			"host=h\tuser=app\ndbname=q", "host=h\tuser=app\ndbname=q", "h", "app", "", "q", 5432, 0},
		{"host=h1,h2 port=5432,5433 user=app dbname=q", dsnparse.PostgresKeywords,
			"host=h1,h2 port=5432,5433 user=app dbname=q", "host=h1,h2 port=5432,5433 user=app dbname=q", "h1", "app", "", "q", 5432, 1},
	} {
		t.Run(tt.in, func(t *testing.T) {
			d, err := Parse(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.form, d.Form)
			require.Equal(t, tt.conn, d.ConnString)
			require.Equal(t, tt.redacted, d.Redacted)
			c := d.Config.ConnConfig
			require.Equal(t, tt.host, c.Host)
			require.Equal(t, tt.port, c.Port)
			require.Equal(t, tt.user, c.User)
			require.Equal(t, tt.pass, c.Password)
			require.Equal(t, tt.db, c.Database)
			hosts := []string{fmt.Sprintf("%s:%d", c.Host, c.Port)}
			for _, f := range c.Fallbacks {
				if h := fmt.Sprintf("%s:%d", f.Host, f.Port); !slices.Contains(hosts, h) {
					hosts = append(hosts, h)
				}
			}
			require.Len(t, hosts, tt.fallbacks+1, "pgx tries every host, in order: %v", hosts)
			again, err := Parse(d.Redacted)
			require.NoError(t, err)
			require.Equal(t, d.Redacted, again.Redacted, "the redacted form reads back as itself")
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"postgres://app:secret@h:port/db", "postgres DSN postgres://app:xxxxx@h:port/db: invalid port"},
		{"postgres://app:secret@h/db?sslmode=bogus", "postgres DSN postgres://app:xxxxx@h/db?sslmode=bogus: failed to configure TLS (sslmode is invalid)"},
		{"postgres://app:secret@h/db?pool_max_conns=many", `postgres DSN postgres://app:xxxxx@h/db?pool_max_conns=many: cannot parse pool_max_conns ("many" is not a valid number)`},
		{"host=h password=secret connect_timeout=soon", `postgres DSN host=h password=xxxxx connect_timeout=soon: invalid connect_timeout ("soon" is not a valid number)`},
		{"postgres://app:s%zzecret@h/db", "postgres DSN postgres://app:xxxxx@h/db: pgx cannot read its password"},
		{"postgres://app:s%00ecret@h/db", "postgres DSN postgres://app:xxxxx@h/db: pgx cannot read its password"},
		{"host=h password='secret", "postgres key=value DSN has a quoted value without its closing quote"},
		{"host=h password=my secret", "postgres key=value DSN has a word with no '=' after it"},
		{"postgres://app:secret@h o/db", "postgres DSN postgres://app:xxxxx@h o/db: failed to parse as URL"},
		{"postgres://app:secret@h/db\x7f", "postgres DSN contains a control character"},
		{"host=h dbname='a\x01b'", "postgres DSN contains a control character"},
		{"host=h application_name='a\nb' sslmode=bogus password=secret", `postgres DSN host=h application_name='a\nb' sslmode=bogus password=xxxxx: failed to configure TLS`},
	} {
		t.Run(tt.in, func(t *testing.T) {
			_, err := Parse(tt.in)
			require.ErrorContains(t, err, tt.want)
			for _, leak := range []string{"secret", "zzecret", "strconv", "\n", "cannot parse `"} {
				require.NotContains(t, err.Error(), leak)
			}
		})
	}
}

func TestParseRefusesOtherDialects(t *testing.T) {
	for in, got := range map[string]dsnparse.Form{
		"mysql://app:secret@h/db":     dsnparse.MySQLURL,
		"app:secret@tcp(h:3306)/db":   dsnparse.MySQLNative,
		"sqlite:q.db":                 dsnparse.SQLiteScheme,
		"./q.db":                      dsnparse.SQLitePath,
		"lockstep.db":                 dsnparse.SQLitePath,
		"file:/var/lib/q.db?mode=rwc": dsnparse.SQLiteFileURI,
	} {
		_, err := Parse(in)
		var wd *dsnparse.WrongDialectError
		require.True(t, errors.As(err, &wd), "%s: %v", in, err)
		require.Equal(t, got, wd.Got)
		require.ErrorContains(t, err, "postgres DSN expected, got "+got.String()+"; accepted forms: "+dsnparse.PostgresForms)
		require.NotContains(t, err.Error(), "secret")
	}
	_, err := Parse("hots=h prot=5432")
	require.ErrorContains(t, err, "none of its keys is a PostgreSQL connection keyword")
}

func TestEmptyIsPgxDefaults(t *testing.T) {
	t.Setenv("PGHOST", "pg.example")
	t.Setenv("PGDATABASE", "fromenv")
	d, err := Parse("  ")
	require.NoError(t, err)
	require.Equal(t, "pg.example", d.Config.ConnConfig.Host)
	require.Equal(t, "fromenv", d.Config.ConnConfig.Database)
}
