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

// TestServeBrowserPages: in headless Chromium, each of the dashboard's
// pages renders its own content over a small queue — the queues page, a
// queue's page, the runs, a run, the jobs, a failed job, the locks — and a
// screenshot of each is saved ($LOCKSTEP_TEST_SCREENSHOTS, else a
// temporary directory): the pictures docs/operate.md shows.
func TestServeBrowserPages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sess, dsnURL, client := browserOnSQLite(ctx, t)
	drv, err := dsn.Open(ctx, dsnURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	ex := drv.Executor()

	var params []lockstep.InsertManyParams
	for i := range 12 {
		params = append(params, lockstep.InsertManyParams{Args: lockstep.RawArgs{KindName: "send", JSON: []byte(fmt.Sprintf(`{"to": "user%d@example.com"}`, i))},
			Opts: &lockstep.InsertOpts{Queue: "mail"}})
	}
	run, _, err := client.InsertRun(ctx, "newsletter 2026-12", nil, params...)
	require.NoError(t, err)
	_, err = client.Insert(ctx, lockstep.RawArgs{KindName: "render", JSON: []byte(`{"month": "2026-11"}`)}, &lockstep.InsertOpts{Queue: "reports", Delay: time.Hour})
	require.NoError(t, err)
	// Of the newsletter: 6 DONE, 2 FAILED, 2 RUNNING, 2 PENDING.
	claimed, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "mail", Max: 10})
	require.NoError(t, err)
	require.Len(t, claimed, 10)
	var failed int64
	for i, j := range claimed[:8] {
		p := &driver.JobFinishParams{ID: j.ID, Attempt: j.Attempts, Status: rowtype.StatusDone, RunID: run.ID}
		if i >= 6 {
			p.Status, p.Error, failed = rowtype.StatusFailed, "smtp: 550 mailbox unavailable", j.ID
		}
		_, err := ex.JobFinish(ctx, p)
		require.NoError(t, err)
	}

	url, stop := startServe(t, map[string]string{"LOCKSTEP_TOKEN": ""}, "--dsn", dsnURL)
	dir := os.Getenv("LOCKSTEP_TEST_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	for _, p := range []struct{ path, css, text, shot string }{
		{"/", `[data-testid="queue-reports-scheduled"]`, "1", "page-queues.png"},
		{"/queue/mail", `[data-testid="queue-counts"]`, "RUNNING", "page-queue.png"},
		{"/runs", fmt.Sprintf(`[data-testid="run-%d-status"]`, run.ID), "ACTIVE", "page-runs.png"},
		{fmt.Sprintf("/runs/%d", run.ID), `[data-testid="run-summary"]`, "newsletter 2026-12", "page-run.png"},
		{"/jobs", fmt.Sprintf(`[data-testid="job-%d-status"]`, failed), "FAILED", "page-jobs.png"},
		{fmt.Sprintf("/jobs/%d", failed), `[data-testid="job-errors"]`, "550 mailbox unavailable", "page-job.png"},
		{"/locks", "h1", "Locks", "page-locks.png"},
	} {
		require.NoError(t, sess.Navigate(ctx, url+p.path))
		require.NoError(t, sess.WaitForText(ctx, p.css, p.text), p.path)
		require.NoError(t, sess.Screenshot(ctx, filepath.Join(dir, p.shot)), p.path)
	}
	require.Equal(t, 0, stop())
}
