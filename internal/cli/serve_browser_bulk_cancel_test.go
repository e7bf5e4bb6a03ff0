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

// TestServeBrowserBulkCancelSelectedAndDeleteAll: in headless Chromium,
// on a queue of PENDING send jobs and a queue of DONE reports, three rows
// ticked on the jobs page stay ticked through the list's own refresh, and
// its Cancel button cancels those three (and a DONE one ticked with them
// is skipped); then the filter's form chosen in the page (DONE, kind
// report) offers "Delete all matching finished…", whose preview counts
// the reports, recounts them for a finish-time choice, and whose confirm
// deletes them. After each action the database agrees: exactly the
// selected jobs CANCELLED, every other send job PENDING; every report
// gone, nothing else. Screenshots of each step are saved
// ($LOCKSTEP_TEST_SCREENSHOTS, else a temporary directory):
// bulk-selected.png, bulk-cancel-done.png, bulk-delete-preview.png,
// bulk-delete-done.png.
func TestServeBrowserBulkCancelSelectedAndDeleteAll(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sess, dsnURL, client := browserOnSQLite(ctx, t)
	drv, err := dsn.Open(ctx, dsnURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })

	const sends, reports = 12, 40
	var params []lockstep.InsertManyParams
	for i := range reports {
		params = append(params, lockstep.InsertManyParams{Args: lockstep.RawArgs{KindName: "report", JSON: []byte(fmt.Sprintf(`{"month": %d}`, i))},
			Opts: &lockstep.InsertOpts{Queue: "reports"}})
	}
	for i := range sends {
		params = append(params, lockstep.InsertManyParams{Args: lockstep.RawArgs{KindName: "send", JSON: []byte(fmt.Sprintf(`{"to": "user%d@example.com"}`, i))},
			Opts: &lockstep.InsertOpts{Queue: "mail"}})
	}
	res, err := client.InsertMany(ctx, params)
	require.NoError(t, err)
	var reportIDs, sendIDs []int64
	for i, r := range res {
		if i < reports {
			reportIDs = append(reportIDs, r.ID)
		} else {
			sendIDs = append(sendIDs, r.ID)
		}
	}
	finishJobs(ctx, t, drv.Executor(), "reports", reports, rowtype.StatusDone)
	statusOf := func() map[int64]rowtype.JobStatus {
		t.Helper()
		rows, err := drv.DB().QueryContext(ctx, "SELECT id, status FROM lockstep_jobs")
		require.NoError(t, err)
		defer rows.Close()
		out := map[int64]rowtype.JobStatus{}
		for rows.Next() {
			var id int64
			var st string
			require.NoError(t, rows.Scan(&id, &st))
			out[id] = rowtype.JobStatus(st)
		}
		require.NoError(t, rows.Err())
		return out
	}

	url, stop := startServe(t, map[string]string{"LOCKSTEP_TOKEN": ""}, "--dsn", dsnURL)
	dir := os.Getenv("LOCKSTEP_TEST_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}

	// Three send jobs ticked, and one DONE report: the action skips what
	// it does not apply to.
	require.NoError(t, sess.Navigate(ctx, url+"/jobs"))
	picked := []int64{sendIDs[1], sendIDs[4], sendIDs[7]}
	doneOne := reportIDs[len(reportIDs)-1]
	for _, id := range append(picked, doneOne) {
		box, err := sess.Find(ctx, fmt.Sprintf(`[data-testid="job-%d-select"]`, id))
		require.NoError(t, err)
		require.NoError(t, box.Click(ctx))
	}
	// The list reloads itself every 5 s; the ticks are kept (hx-preserve).
	_, err = sess.ExecuteScript(ctx, `document.getElementById("jobs").dataset.mark = "old"`)
	require.NoError(t, err)
	refreshed, cancelRefresh := context.WithTimeout(ctx, 20*time.Second)
	defer cancelRefresh()
	require.NoError(t, waitScript(refreshed, sess, `const l = document.getElementById("jobs"); return !!l && l.dataset.mark === undefined`), "the job list did not reload")
	ticked, err := sess.ExecuteScript(ctx, `return [...document.querySelectorAll('input[name="id"]:checked')].map(e => Number(e.value)).sort((a, b) => a - b)`)
	require.NoError(t, err)
	require.JSONEq(t, fmt.Sprintf("[%d,%d,%d,%d]", doneOne, picked[0], picked[1], picked[2]), string(ticked), "the ticks survive the refresh")
	require.NoError(t, sess.Screenshot(ctx, filepath.Join(dir, "bulk-selected.png")))

	cancelBtn, err := sess.Find(ctx, `[data-testid="bulk-selected-cancel"]`)
	require.NoError(t, err)
	require.NoError(t, cancelBtn.Click(ctx))
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="bulk-state"]`, "Done."))
	require.NoError(t, sess.WaitForText(ctx, `h2`, "Cancel: 4 selected jobs"))
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="bulk-changed"]`, "3"))
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="bulk-skipped"]`, "1"))
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="bulk-op"] th`, "Selected (ticked)"))
	require.NoError(t, sess.Screenshot(ctx, filepath.Join(dir, "bulk-cancel-done.png")))

	st := statusOf()
	for _, id := range sendIDs {
		want := rowtype.StatusPending
		if id == picked[0] || id == picked[1] || id == picked[2] {
			want = rowtype.StatusCancelled
		}
		require.Equal(t, want, st[id], "send job %d", id)
	}
	require.Equal(t, rowtype.StatusDone, st[doneOne], "the DONE job ticked with them is skipped")

	// A filter chosen in the page's form: DONE jobs of kind report.
	back, err := sess.Find(ctx, `[data-testid="bulk-op"] a[href="/jobs"]`)
	require.NoError(t, err)
	require.NoError(t, back.Click(ctx))
	require.NoError(t, waitScript(ctx, sess, `return location.pathname === "/jobs" && document.readyState === "complete"`))
	_, err = sess.ExecuteScript(ctx, `const f = document.querySelector('form.filters');
f.querySelector('select[name="status"]').value = "DONE";
f.querySelector('[data-testid="jobs-kind"]').value = "report";
f.submit();`)
	require.NoError(t, err)
	require.NoError(t, waitScript(ctx, sess, `return location.search.includes("status=DONE") && location.search.includes("kind=report") && document.readyState === "complete"`))
	src, err := sess.PageSource(ctx)
	require.NoError(t, err)
	require.NotContains(t, src, `data-testid="bulk-all-cancel"`, "DONE jobs cannot be cancelled")
	require.NotContains(t, src, `data-testid="bulk-all-retry"`, "nor retried")
	del, err := sess.Find(ctx, `[data-testid="bulk-all-delete"]`)
	require.NoError(t, err)
	require.NoError(t, del.Click(ctx))
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="bulk-count"]`, fmt.Sprintf("%d jobs would be deleted now", reports)))
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="bulk-preview"]`, `Selection: every job with status DONE, kind "report".`))
	// The finish-time choice recounts: every report finished within the hour.
	_, err = sess.ExecuteScript(ctx, `const s = document.querySelector('[data-testid="bulk-since"]'); s.value = "1h"; s.form.submit();`)
	require.NoError(t, err)
	require.NoError(t, waitScript(ctx, sess, `return location.search.includes("since=1h") && document.readyState === "complete"`))
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="bulk-count"]`, fmt.Sprintf("%d jobs would be deleted now", reports)))
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="bulk-preview"]`, "finished in the last hour"))
	require.NoError(t, sess.Screenshot(ctx, filepath.Join(dir, "bulk-delete-preview.png")))
	require.Len(t, statusOf(), sends+reports, "the preview deletes nothing")

	confirm, err := sess.Find(ctx, `[data-testid="bulk-confirm"]`)
	require.NoError(t, err)
	require.NoError(t, confirm.Click(ctx))
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="bulk-state"]`, "Done."))
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="bulk-changed"]`, fmt.Sprint(reports)))
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="bulk-selected"]`, fmt.Sprint(reports)))
	require.NoError(t, sess.Screenshot(ctx, filepath.Join(dir, "bulk-delete-done.png")))
	t.Logf("screenshots: %s", dir)

	st = statusOf()
	require.Len(t, st, sends, "every report is deleted, nothing else")
	for _, id := range reportIDs {
		require.NotContains(t, st, id)
	}
	for _, id := range sendIDs {
		require.Contains(t, st, id)
	}
	require.Equal(t, 0, stop())
}

// finishJobs claims n jobs of queue, oldest first, and finishes them with
// status (DONE or FAILED).
func finishJobs(ctx context.Context, t *testing.T, ex driver.Executor, queue string, n int, status rowtype.JobStatus) {
	t.Helper()
	for n > 0 {
		claimed, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: queue, Max: min(n, 500)})
		require.NoError(t, err)
		require.NotEmpty(t, claimed)
		for _, j := range claimed {
			p := &driver.JobFinishParams{ID: j.ID, Attempt: j.Attempts, Status: status}
			if status == rowtype.StatusFailed {
				p.Error = "smtp down"
			}
			ok, err := ex.JobFinish(ctx, p)
			require.NoError(t, err)
			require.True(t, ok)
		}
		n -= len(claimed)
	}
}
