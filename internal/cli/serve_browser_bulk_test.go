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
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/internal/dsn"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// TestServeBrowserBulkRetryAllFailed: in headless Chromium, on 5,000
// FAILED jobs of one kind (and 100 of another, and jobs that did not
// fail), the jobs page's "Retry all matching FAILED" over a kind filter
// shows the preview count, the confirm button runs the action, its
// progress page ends with 5,000 retried in batches, and the database
// agrees: those 5,000 are PENDING, the other kind's are still FAILED.
// Screenshots of the preview and the finished action are saved
// ($LOCKSTEP_TEST_SCREENSHOTS, else a temporary directory).
func TestServeBrowserBulkRetryAllFailed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sess, dsnURL, client := browserOnSQLite(ctx, t)
	drv, err := dsn.Open(ctx, dsnURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })

	const n, others = 5000, 100
	var params []lockstep.InsertManyParams
	for i := range n + others + 50 {
		kind := "send"
		if i >= n {
			kind = "report"
		}
		params = append(params, lockstep.InsertManyParams{Args: lockstep.RawArgs{KindName: kind, JSON: []byte(fmt.Sprintf(`{"n": %d}`, i))},
			Opts: &lockstep.InsertOpts{Queue: "mail"}})
	}
	_, err = client.InsertMany(ctx, params)
	require.NoError(t, err)
	// Every send job and 100 report jobs FAILED; 50 report jobs PENDING.
	failJobs(ctx, t, drv.Executor(), "mail", n+others)
	count := func(kind string, st rowtype.JobStatus) int {
		var c int
		require.NoError(t, drv.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM lockstep_jobs WHERE kind = ? AND status = ?", kind, string(st)).Scan(&c))
		return c
	}
	require.Equal(t, n, count("send", rowtype.StatusFailed))

	url, stop := startServe(t, map[string]string{"LOCKSTEP_TOKEN": ""}, "--dsn", dsnURL)
	require.NoError(t, sess.Navigate(ctx, url+"/jobs?status=FAILED&kind=send"))
	dir := os.Getenv("LOCKSTEP_TEST_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	// Two rows selected, as an operator would before "Retry".
	boxes, err := sess.FindAll(ctx, `input[name="id"]`)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(boxes), 2)
	require.NoError(t, boxes[0].Click(ctx))
	require.NoError(t, boxes[1].Click(ctx))
	require.NoError(t, sess.Screenshot(ctx, filepath.Join(dir, "jobs-bulk.png")))
	link, err := sess.Find(ctx, `[data-testid="bulk-all-retry"]`)
	require.NoError(t, err)
	require.NoError(t, link.Click(ctx))
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="bulk-count"]`, "5,000 jobs would be retried now"))

	require.NoError(t, sess.Screenshot(ctx, filepath.Join(dir, "bulk-preview.png")))
	require.Equal(t, n, count("send", rowtype.StatusFailed), "the preview changes nothing")

	confirm, err := sess.Find(ctx, `[data-testid="bulk-confirm"]`)
	require.NoError(t, err)
	require.NoError(t, confirm.Click(ctx))
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="bulk-state"]`, "Done."))
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="bulk-changed"]`, "5,000"))
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="bulk-batches"]`, "10"))
	require.NoError(t, sess.Screenshot(ctx, filepath.Join(dir, "bulk-done.png")))

	require.Zero(t, count("send", rowtype.StatusFailed))
	require.Equal(t, n, count("send", rowtype.StatusPending))
	require.Equal(t, others, count("report", rowtype.StatusFailed), "another kind's FAILED jobs are left alone")
	require.Equal(t, 0, stop())
}

// failJobs claims n jobs of queue, oldest first, and finishes them FAILED.
func failJobs(ctx context.Context, t *testing.T, ex driver.Executor, queue string, n int) {
	t.Helper()
	for n > 0 {
		claimed, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: queue, Max: min(n, 500)})
		require.NoError(t, err)
		require.NotEmpty(t, claimed)
		for _, j := range claimed {
			_, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: j.ID, Attempt: j.Attempts, Status: rowtype.StatusFailed, Error: "smtp down"})
			require.NoError(t, err)
		}
		n -= len(claimed)
	}
}
