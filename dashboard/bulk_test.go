package dashboard_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/dashboard"
	"github.com/lockstep-queue/lockstep/driver"
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

// TestDashboardBulkPreviewWithinBudget: where a preview counts window by
// window of the primary key (delete's statuses include DONE), it stops at
// its budget and says "at least", with a link that counts every match;
// the action it confirms, uncounted, still acts on every match, its
// progress page saying the count was not made. The ids are spread over
// three windows (the sequence moved on 200,000), and the budget is a
// nanosecond: the preview reads the newest window only.
func TestDashboardBulkPreviewWithinBudget(t *testing.T) {
	for _, db := range databases() {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newFixture(t, db.open(t))
			b := newBrowser(t, newDashboard(t, dashboard.Config{Client: f.client, PreviewBudget: time.Nanosecond}))

			// Two old CANCELLED jobs of kind late, then the ids move on,
			// then three more.
			late := func() int64 {
				res, err := f.client.Insert(ctx, lateArgs{}, &lockstep.InsertOpts{Queue: "nobody"})
				require.NoError(t, err)
				ok, err := f.client.CancelJob(ctx, res.ID)
				require.NoError(t, err)
				require.True(t, ok)
				return res.ID
			}
			late()
			old := late()
			advanceJobIDs(t, f.drv, old+200_000)
			for range 3 {
				require.Greater(t, late(), old+200_000)
			}

			preview := b.page("/jobs/bulk?action=delete&kind=late")
			require.Contains(t, preview, `data-testid="bulk-count">At least <strong>3</strong> jobs would be deleted now.`)
			require.Contains(t, preview, `data-testid="bulk-partial"`)
			require.Contains(t, preview, `Delete every matching job</button>`)
			require.NotContains(t, preview, `name="count"`, "an uncounted preview gives the action no scale")
			all := regexp.MustCompile(`href="([^"]+)" data-testid="bulk-count-all"`).FindStringSubmatch(preview)
			require.NotNil(t, all, preview)
			counted := b.page(html.UnescapeString(all[1]))
			require.Contains(t, counted, `data-testid="bulk-count"><strong>5</strong> jobs would be deleted now.`)
			require.NotContains(t, counted, `data-testid="bulk-partial"`)

			csrf := b.csrf("/jobs/bulk?action=delete&kind=late")
			r := b.do(http.MethodPost, "/jobs/bulk", url.Values{"csrf": {csrf}, "action": {"delete"}, "kind": {"late"}}, nil)
			require.Equal(t, http.StatusSeeOther, r.status, r.body)
			loc := r.header.Get("Location")
			waitBulkDone(t, b, loc)
			done := b.page(loc)
			require.Contains(t, done, `data-testid="bulk-changed">5<`)
			require.Contains(t, done, `data-testid="bulk-selected">not counted<`)
		})
	}
}

type lateArgs struct{}

func (lateArgs) Kind() string { return "late" }

// advanceJobIDs moves the jobs' id sequence so that the next job's id is
// past next: test SQL, one statement a dialect.
func advanceJobIDs(t *testing.T, drv driver.Driver, next int64) {
	t.Helper()
	var q string
	switch drv.Dialect() {
	case "sqlite":
		q = fmt.Sprintf("UPDATE sqlite_sequence SET seq = %d WHERE name = 'lockstep_jobs'", next)
	case "postgres":
		q = fmt.Sprintf("SELECT setval(pg_get_serial_sequence('lockstep_jobs', 'id'), %d)", next)
	default:
		q = fmt.Sprintf("ALTER TABLE lockstep_jobs AUTO_INCREMENT = %d", next+1)
	}
	_, err := drv.DB().ExecContext(context.Background(), q)
	require.NoError(t, err)
}
