package mysqldsn

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/dsnparse"
)

func TestParse(t *testing.T) {
	type want struct {
		form                     dsnparse.Form
		addrs                    []Addr
		user, pass, db, redacted string
	}
	tcp := func(addrs ...string) []Addr {
		var out []Addr
		for _, a := range addrs {
			out = append(out, Addr{Net: "tcp", Addr: a})
		}
		return out
	}
	for _, tt := range []struct {
		in   string
		want want
	}{
		{"mysql://app:secret@db.internal:3307/queue", want{dsnparse.MySQLURL, tcp("db.internal:3307"), "app", "secret", "queue", "mysql://app:xxxxx@db.internal:3307/queue"}},
		{"mariadb://app@db/queue", want{dsnparse.MySQLURL, tcp("db:3306"), "app", "", "queue", "mariadb://app@db/queue"}},
		{"mysql://root@/queue", want{dsnparse.MySQLURL, tcp("127.0.0.1:3306"), "root", "", "queue", "mysql://root@/queue"}},
		{"mysql://us%40er:p%40ss%3Aw%2Fo@h/db", want{dsnparse.MySQLURL, tcp("h:3306"), "us@er", "p@ss:w/o", "db", "mysql://us%40er:xxxxx@h/db"}},
		{"mysql://u@[::1]:3307/db", want{dsnparse.MySQLURL, tcp("[::1]:3307"), "u", "", "db", "mysql://u@[::1]:3307/db"}},
		{"mysql://u@[::1]/db", want{dsnparse.MySQLURL, tcp("[::1]:3306"), "u", "", "db", "mysql://u@[::1]/db"}},
		{"mysql://u:pw@h1:3306,[::1]:3307,h3/db", want{dsnparse.MySQLURL, tcp("h1:3306", "[::1]:3307", "h3:3306"), "u", "pw", "db", "mysql://u:xxxxx@h1:3306,[::1]:3307,h3/db"}},
		{"mysql://u:pw@/db?socket=%2Frun%2Fmysqld%2Fmysqld.sock", want{dsnparse.MySQLURL, []Addr{{"unix", "/run/mysqld/mysqld.sock"}}, "u", "pw", "db", "mysql://u:xxxxx@/db?socket=%2Frun%2Fmysqld%2Fmysqld.sock"}},
		{"mysql://u@localhost/db?unix_socket=/tmp/m.sock&parseTime=true", want{dsnparse.MySQLURL, []Addr{{"unix", "/tmp/m.sock"}}, "u", "", "db", "mysql://u@localhost/db?unix_socket=/tmp/m.sock&parseTime=true"}},
		{"user:pass@tcp(127.0.0.1:3306)/db?parseTime=true", want{dsnparse.MySQLNative, tcp("127.0.0.1:3306"), "user", "pass", "db", "user:xxxxx@tcp(127.0.0.1:3306)/db?parseTime=true"}},
		{"user@tcp(host)/db", want{dsnparse.MySQLNative, tcp("host:3306"), "user", "", "db", "user@tcp(host)/db"}},
		{"user@unix(/run/mysqld/mysqld.sock)/db", want{dsnparse.MySQLNative, []Addr{{"unix", "/run/mysqld/mysqld.sock"}}, "user", "", "db", "user@unix(/run/mysqld/mysqld.sock)/db"}},
		{"mysql://h/db?init_connect=a@b", want{dsnparse.MySQLURL, tcp("h:3306"), "", "", "db", "mysql://h/db?init_connect=a@b"}},
		{"@/db", want{dsnparse.MySQLNative, tcp("127.0.0.1:3306"), "", "", "db", "@/db"}},
		{"u:p@ss@tcp(h)/db", want{dsnparse.MySQLNative, tcp("h:3306"), "u", "p@ss", "db", "u:xxxxx@tcp(h)/db"}},
		// go-sql-driver's shortest form reads as a SQLite path to the CLI,
		// but mysql.Open is MySQL's: it takes what go-sql-driver takes.
		{"/db", want{dsnparse.MySQLNative, tcp("127.0.0.1:3306"), "", "", "db", "/db"}},
	} {
		t.Run(tt.in, func(t *testing.T) {
			d, err := Parse(tt.in)
			if tt.want.redacted == "" {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want.form, d.Form)
			require.Equal(t, tt.want.addrs, d.Addrs)
			require.Equal(t, tt.want.addrs[0].Net, d.Config.Net)
			require.Equal(t, tt.want.addrs[0].Addr, d.Config.Addr)
			require.Equal(t, tt.want.user, d.Config.User)
			require.Equal(t, tt.want.pass, d.Config.Passwd)
			require.Equal(t, tt.want.db, d.Config.DBName)
			require.Equal(t, tt.want.redacted, d.Redacted)
			again, err := Parse(d.GoDSN)
			require.NoError(t, err, "GoDSN reads back")
			require.Equal(t, d.Config.FormatDSN(), again.Config.FormatDSN())
		})
	}
}

func TestParams(t *testing.T) {
	d, err := Parse("mysql://u:p@h:3306/db?tls=skip-verify&loc=Asia%2FSeoul&parseTime=true&interpolateParams=false")
	require.NoError(t, err)
	require.Equal(t, "u:p@tcp(h:3306)/db?tls=skip-verify&loc=Asia%2FSeoul&parseTime=true&interpolateParams=false", d.GoDSN)
	require.Equal(t, "Asia/Seoul", d.Config.Loc.String())
	require.True(t, d.Config.ParseTime)
	require.True(t, d.HasParam("interpolateParams"))
	require.False(t, d.HasParam("timeout"))

	d, err = Parse("u:p@tcp(h)/db?timeout=2s&time_zone=%27%2B00%3A00%27")
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, d.Config.Timeout)
	require.Equal(t, "'+00:00'", d.Config.Params["time_zone"])
	require.False(t, d.HasParam("interpolateParams"))

	d, err = Parse("mysql://u@/db?socket=/s.sock&timeout=1s")
	require.NoError(t, err)
	require.False(t, d.HasParam("socket"), "the socket is an address, not a parameter for go-sql-driver")
	require.Equal(t, "u@unix(/s.sock)/db?timeout=1s", d.GoDSN)
}

func TestHosts(t *testing.T) {
	d, err := Parse("mysql://u:secret@h1:3306,h2,[::1]:3307/db")
	require.NoError(t, err)
	require.Len(t, d.Addrs, 3)
	require.Equal(t, []string{"h1:3306", "h2:3306", "[::1]:3307"}, d.Hosts())
	require.Equal(t, "h1:3306", d.Config.Addr, "Config is the first host's")
	d, err = Parse("mysql://u:secret@h1/db")
	require.NoError(t, err)
	require.Nil(t, d.Hosts(), "one server needs no failover")
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"mysql://app:secret@h:3306", "needs exactly one database name"},
		{"mysql://app:secret@h:3306/a/b", "needs exactly one database name"},
		{"mysql://app:secret@h:port/db", "mysql DSN is not a valid URL (a port is not a number from 1 to 65535); expected mysql://user:pass@host:3306/db"},
		{"mysql://app:secret@h:0/db", "a port is not a number"},
		{"mysql://app:secret@h:+1/db", "a port is not a number"},
		{"mysql://app:secret@h1:abc,h2/db", "a port is not a number"},
		{"mysql://app:secret@h1,,h2/db", "its host list has an empty entry"},
		{"mysql://app:secret@::1/db", "an IPv6 address must be in brackets"},
		{"mysql://app:secret@[::1/db", "has no closing ']'"},
		{"mysql://app:secret@[::1]x/db", "can only be followed by :port"},
		{"mysql://app:secret@h o/db", "a host name holds white space, a control character"},
		{"mysql://app:secret?x@h/db", "its user info ends at an unencoded '/', '?' or '#' before the '@'"},
		{"mysql://app:sec/ret@h/db", "write them %2F, %3F and %23"},
		{"mysql://app:sec#ret@h/db", "write them %2F, %3F and %23"},
		{"mysql://app:se%zzcret@h/db", "mysql DSN is not a valid URL (a '%' is not followed by two hex digits)"},
		{"mysql://app:secret@h/db\x7f", "it contains a control character"},
		{"mysql://app:secret@h/db#frag", "must not have a #fragment"},
		{"mysql://:secret@h/db", "mysql DSN mysql://:xxxxx@h/db has a password but no user name"},
		{"mysql://us%3Aer:secret@h/db", "mysql DSN mysql://us%3Aer:xxxxx@h/db: its user name and password cannot be passed to go-sql-driver as written"},
		{"mysql://app:secret@h/db?parseTime=maybe", "mysql DSN mysql://app:xxxxx@h/db?parseTime=maybe: invalid bool value: maybe"},
		{"mysql://app:secret@h/db?tls=%0A", `invalid value / unknown config name: \n`},
		{"mysql://app:secret@h/db?strict=true", "the strict parameter was removed"},
		{"app:secret@tcp(h)/db?strict=true", "the strict parameter was removed"},
		{"app:secret@tcp(h)/db?timeout=5", `parameter timeout="5" is not a duration such as 5s`},
		{"app:secret@tcp(h)/db?maxAllowedPacket=big", `parameter maxAllowedPacket="big" is not a whole number`},
		{"app:secret@tcp(h)/db?loc=Nowhere%2FAtAll", "mysql DSN app:xxxxx@tcp(h)/db?loc=Nowhere%2FAtAll: unknown time zone Nowhere/AtAll"},
		{"app:secret@tcp(h)/d%zzb", `mysql DSN app:xxxxx@tcp(h)/d%zzb: invalid dbname "d%zzb": a '%' is not followed by two hex digits`},
		{"app:secret@tcp(h/db", "network address not terminated"},
		{"app:secret@tcp(h)/db?loc=Asia/Seoul", "did you forget to escape a param value?"},
		{"mysql://app:secret@h/db?socket=", "the socket parameter is empty"},
		{"mysql://app:secret@h/db?socket=/a.sock", "names both a host and a socket"},
		{"mysql://app:secret@/db?socket=/a&socket=/b", "the socket parameter is given twice"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			_, err := Parse(tt.in)
			require.ErrorContains(t, err, tt.want)
			require.NotContains(t, err.Error(), "secret")
			require.NotContains(t, err.Error(), "zzcret")
			require.NotContains(t, err.Error(), "strconv")
			require.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestParseRefusesOtherDialects(t *testing.T) {
	for in, got := range map[string]dsnparse.Form{
		"postgres://app:secret@h/db":         dsnparse.PostgresURL,
		"host=h password=secret dbname=db":   dsnparse.PostgresKeywords,
		"sqlite:q.db":                        dsnparse.SQLiteScheme,
		"file:q.db":                          dsnparse.SQLiteFileURI,
		"./data/q.db":                        dsnparse.SQLitePath,
		"lockstep.db":                        dsnparse.SQLitePath,
		"/var/lib/q.sqlite3":                 dsnparse.SQLitePath,
		"host=/var/run/postgresql dbname=db": dsnparse.PostgresKeywords,
	} {
		_, err := Parse(in)
		var wd *dsnparse.WrongDialectError
		require.True(t, errors.As(err, &wd), "%s: %v", in, err)
		require.Equal(t, got, wd.Got, in)
		require.ErrorContains(t, err, "mysql DSN expected, got "+got.String()+"; accepted forms: "+dsnparse.MySQLForms)
		require.NotContains(t, err.Error(), "secret")
	}
	_, err := Parse("redis://u:secret@h/db")
	require.EqualError(t, err, `unknown database scheme "redis"; accepted forms: `+dsnparse.MySQLForms)
	_, err = Parse("")
	require.EqualError(t, err, `database DSN is empty; accepted forms: `+dsnparse.MySQLForms)
}
