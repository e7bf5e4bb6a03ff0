package labcli

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/clitest"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

func TestLabPlanguard(t *testing.T) {
	dsn := clitest.MySQLURL(t, testdb.MySQL(t))
	code, _, errOut := runCLI(t, "--dsn", dsn, "migrate", "up")
	require.Equal(t, 0, code, errOut)

	// Against the data as it is: an empty table has nothing to probe most
	// statements with, but the run must still pass and say what it did.
	code, out, errOut := runCLI(t, "--dsn", dsn, "lab", "planguard", "-v")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "skipped: no PENDING job in the data")
	require.Regexp(t, `mariadb: \d+ plans checked, 0 failed`, out)

	// Two distributions, two statements, as JSON (the package's own tests
	// load all five).
	code, out, errOut = runCLI(t, "--dsn", dsn, "lab", "planguard", "--synthetic", "--json",
		"--distribution", "near-empty", "--distribution", "almost-done",
		"--statement", "job.claim_select", "--statement", "job.cancel_many")
	require.Equal(t, 0, code, errOut)
	var rep struct {
		Dialect string
		Results []struct {
			Distribution, Statement, Variant string
			Problems                         []string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, "mariadb", rep.Dialect)
	seen := map[string]bool{}
	for _, r := range rep.Results {
		require.Empty(t, r.Problems, "%s %s %s", r.Distribution, r.Statement, r.Variant)
		seen[r.Distribution] = true
	}
	require.Equal(t, map[string]bool{"near-empty": true, "almost-done": true}, seen)

	code, _, errOut = runCLI(t, "--dsn", dsn, "lab", "planguard", "--synthetic", "--distribution", "huge")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `no distribution "huge"`)

	code, _, errOut = runCLI(t, "--dsn", dsn, "lab", "planguard", "--statement", "job.nope")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `no statement "job.nope"`)

	sqlite := "sqlite://" + filepath.Join(t.TempDir(), "q.db")
	code, _, errOut = runCLI(t, "--dsn", sqlite, "lab", "planguard")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "SQLite serialises writers")
}
