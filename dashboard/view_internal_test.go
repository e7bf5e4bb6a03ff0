package dashboard

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDashboardPrettyJSON(t *testing.T) {
	got, cut := prettyJSON([]byte(`{"a":"\u003cb\u003e \u0026 \\u003c","n":[1,2]}`), 1000)
	require.False(t, cut)
	require.Equal(t, "{\n  \"a\": \"<b> & \\\\u003c\",\n  \"n\": [\n    1,\n    2\n  ]\n}", got)
	got, cut = prettyJSON([]byte(`not json`), 3)
	require.True(t, cut)
	require.Equal(t, "not", got)
}

func TestDashboardSafeNextAndRedact(t *testing.T) {
	for in, want := range map[string]string{
		"/runs?before=3": "/runs?before=3", "//evil.example": "/x", "https://evil.example/": "/x",
		"/\\evil.example": "/x", "": "/x", "runs": "/x", "/a\r\nSet-Cookie: x": "/x",
	} {
		require.Equal(t, want, safeNext(in, "/x"), in)
	}
	require.Equal(t, "dial mysql://app:***@db:3306/q failed", redact("dial mysql://app:hunter2@db:3306/q failed"))
	require.Equal(t, "host=db password=*** user=x", redact("host=db password=hunter2 user=x"))
	require.Equal(t, "app:***@tcp(db:3306)/q", redact("app:hunter2@tcp(db:3306)/q"))
	// Passwords holding '/', ':' or '@': up to the last '@' before the host.
	for in, want := range map[string]string{
		"dial mysql://app:p@ss/w@rd@db:3306/q failed":                                       "dial mysql://app:***@db:3306/q failed",
		`open "postgres://app:a/b:c@@db/q?sslmode=disable"`:                                 `open "postgres://app:***@db/q?sslmode=disable"`,
		"mariadb://root:@@/@db/q and mysql://u:x@y@other/db":                                "mariadb://root:***@db/q and mysql://u:***@other/db",
		"app:p@ss/w@rd@tcp(db:3306)/q?parseTime=true":                                       "app:***@tcp(db:3306)/q?parseTime=true",
		"dsn app:s3:cr/t@unix(/run/mysqld/mysqld.sock)/q":                                   "dsn app:***@unix(/run/mysqld/mysqld.sock)/q",
		"Error 1045 (28000): Access denied for user 'app'@'10.0.0.1' (using password: YES)": "Error 1045 (28000): Access denied for user 'app'@'10.0.0.1' (using password: YES)",
		"postgres://app@db/q": "postgres://app@db/q",
	} {
		require.Equal(t, want, redact(in), in)
	}
	require.True(t, loopbackHost("127.0.0.1:80"))
	require.True(t, loopbackHost("[::1]:8080"))
	require.True(t, loopbackHost("LOCALHOST"))
	require.False(t, loopbackHost("127.0.0.1.evil.example"))
	require.False(t, loopbackHost("10.0.0.1:80"))
}
