package labcli

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLockOrderDocMatchesCatalog: the statement tables in docs/lock-order.md
// are the catalogue's own output, so the page cannot describe statements
// the code no longer issues.
func TestLockOrderDocMatchesCatalog(t *testing.T) {
	doc, err := os.ReadFile("../../docs/lock-order.md")
	require.NoError(t, err)
	for _, dialect := range []string{"mariadb", "galera", "postgres"} {
		code, out, errOut := runCLI(t, "lab", "catalog", "--dialect", dialect)
		require.Equal(t, 0, code, errOut)
		open, closing := "<!-- catalog:"+dialect+" -->\n", "<!-- /catalog:"+dialect+" -->"
		start := strings.Index(string(doc), open)
		end := strings.Index(string(doc), closing)
		require.True(t, start >= 0 && end > start, "docs/lock-order.md lacks the %s catalogue block", dialect)
		require.Equal(t, out, string(doc[start+len(open):end]),
			"docs/lock-order.md is out of date: replace its %s block with `lockstep lab catalog --dialect %s`", dialect, dialect)
	}
	code, _, errOut := runCLI(t, "lab", "catalog", "--dialect", "oracle")
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "unknown dialect")
}
