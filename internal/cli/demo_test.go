package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDemoJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "demo.db")
	start := time.Now()
	code, out, errOut := runCLI(t, "--dsn", "mysql://ignored:secret@nowhere/db", "demo", "--db", path, "--json")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	require.Less(t, time.Since(start), 30*time.Second)
	require.FileExists(t, path, "--db keeps the database")

	var rep demoReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.True(t, rep.Kept)
	require.Equal(t, path, rep.Database)

	// No job is left open, in any run or kind.
	require.Zero(t, rep.Totals.Pending)
	require.Zero(t, rep.Totals.Running)
	require.Equal(t, rep.Totals.Jobs, rep.Totals.Done+rep.Totals.Failed+rep.Totals.Cancelled)
	require.Len(t, rep.Runs, 3)
	sum := 0
	for _, r := range rep.Runs {
		require.Zero(t, r.Pending+r.Running, "run %s", r.Name)
		sum += r.Jobs
	}
	require.Equal(t, rep.Totals.Jobs, sum)

	runs := map[string]runReport{}
	for _, r := range rep.Runs {
		runs[r.Name] = r
	}
	kinds := map[string]kindReport{}
	for _, k := range rep.Kinds {
		require.Zero(t, k.Open, "kind %s", k.Kind)
		kinds[k.Kind] = k
	}

	// The run cancelled half-way: some jobs done, some cancelled.
	export := runs["nightly-export"]
	require.Equal(t, "CANCELLED", export.Status)
	require.GreaterOrEqual(t, export.Done, 1)
	require.GreaterOrEqual(t, export.Cancelled, 1)
	require.Equal(t, export.Jobs, export.Done+export.Cancelled)
	require.NotNil(t, rep.CancelAt)
	require.GreaterOrEqual(t, rep.CancelAt.Done, demoExportJobs/2)

	// The other runs complete: everything done but the one hopeless job.
	require.Equal(t, "DONE", runs["thumbnails"].Status)
	require.Equal(t, runs["thumbnails"].Jobs, runs["thumbnails"].Done)
	require.Equal(t, 1, runs["billing-sync"].Failed)
	require.Equal(t, "FAILED", runs["billing-sync"].Status, "every job ended, one FAILED")
	require.Equal(t, runs["billing-sync"].Jobs-1, runs["billing-sync"].Done)

	// Retries: flaky jobs took more attempts than there are jobs, each
	// failed attempt is in an error history, and the hopeless one failed.
	flaky := kinds["flaky"]
	require.Greater(t, flaky.Attempts, flaky.Jobs)
	require.Equal(t, flaky.Attempts-flaky.Done, flaky.Errors, "every attempt but the successful ones recorded an error")
	require.Equal(t, 1, flaky.Failed)

	// Snoozes: every rate_limited job snoozed once, used one attempt and
	// recorded no error.
	rl := kinds["rate_limited"]
	require.Equal(t, rl.Jobs, rl.Snoozes)
	require.Equal(t, rl.Jobs, rl.Attempts)
	require.Equal(t, 2*rl.Jobs, rl.Claims)
	require.Zero(t, rl.Errors)
	require.Equal(t, rl.Jobs, rl.Done)

	require.Equal(t, kinds["resize"].Jobs, kinds["resize"].Done)
	require.Equal(t, export.Cancelled, kinds["slow"].Cancelled)

	require.Contains(t, joinLines(rep.Story), "cancelled half-way")
	require.Contains(t, joinLines(rep.Story), "without consuming an attempt")
	require.Contains(t, joinLines(rep.Story), "is DONE on attempt 2")
}

func TestDemoTextRemovesItsTemporaryDatabase(t *testing.T) {
	code, out, errOut := runCLI(t, "demo")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	require.Empty(t, errOut, "the library's warnings are hidden unless --log-level is given")
	for _, want := range []string{"Runs", "Kinds", "nightly-export", "cancelled half-way", "snoozed once", "none is left PENDING or RUNNING", "the database was removed"} {
		require.Contains(t, out, want)
	}
	m := regexp.MustCompile(`database: (\S+) \(temporary`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	_, err := os.Stat(m[1])
	require.ErrorIs(t, err, os.ErrNotExist, "the temporary database is removed")
}

func joinLines(s []string) string {
	var b bytes.Buffer
	for _, l := range s {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}
