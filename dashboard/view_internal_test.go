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
	require.True(t, loopbackHost("127.0.0.1:80"))
	require.True(t, loopbackHost("[::1]:8080"))
	require.True(t, loopbackHost("LOCALHOST"))
	require.False(t, loopbackHost("127.0.0.1.evil.example"))
	require.False(t, loopbackHost("10.0.0.1:80"))
}
