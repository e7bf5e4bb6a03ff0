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
// PENDING, Oldest available —".)
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
	require.Equal(t, http.StatusBadRequest, b.get("/jobs?view=dead").status)

	// A RUNNING job says for how long, and how old its heartbeat is.
	res, err = f.client.Insert(ctx, okArgs{N: 4}, &lockstep.InsertOpts{Queue: "busy"})
	require.NoError(t, err)
	claimed, err := drv.Executor().JobClaim(ctx, &driver.JobClaimParams{Queue: "busy", Max: 1})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.Regexp(t, fmt.Sprintf(`data-testid="job-%d-running">for [0-9.]+m?s, heartbeat [0-9.]+m?s ago<`, res.ID), b.page("/jobs?queue=busy"))
}
