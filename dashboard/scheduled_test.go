package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/dashboard"
	"github.com/lockstep-queue/lockstep/driver"
)

// TestDashboardShowsScheduledJobs: PENDING jobs available later are not
// shown as ready. The queues table and the queue's page count them as
// Scheduled, and each one's row in a job list says when it becomes
// available. (The mail queue of 200 delayed jobs used to read "200
// PENDING, Oldest available —".) The failed (dead) view lists the jobs
// that failed for good.
func TestDashboardShowsScheduledJobs(t *testing.T) {
	ctx := context.Background()
	drv := openSQLite(t)
	f := newFixture(t, drv)
	b := newBrowser(t, newDashboard(t, dashboard.Config{Client: f.client}))
	res, err := f.client.Insert(ctx, okArgs{N: 1}, &lockstep.InsertOpts{Queue: "mail", Delay: time.Hour})
	require.NoError(t, err)
	later := res.ID
	for range 2 {
		_, err := f.client.Insert(ctx, okArgs{N: 2}, &lockstep.InsertOpts{Queue: "mail", Delay: time.Hour})
		require.NoError(t, err)
	}
	res, err = f.client.Insert(ctx, okArgs{N: 3}, &lockstep.InsertOpts{Queue: "mail"})
	require.NoError(t, err)
	ready := res.ID

	table := b.page("/queues/table")
	require.Contains(t, table, `<th class="num" title="PENDING jobs available later`)
	require.Contains(t, table, `data-testid="queue-mail-pending">4<`)
	require.Contains(t, table, `data-testid="queue-mail-scheduled">3<`)
	require.Contains(t, table, `data-testid="queue-work-scheduled">0<`)

	page := b.page("/queue/mail")
	require.Contains(t, page, `data-testid="queue-scheduled">3 <`)

	jobs := b.page("/jobs?queue=mail")
	require.Regexp(t, fmt.Sprintf(`data-testid="job-%d-available">in (59m\d+s|1h0m0s)<`, later), jobs)
	require.Contains(t, jobs, "scheduled: available at ")
	require.NotContains(t, jobs, fmt.Sprintf(`data-testid="job-%d-available"`, ready), "a ready job has no time to wait")

	// The scheduled view, chosen from a select as the queue is.
	view := b.page("/jobs?view=scheduled&queue=mail")
	require.Contains(t, view, fmt.Sprintf(`id="job-%d"`, later))
	require.NotContains(t, view, fmt.Sprintf(`id="job-%d"`, ready))
	require.Contains(t, view, `<option value="scheduled" selected>scheduled</option>`)
	require.Contains(t, view, `<option value="mail" selected>mail</option>`)
	require.Contains(t, view, `<option value="work">work</option>`)
	require.NotContains(t, b.page("/jobs?view=retrying&queue=mail"), `id="job-`, "no job of mail has failed an attempt")
	require.Equal(t, http.StatusBadRequest, b.get("/jobs?view=later").status)

	// The failed view, also called dead: the jobs that failed for good
	// (FAILED, no attempt left or failed permanently), chosen from the same
	// select; its list reloads and its bulk actions keep to those jobs.
	for _, v := range []string{"failed", "dead"} {
		failedView := b.page("/jobs?view=" + v)
		require.Contains(t, failedView, fmt.Sprintf(`id="job-%d"`, f.failed), v)
		require.Contains(t, failedView, f.failureMessage[:len("the printer is on fire")], "with its last error")
		for _, other := range []int64{f.doneA, later, ready} {
			require.NotContains(t, failedView, fmt.Sprintf(`id="job-%d"`, other), v)
		}
		require.Contains(t, failedView, `<option value="failed" selected>failed</option>`)
		require.Contains(t, failedView, `<option value="FAILED" selected>FAILED</option>`)
		require.Contains(t, failedView, `<div id="jobs" hx-get="/jobs?view=`+v+`"`)
		require.Contains(t, failedView, `href="/jobs/bulk?action=retry&amp;status=FAILED&amp;view=failed"`)
		require.NotContains(t, failedView, `data-testid="bulk-all-cancel"`, "FAILED jobs cannot be cancelled")
	}
	require.Contains(t, b.page("/jobs?view=failed&status=FAILED"), fmt.Sprintf(`id="job-%d"`, f.failed))
	r := b.get("/jobs?view=dead&status=PENDING")
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Contains(t, r.body, "the failed view is the FAILED jobs")
	require.Regexp(t, `data-testid="bulk-count"><strong>1</strong> job would be retried now`, b.page("/jobs/bulk?action=retry&view=dead"))
	require.Equal(t, http.StatusBadRequest, b.get("/jobs/bulk?action=cancel&view=failed").status, "FAILED jobs cannot be cancelled")

	// A RUNNING job says for how long, and how old its heartbeat is.
	res, err = f.client.Insert(ctx, okArgs{N: 4}, &lockstep.InsertOpts{Queue: "busy"})
	require.NoError(t, err)
	claimed, err := drv.Executor().JobClaim(ctx, &driver.JobClaimParams{Queue: "busy", Max: 1})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.Regexp(t, fmt.Sprintf(`data-testid="job-%d-running">for [0-9.]+m?s, heartbeat [0-9.]+m?s ago<`, res.ID), b.page("/jobs?queue=busy"))
}
