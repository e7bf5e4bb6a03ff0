package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/browser"
	"github.com/lockstep-queue/lockstep/internal/clitest"
	"github.com/lockstep-queue/lockstep/internal/dsn"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// TestServeBrowserCancelRun is the dashboard end to end: `lockstep serve`
// on a throwaway database, headless Chromium opens the runs page and clicks
// "Cancel run", the row turns CANCELLED without a reload, and the database
// agrees. A screenshot of the page after the click lands in the test's
// temp dir (its path is logged).
func TestServeBrowserCancelRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sess, err := browser.Start(ctx, browser.Options{TempDir: t.TempDir()})
	require.NoError(t, err, "the browser test needs Debian's chromium and chromium-driver (make deps installs them)")
	t.Cleanup(func() { _ = sess.Close() })

	for _, d := range []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"SQLite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "q.db") }},
		{"MariaDB", func(t *testing.T) string { return clitest.MySQLURL(t, testdb.MySQL(t)) }},
		{"OracleMySQL", func(t *testing.T) string { return clitest.MySQLURL(t, testdb.OracleMySQL(t)) }},
		{"PostgreSQL", func(t *testing.T) string { return testdb.Postgres(t) }},
	} {
		t.Run(d.name, func(t *testing.T) {
			dsnURL := d.dsn(t)
			code, _, errOut := runCLI(t, "--dsn", dsnURL, "migrate", "up")
			require.Equal(t, 0, code, errOut)

			drv, err := dsn.Open(ctx, dsnURL)
			require.NoError(t, err)
			defer drv.Close()
			client, err := lockstep.NewClient(drv, lockstep.Config{})
			require.NoError(t, err)
			jobs := make([]lockstep.InsertManyParams, 5)
			for i := range jobs {
				jobs[i] = lockstep.InsertManyParams{Args: lockstep.RawArgs{KindName: "export", JSON: []byte(fmt.Sprintf(`{"page":%d}`, i))}}
			}
			keep, _, err := client.InsertRun(ctx, "keep-me", nil, jobs...)
			require.NoError(t, err)
			run, _, err := client.InsertRun(ctx, "cancel-me", nil, jobs...)
			require.NoError(t, err)

			url, stop := startServe(t, map[string]string{"LOCKSTEP_TOKEN": ""}, "--dsn", dsnURL)
			require.NoError(t, sess.Navigate(ctx, url+"/runs"))
			status := fmt.Sprintf(`[data-testid="run-%d-status"]`, run.ID)
			require.NoError(t, sess.WaitForText(ctx, status, "ACTIVE"))
			// htmx must be loaded before the click, or the form posts
			// without it (which works too, but is not what this tests).
			require.NoError(t, waitScript(ctx, sess, "return typeof htmx === 'object'"))
			_, err = sess.ExecuteScript(ctx, "window.lockstepNoReload = true")
			require.NoError(t, err)

			button, err := sess.Find(ctx, fmt.Sprintf(`[data-testid="run-%d-cancel"]`, run.ID))
			require.NoError(t, err)
			require.NoError(t, button.Click(ctx))
			require.NoError(t, sess.WaitForText(ctx, status, "CANCELLED"))
			still, err := sess.ExecuteScript(ctx, "return window.lockstepNoReload === true")
			require.NoError(t, err)
			require.JSONEq(t, "true", string(still), "the row changed without a page reload")
			other, err := sess.Find(ctx, fmt.Sprintf(`[data-testid="run-%d-status"]`, keep.ID))
			require.NoError(t, err)
			text, err := other.Text(ctx)
			require.NoError(t, err)
			require.Equal(t, "ACTIVE", text, "the other run is untouched")

			// $LOCKSTEP_TEST_SCREENSHOTS keeps the screenshots past the test.
			dir := os.Getenv("LOCKSTEP_TEST_SCREENSHOTS")
			if dir == "" {
				dir = t.TempDir()
			}
			shot := filepath.Join(dir, "runs-after-cancel-"+d.name+".png")
			require.NoError(t, sess.Screenshot(ctx, shot))
			info, err := os.Stat(shot)
			require.NoError(t, err)
			require.Positive(t, info.Size())
			t.Logf("screenshot: %s", shot)

			got, counts, err := client.Run(ctx, run.ID)
			require.NoError(t, err)
			require.Equal(t, rowtype.RunCancelled, got.Status)
			require.Equal(t, lockstep.RunCounts{lockstep.StatusCancelled: 5}, counts)
			_, counts, err = client.Run(ctx, keep.ID)
			require.NoError(t, err)
			require.Equal(t, lockstep.RunCounts{lockstep.StatusPending: 5}, counts)
			require.Equal(t, 0, stop())
		})
	}
}
