package dashboard_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/dashboard"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// TestDashboardEveryPostNeedsCSRF: every mutating route the dashboard
// has, every other method than GET and HEAD, and a path it does not have
// at all, are refused with 403 without the CSRF token, with a wrong one,
// or from another origin — with and without a dashboard token (logged in
// by cookie) — and nothing changes. The check runs before routing, so a
// route added later is covered too; the unknown path shows that.
func TestDashboardEveryPostNeedsCSRF(t *testing.T) {
	f := newFixture(t, openSQLite(t))
	targets := []struct{ method, path string }{
		{http.MethodPost, "/login"},
		{http.MethodPost, "/logout"},
		{http.MethodPost, fmt.Sprintf("/runs/%d/cancel", f.beta)},
		{http.MethodPost, fmt.Sprintf("/jobs/%d/cancel", f.lonely)},
		{http.MethodPost, fmt.Sprintf("/jobs/%d/retry", f.failed)},
		{http.MethodPost, "/queues/pause"},
		{http.MethodPost, "/queues/resume"},
		{http.MethodPost, "/queues/max-workers"},
		{http.MethodPost, "/jobs/bulk"},
		{http.MethodPost, "/no/such/route"},
		{http.MethodPut, fmt.Sprintf("/runs/%d/cancel", f.beta)},
		{http.MethodDelete, fmt.Sprintf("/jobs/%d/cancel", f.lonely)},
		{http.MethodPatch, fmt.Sprintf("/jobs/%d/retry", f.failed)},
	}
	for _, token := range []string{"", "s3cret-token-for-csrf"} {
		t.Run(fmt.Sprintf("token=%t", token != ""), func(t *testing.T) {
			b := newBrowser(t, newDashboard(t, dashboard.Config{Client: f.client, Token: token}))
			good := b.csrf("/login")
			if token != "" {
				r := b.do(http.MethodPost, "/login", url.Values{"csrf": {good}, "token": {token}, "next": {"/runs"}}, nil)
				require.Equal(t, http.StatusSeeOther, r.status, r.body)
			}
			before := testdb.TakeSnapshot(t, f.drv.DB())
			for _, tg := range targets {
				for name, attempt := range map[string]struct {
					form   url.Values
					header map[string]string
				}{
					"no token":      {url.Values{}, nil},
					"wrong token":   {url.Values{"csrf": {good + "x"}}, nil},
					"other origin":  {url.Values{"csrf": {good}}, map[string]string{"Origin": "https://evil.example"}},
					"cross-site":    {url.Values{"csrf": {good}}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
					"token in body": {url.Values{"csrf": {""}, "token": {token}}, nil},
				} {
					r := b.do(tg.method, tg.path, attempt.form, attempt.header)
					require.Equal(t, http.StatusForbidden, r.status, "%s %s, %s: %s", tg.method, tg.path, name, r.body)
				}
			}
			require.Equal(t, before, testdb.TakeSnapshot(t, f.drv.DB()), "a refused request changed the database")
		})
	}
}
