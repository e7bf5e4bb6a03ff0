package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/dashboard"
)

var reBulkOp = regexp.MustCompile(`^/jobs/bulk/(\d+)$`)

// TestDashboardBulkActions: on each database, the jobs page offers the
// bulk actions its status filter allows; the preview counts what an action
// would select and changes nothing; the confirm form (with its CSRF token)
// starts the action, whose progress page ends "Done." with the database
// agreeing; selected jobs are acted on by id; malformed requests are 400s.
func TestDashboardBulkActions(t *testing.T) {
	for _, db := range databases() {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, db.open(t))
			b := newBrowser(t, newDashboard(t, dashboard.Config{Client: f.client}))

			page := b.page("/jobs?status=FAILED")
			require.Contains(t, page, `data-testid="bulk-all-retry"`)
			require.Contains(t, page, `data-testid="bulk-all-delete"`)
			require.NotContains(t, page, `data-testid="bulk-all-cancel"`, "FAILED jobs cannot be cancelled")
			require.Contains(t, page, fmt.Sprintf(`data-testid="job-%d-select"`, f.failed))

			preview := b.page("/jobs/bulk?action=retry&status=FAILED&kind=fail&since=1h")
			require.Regexp(t, `data-testid="bulk-count"><strong>1</strong> job would be retried now`, preview)
			requireStatus(t, f, f.failed, lockstep.StatusFailed)

			csrf := b.csrf("/jobs/bulk?action=retry&status=FAILED")
			r := b.do(http.MethodPost, "/jobs/bulk", url.Values{"csrf": {csrf}, "action": {"retry"}, "status": {"FAILED"}, "kind": {"fail"}, "since": {"1h"}, "count": {"1"}}, nil)
			require.Equal(t, http.StatusSeeOther, r.status, r.body)
			loc := r.header.Get("Location")
			require.Regexp(t, reBulkOp, loc)
			waitBulkDone(t, b, loc)
			done := b.page(loc)
			require.Contains(t, done, `data-testid="bulk-changed">1<`)
			require.Contains(t, done, `<th>Selected (preview)</th><td class="num" data-testid="bulk-selected">1<`)
			// Retried: PENDING (once, under load on PostgreSQL, already
			// RUNNING here — see the closing note of issue 20).
			j, err := f.client.Job(context.Background(), f.failed)
			require.NoError(t, err)
			require.Contains(t, []lockstep.JobStatus{lockstep.StatusPending, lockstep.StatusRunning}, j.Status)

			// Selected ids: two of beta's PENDING jobs cancelled, the DONE
			// one skipped.
			r = b.do(http.MethodPost, "/jobs/bulk", url.Values{"csrf": {csrf}, "action": {"cancel"},
				"id": {fmt.Sprint(f.betaJobs[0]), fmt.Sprint(f.betaJobs[1]), fmt.Sprint(f.doneA)}}, nil)
			require.Equal(t, http.StatusSeeOther, r.status, r.body)
			loc = r.header.Get("Location")
			waitBulkDone(t, b, loc)
			done = b.page(loc)
			require.Contains(t, done, `data-testid="bulk-changed">2<`)
			require.Contains(t, done, `data-testid="bulk-skipped">1<`)
			require.Contains(t, done, `<th>Selected (ticked)</th><td class="num" data-testid="bulk-selected">3<`, "ids are no preview's count")
			requireStatus(t, f, f.betaJobs[0], lockstep.StatusCancelled)
			requireStatus(t, f, f.doneA, lockstep.StatusDone)

			for _, bad := range []string{"/jobs/bulk?action=requeue", "/jobs/bulk?action=retry&status=DONE", "/jobs/bulk?action=retry&since=2h",
				"/jobs/bulk?action=cancel&id=x", "/jobs/bulk?action=delete&run=-1", "/jobs/bulk?action=cancel&since=1h"} {
				require.Equal(t, http.StatusBadRequest, b.get(bad).status, bad)
			}
			require.Equal(t, http.StatusNotFound, b.get("/jobs/bulk/999").status)
		})
	}
}

// waitBulkDone polls the progress page until it says the action ended.
func waitBulkDone(t *testing.T, b *browser, loc string) {
	t.Helper()
	require.Eventually(t, func() bool {
		return regexp.MustCompile(`data-testid="bulk-state">(Done\.|<span class="error")`).MatchString(b.page(loc))
	}, 60e9, 20e6, "bulk action %s did not end", loc)
	require.Contains(t, b.page(loc), `data-testid="bulk-state">Done.`)
}

func requireStatus(t *testing.T, f *fixture, id int64, want lockstep.JobStatus) {
	t.Helper()
	j, err := f.client.Job(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, want, j.Status, "job %d", id)
}
