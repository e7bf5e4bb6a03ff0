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
)

// TestServeBrowserJobsViewsAndSearch: in headless Chromium, the jobs page's
// filters are chosen from lists — the scheduled view and a queue — and its
// search box finds a job by text in its args; a scheduled job says when it
// becomes available, with the absolute time on hover. A screenshot of the
// scheduled view is saved ($LOCKSTEP_TEST_SCREENSHOTS, else a temporary
// directory).
func TestServeBrowserJobsViewsAndSearch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sess, dsnURL, client := browserOnSQLite(ctx, t)
	var err error
	insert := func(queue, args string, delay time.Duration) int64 {
		t.Helper()
		res, err := client.Insert(ctx, lockstep.RawArgs{KindName: "send", JSON: []byte(args)}, &lockstep.InsertOpts{Queue: queue, Delay: delay})
		require.NoError(t, err)
		return res.ID
	}
	ready := insert("mail", `{"to": "ada@example.com"}`, 0)
	later := insert("mail", `{"to": "bob@example.com", "note": "monthly digest"}`, time.Hour)
	other := insert("reports", `{"month": "2026-11"}`, 2*time.Hour)

	url, stop := startServe(t, map[string]string{"LOCKSTEP_TOKEN": ""}, "--dsn", dsnURL)
	require.NoError(t, sess.Navigate(ctx, url+"/jobs"))
	row := func(id int64) string { return fmt.Sprintf(`[data-testid="job-%d"]`, id) }
	require.NoError(t, sess.WaitForText(ctx, row(ready), "PENDING"))

	// The scheduled view of the mail queue, chosen from the lists.
	_, err = sess.ExecuteScript(ctx, `document.querySelector('[data-testid="jobs-view"]').value = "scheduled";
document.querySelector('[data-testid="jobs-queue"]').value = "mail";
document.querySelector('[data-testid="jobs-view"]').form.submit();`)
	require.NoError(t, err)
	require.NoError(t, waitScript(ctx, sess, "return location.search.includes('view=scheduled') && document.readyState === 'complete'"))
	require.NoError(t, sess.WaitForText(ctx, fmt.Sprintf(`[data-testid="job-%d-available"]`, later), "in "))
	src, err := sess.PageSource(ctx)
	require.NoError(t, err)
	require.NotContains(t, src, fmt.Sprintf(`id="job-%d"`, ready), "a ready job is not scheduled")
	require.NotContains(t, src, fmt.Sprintf(`id="job-%d"`, other), "another queue's job")
	title, err := sess.ExecuteScript(ctx, fmt.Sprintf(`return document.querySelector('[data-testid="job-%d-available"]').title`, later))
	require.NoError(t, err)
	require.Contains(t, string(title), "scheduled: available at 20")

	dir := os.Getenv("LOCKSTEP_TEST_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	shot := filepath.Join(dir, "jobs-scheduled.png")
	require.NoError(t, sess.Screenshot(ctx, shot))
	t.Logf("screenshot: %s", shot)

	// The search box, typed into: a word of one job's args.
	_, err = sess.ExecuteScript(ctx, `const f = document.querySelector('[data-testid="jobs-search"]').form;
f.querySelector('[data-testid="jobs-view"]').value = "";
f.querySelector('[data-testid="jobs-queue"]').value = "";`)
	require.NoError(t, err)
	box, err := sess.Find(ctx, `[data-testid="jobs-search"]`)
	require.NoError(t, err)
	require.NoError(t, box.SendKeys(ctx, "DIGEST\n"))
	require.NoError(t, waitScript(ctx, sess, "return location.search.includes('q=DIGEST') && document.readyState === 'complete'"))
	require.NoError(t, sess.WaitForText(ctx, row(later), "PENDING"))
	src, err = sess.PageSource(ctx)
	require.NoError(t, err)
	require.NotContains(t, src, fmt.Sprintf(`id="job-%d"`, ready))
	require.NotContains(t, src, fmt.Sprintf(`id="job-%d"`, other))
	require.NoError(t, sess.Screenshot(ctx, filepath.Join(dir, "jobs-search.png")))
	require.Equal(t, 0, stop())
}
