package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/dashboard"
)

// TestDashboardJobSearch: the jobs page's search box finds jobs by text in
// their args or metadata, and a number as a job's or a run's id too.
func TestDashboardJobSearch(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, openSQLite(t))
	b := newBrowser(t, newDashboard(t, dashboard.Config{Client: f.client}))
	res, err := f.client.Insert(ctx, okArgs{N: 4242, Note: "Needle in the haystack"}, &lockstep.InsertOpts{Queue: "hay"})
	require.NoError(t, err)
	needle := res.ID

	// The kind filter suggests the kinds that finished in the last hour
	// (the fixture's worker flushed them to the history rollup at Stop).
	require.Contains(t, b.page("/jobs"), `<datalist id="kinds"><option value="fail"><option value="ok"></datalist>`)

	page := b.page("/jobs?q=needle+IN+the")
	require.Contains(t, page, fmt.Sprintf(`id="job-%d"`, needle))
	require.Contains(t, page, `value="needle IN the"`)
	require.NotContains(t, page, fmt.Sprintf(`id="job-%d"`, f.doneA))
	require.NotContains(t, b.page("/jobs?q=needle_in"), fmt.Sprintf(`id="job-%d"`, needle), "an _ is no wildcard")

	// A number is also a job's id.
	page = b.page(fmt.Sprintf("/jobs?q=%d", f.failed))
	require.Contains(t, page, fmt.Sprintf(`data-testid="jobs-by-id">Job <a href="/jobs/%d">#%d</a>`, f.failed, f.failed))
	require.NotContains(t, b.page("/jobs?q=999999"), `data-testid="jobs-by-id"`)
	// And a run's.
	page = b.page(fmt.Sprintf("/jobs?q=%d", f.beta))
	require.Contains(t, page, fmt.Sprintf(`data-testid="jobs-by-run">Run <a href="/runs/%d">#%d</a>`, f.beta, f.beta))
	require.NotContains(t, b.page("/jobs?q=999999"), `data-testid="jobs-by-run"`)
	require.Equal(t, http.StatusBadRequest, b.get("/jobs?q="+strings.Repeat("x", 201)).status)
}
