package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/dashboard"
)

// TestDashboardPages: on each database every page renders the fixture's
// data, and the actions change it only with a valid CSRF token.
func TestDashboardPages(t *testing.T) {
	for _, db := range databases() {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newFixture(t, db.open(t))
			b := newBrowser(t, newDashboard(t, dashboard.Config{Client: f.client}))

			// Queues: counts by status per queue, the history charts.
			body := b.page("/")
			require.Contains(t, body, `data-testid="queue-work"`)
			require.Contains(t, body, `data-testid="queue-idle"`)
			require.Contains(t, body, `data-testid="queue-work-done">2<`)
			require.Contains(t, body, `data-testid="queue-work-failed">1<`)
			require.Contains(t, body, `data-testid="queue-idle-pending">4<`)
			require.Contains(t, body, `data-testid="history-rate"`)
			require.Contains(t, body, `data-testid="history-failure"`)
			require.Contains(t, body, `hx-get="/queues/table"`)
			require.Contains(t, body, `<script src="/static/htmx.min.js"`)
			frag := b.page("/queues/table")
			require.NotContains(t, frag, "<html")
			require.Contains(t, frag, `data-testid="queue-work-done">2<`)

			// Runs: newest first, with a progress bar and a cancel button
			// each; names are escaped.
			body = b.page("/runs")
			ia := strings.Index(body, fmt.Sprintf(`id="run-%d"`, f.alpha))
			ib := strings.Index(body, fmt.Sprintf(`id="run-%d"`, f.beta))
			require.True(t, ia > 0 && ib > 0 && ib < ia, "runs newest first")
			require.Contains(t, body, fmt.Sprintf(`data-testid="run-%d-status" class="state state-FAILED">FAILED<`, f.alpha))
			require.Contains(t, body, fmt.Sprintf(`data-testid="run-%d-status" class="state state-ACTIVE">ACTIVE<`, f.beta))
			require.Contains(t, body, fmt.Sprintf(`data-testid="run-%d-cancel"`, f.beta))
			require.Contains(t, body, fmt.Sprintf(`data-testid="run-%d-progress"`, f.alpha))
			require.NotContains(t, body, fmt.Sprintf(`data-testid="run-%d-cancel"`, f.alpha), "a finished run offers no cancel")
			require.Contains(t, body, "2 DONE")
			require.Contains(t, body, "1 FAILED")
			require.Contains(t, body, "beta &lt;script&gt;alert(1)&lt;/script&gt;")
			require.NotContains(t, body, "<script>alert(1)")

			// A run's jobs, and filtered by status.
			body = b.page(fmt.Sprintf("/runs/%d", f.alpha))
			for _, id := range f.alphaJobs {
				require.Contains(t, body, fmt.Sprintf(`id="job-%d"`, id))
			}
			require.Contains(t, body, fmt.Sprintf(`data-testid="job-%d-retry"`, f.failed))
			body = b.page(fmt.Sprintf("/runs/%d?status=FAILED", f.alpha))
			require.Contains(t, body, fmt.Sprintf(`id="job-%d"`, f.failed))
			require.NotContains(t, body, fmt.Sprintf(`id="job-%d"`, f.doneA))

			// All jobs, filtered by queue.
			body = b.page("/jobs?queue=idle")
			require.Contains(t, body, fmt.Sprintf(`id="job-%d"`, f.lonely))
			require.NotContains(t, body, fmt.Sprintf(`id="job-%d"`, f.failed))
			body = b.page("/jobs?status=DONE")
			require.Contains(t, body, fmt.Sprintf(`id="job-%d"`, f.doneA))
			require.NotContains(t, body, fmt.Sprintf(`id="job-%d"`, f.lonely))

			// A job: args pretty-printed and escaped, attempts, error history.
			body = b.page(fmt.Sprintf("/jobs/%d", f.doneA))
			require.Contains(t, body, "{\n  &#34;n&#34;: 1,\n  &#34;note&#34;: &#34;pretty &lt;printed&gt; args&#34;\n}")
			body = b.page(fmt.Sprintf("/jobs/%d", f.failed))
			require.Contains(t, body, `data-testid="job-status"><span class="status st-failed">FAILED<`)
			require.Contains(t, body, `data-testid="job-attempts">1 of 3<`)
			require.Contains(t, body, `data-testid="job-errors"`)
			require.Contains(t, body, "the printer is on fire &lt;b&gt;&amp;")

			// Locks: a message per database, never a 500.
			body = b.page("/locks")
			switch db.name {
			case "SQLite":
				require.Contains(t, body, "no row locks")
			case "PostgreSQL":
				require.Contains(t, body, `data-testid="pg-deadlocks"`)
				require.Contains(t, body, "server log")
				require.Contains(t, body, `data-testid="waits-none"`)
			default:
				require.Contains(t, body, `data-testid="waits-none"`)
				require.Contains(t, body, `data-testid="deadlocks-none"`)
			}
			require.Equal(t, http.StatusNotFound, b.get("/jobs/999999").status)
			require.Equal(t, http.StatusNotFound, b.get("/runs/999999").status)
			require.Equal(t, http.StatusBadRequest, b.get("/jobs?status=BOGUS").status)
			require.Equal(t, http.StatusNotFound, b.get("/nope").status)

			// Cancel run beta: refused without a CSRF token, with a wrong
			// one, and from another origin; nothing changes.
			token := b.csrf("/runs")
			cancelBeta := fmt.Sprintf("/runs/%d/cancel", f.beta)
			for name, c := range map[string]struct {
				form   url.Values
				header map[string]string
			}{
				"no token":     {url.Values{}, nil},
				"wrong token":  {url.Values{"csrf": {token[:len(token)-2] + "xx"}}, nil},
				"other origin": {url.Values{"csrf": {token}}, map[string]string{"Origin": "http://evil.example"}},
				"cross-site":   {url.Values{"csrf": {token}}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
			} {
				r := b.do(http.MethodPost, cancelBeta, c.form, c.header)
				require.Equal(t, http.StatusForbidden, r.status, name)
			}
			require.Equal(t, http.StatusMethodNotAllowed, b.get(cancelBeta).status)
			rs, err := f.client.RunSummary(ctx, f.beta, 0)
			require.NoError(t, err)
			require.Equal(t, lockstep.RunCounts{lockstep.StatusPending: 3}, rs.Counts.Counts)
			require.EqualValues(t, "ACTIVE", rs.Status)

			// With the token, as a plain form (no JavaScript): cancelled,
			// and redirected back to the page the form was on.
			r := b.do(http.MethodPost, cancelBeta, url.Values{"csrf": {token}, "next": {"/runs"}}, nil)
			require.Equal(t, http.StatusSeeOther, r.status, r.body)
			require.Equal(t, "/runs", r.header.Get("Location"))
			rs, err = f.client.RunSummary(ctx, f.beta, 0)
			require.NoError(t, err)
			require.EqualValues(t, "CANCELLED", rs.Status)
			require.Equal(t, lockstep.RunCounts{lockstep.StatusCancelled: 3}, rs.Counts.Counts)
			body = b.page("/runs")
			require.Contains(t, body, fmt.Sprintf(`data-testid="run-%d-status" class="state state-CANCELLED">CANCELLED<`, f.beta))
			require.NotContains(t, body, fmt.Sprintf(`data-testid="run-%d-cancel"`, f.beta))

			// A finished run (every job ended, one FAILED) is not
			// cancelled, even by a stale page's form: it keeps its history.
			r = b.do(http.MethodPost, fmt.Sprintf("/runs/%d/cancel", f.alpha), url.Values{"csrf": {token}, "next": {"/runs"}}, nil)
			require.Equal(t, http.StatusConflict, r.status, r.body)
			require.Contains(t, r.body, "has finished")
			rs, err = f.client.RunSummary(ctx, f.alpha, 0)
			require.NoError(t, err)
			require.Equal(t, lockstep.RunStateFailed, rs.State())

			// With a job left it is cancelled; an off-site redirect target
			// is ignored.
			_, err = f.client.Insert(ctx, okArgs{N: 99}, &lockstep.InsertOpts{Queue: "extra", RunID: f.alpha})
			require.NoError(t, err)
			r = b.do(http.MethodPost, fmt.Sprintf("/runs/%d/cancel", f.alpha), url.Values{"csrf": {token}, "next": {"//evil.example/x"}}, nil)
			require.Equal(t, http.StatusSeeOther, r.status)
			require.Equal(t, fmt.Sprintf("/runs/%d", f.alpha), r.header.Get("Location"))

			// Through htmx: the answer is the job's row alone.
			// (as a browser sends it: same origin.)
			r = b.do(http.MethodPost, fmt.Sprintf("/jobs/%d/cancel", f.lonely), url.Values{"csrf": {token}, "next": {"/jobs"}},
				map[string]string{"HX-Request": "true", "Origin": b.base, "Sec-Fetch-Site": "same-origin"})
			require.Equal(t, http.StatusOK, r.status, r.body)
			require.True(t, strings.HasPrefix(r.body, fmt.Sprintf(`<tr id="job-%d"`, f.lonely)), r.body)
			require.Contains(t, r.body, "CANCELLED")
			j, err := f.client.Job(ctx, f.lonely)
			require.NoError(t, err)
			require.Equal(t, lockstep.StatusCancelled, j.Status)

			// Retry: the failed job of alpha (now a cancelled run) is
			// refused with a message; nothing changes.
			r = b.do(http.MethodPost, fmt.Sprintf("/jobs/%d/retry", f.failed), url.Values{"csrf": {token}}, nil)
			require.Equal(t, http.StatusSeeOther, r.status, r.body)
			require.Equal(t, fmt.Sprintf("/jobs/%d?done=run-cancelled", f.failed), r.header.Get("Location"))
			require.Contains(t, b.page(r.header.Get("Location")), "its run is cancelled")
			j, err = f.client.Job(ctx, f.failed)
			require.NoError(t, err)
			require.Equal(t, lockstep.StatusFailed, j.Status)
		})
	}
}

// TestDashboardRetryAndHTMXCancelRun: a failed job outside a cancelled run
// is put back to PENDING; a run cancelled through htmx answers with its
// re-rendered row.
func TestDashboardRetryAndHTMXCancelRun(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, openSQLite(t))
	b := newBrowser(t, newDashboard(t, dashboard.Config{Client: f.client}))
	token := b.csrf(fmt.Sprintf("/jobs/%d", f.failed))

	r := b.do(http.MethodPost, fmt.Sprintf("/jobs/%d/retry", f.failed), url.Values{"csrf": {token}}, nil)
	require.Equal(t, http.StatusSeeOther, r.status, r.body)
	require.Contains(t, b.page(r.header.Get("Location")), "Put back to PENDING")
	j, err := f.client.Job(ctx, f.failed)
	require.NoError(t, err)
	require.Equal(t, lockstep.StatusPending, j.Status)

	r = b.do(http.MethodPost, fmt.Sprintf("/runs/%d/cancel", f.beta), url.Values{"csrf": {token}, "next": {"/runs"}}, map[string]string{"HX-Request": "true"})
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.True(t, strings.HasPrefix(r.body, fmt.Sprintf(`<tr id="run-%d" data-testid="run-%d">`, f.beta, f.beta)), r.body)
	require.Contains(t, r.body, fmt.Sprintf(`data-testid="run-%d-status" class="state state-CANCELLED">CANCELLED<`, f.beta))
	require.Contains(t, r.body, "cancelled 3 job(s)")
	require.Equal(t, "lockstep-changed", r.header.Get("HX-Trigger"))
}

// TestDashboardHTMXJobActionsRefreshThePage: a job cancelled or retried
// through htmx answers with its row and the event that reloads the rest
// of the page: the run's summary (progress) and its job list.
func TestDashboardHTMXJobActionsRefreshThePage(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, openSQLite(t))
	b := newBrowser(t, newDashboard(t, dashboard.Config{Client: f.client}))
	runPage := fmt.Sprintf("/runs/%d", f.alpha)
	body := b.page(runPage)
	require.Contains(t, body, fmt.Sprintf(`<div id="run-summary" hx-get="%s" hx-trigger="lockstep-changed from:body" hx-select="#run-summary" hx-swap="outerHTML">`, runPage))
	require.Contains(t, body, fmt.Sprintf(`<div id="jobs" hx-get="%s" hx-trigger="every 5s, lockstep-changed from:body"`, runPage))
	require.Contains(t, b.page("/runs"), `<div id="runs" hx-get="/runs" hx-trigger="every 5s, lockstep-changed from:body"`, "every list page refreshes itself")
	token := b.csrf(runPage)
	htmx := map[string]string{"HX-Request": "true", "Origin": b.base, "Sec-Fetch-Site": "same-origin"}

	r := b.do(http.MethodPost, fmt.Sprintf("/jobs/%d/retry", f.failed), url.Values{"csrf": {token}, "next": {runPage}}, htmx)
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.True(t, strings.HasPrefix(r.body, fmt.Sprintf(`<tr id="job-%d"`, f.failed)), r.body)
	require.Contains(t, r.body, "Put back to PENDING")
	require.Equal(t, "lockstep-changed", r.header.Get("HX-Trigger"))
	j, err := f.client.Job(ctx, f.failed)
	require.NoError(t, err)
	require.Equal(t, lockstep.StatusPending, j.Status)
	// What the reload then shows: the run is active again.
	require.Contains(t, b.page(runPage), fmt.Sprintf(`data-testid="run-%d-status" class="state state-ACTIVE">ACTIVE<`, f.alpha))

	r = b.do(http.MethodPost, fmt.Sprintf("/jobs/%d/cancel", f.failed), url.Values{"csrf": {token}, "next": {runPage}}, htmx)
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.Contains(t, r.body, "Cancelled.")
	require.Equal(t, "lockstep-changed", r.header.Get("HX-Trigger"))

	// Without htmx, a redirect (the next page load is fresh anyway).
	r = b.do(http.MethodPost, fmt.Sprintf("/jobs/%d/cancel", f.lonely), url.Values{"csrf": {token}}, nil)
	require.Equal(t, http.StatusSeeOther, r.status, r.body)
	require.Empty(t, r.header.Get("HX-Trigger"))
}

// TestDashboardQueuesLimit: when the queues read stops at MaxQueues, the
// page says that it shows only the first ones.
func TestDashboardQueuesLimit(t *testing.T) {
	f := newFixture(t, openSQLite(t)) // two queues: idle and work
	for _, c := range []struct {
		max  int
		note bool
	}{{1, true}, {2, true}, {3, false}, {0, false}} {
		b := newBrowser(t, newDashboard(t, dashboard.Config{Client: f.client, MaxQueues: c.max}))
		for _, path := range []string{"/", "/queues/table"} {
			body := b.page(path)
			if c.note {
				require.Contains(t, body, fmt.Sprintf(`data-testid="queues-limited">Showing the first %d queues:`, c.max), "MaxQueues %d", c.max)
			} else {
				require.NotContains(t, body, `data-testid="queues-limited"`, "MaxQueues %d", c.max)
				require.Contains(t, body, `data-testid="queue-idle"`)
				require.Contains(t, body, `data-testid="queue-work"`)
			}
		}
	}
}

// TestDashboardAuthSchemes: an Authorization header of another scheme
// (Basic, from a proxy that authenticates in front of the dashboard) is
// not the dashboard's: the login page, the assets and the session cookie
// work through it, and it never stands in for the CSRF token. The Bearer
// scheme is matched case-insensitively.
func TestDashboardAuthSchemes(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, openSQLite(t))
	const secret = "s3cret-token"
	b := newBrowser(t, newDashboard(t, dashboard.Config{Client: f.client, Token: secret}))
	basic := map[string]string{"Authorization": "Basic YWxpY2U6cHJveHktcGFzc3dvcmQ="}

	r := b.do(http.MethodGet, "/login", nil, basic)
	require.Equal(t, http.StatusOK, r.status, r.body)
	token := reCSRF.FindStringSubmatch(r.body)
	require.NotNil(t, token, r.body)
	require.Equal(t, http.StatusOK, b.do(http.MethodGet, "/static/htmx.min.js", nil, basic).status)
	require.Equal(t, http.StatusNoContent, b.do(http.MethodGet, "/favicon.ico", nil, basic).status)

	// Not logged in: refused, and a browser is shown the login form.
	require.Equal(t, http.StatusUnauthorized, b.do(http.MethodGet, "/runs", nil, basic).status)
	r = b.do(http.MethodGet, "/runs", nil, map[string]string{"Authorization": basic["Authorization"], "Accept": "text/html"})
	require.Equal(t, http.StatusUnauthorized, r.status)
	require.Contains(t, r.body, `action="/login"`)

	// Logging in through the proxy sets the cookie, which then works.
	r = b.do(http.MethodPost, "/login", url.Values{"csrf": {token[1]}, "token": {secret}, "next": {"/runs"}}, basic)
	require.Equal(t, http.StatusSeeOther, r.status, r.body)
	r = b.do(http.MethodGet, "/runs", nil, basic)
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.Contains(t, r.body, "alpha")

	// A browser sends Basic credentials on its own: they are no reason to
	// skip the CSRF token.
	cancelLonely := fmt.Sprintf("/jobs/%d/cancel", f.lonely)
	require.Equal(t, http.StatusForbidden, b.do(http.MethodPost, cancelLonely, url.Values{}, basic).status)
	j, err := f.client.Job(ctx, f.lonely)
	require.NoError(t, err)
	require.Equal(t, lockstep.StatusPending, j.Status)
	r = b.do(http.MethodPost, cancelLonely, url.Values{"csrf": {token[1]}}, basic)
	require.Equal(t, http.StatusSeeOther, r.status, r.body)

	// The scheme's name is case-insensitive; the token is not.
	anon := newBrowser(t, newDashboard(t, dashboard.Config{Client: f.client, Token: secret}))
	for _, h := range []string{"bearer " + secret, "BEARER " + secret, "Bearer  " + secret} {
		r = anon.do(http.MethodGet, "/runs", nil, map[string]string{"Authorization": h})
		require.Equal(t, http.StatusOK, r.status, h)
	}
	for _, h := range []string{"bearer " + strings.ToUpper(secret), "bearer", "Bearer wrong"} {
		require.Equal(t, http.StatusUnauthorized, anon.do(http.MethodGet, "/runs", nil, map[string]string{"Authorization": h}).status, h)
	}
	// A wrong bearer token is refused even on a public path.
	require.Equal(t, http.StatusUnauthorized, anon.do(http.MethodGet, "/login", nil, map[string]string{"Authorization": "Bearer wrong"}).status)
	// With the token, no CSRF token is needed, whatever the case.
	r = anon.do(http.MethodPost, fmt.Sprintf("/runs/%d/cancel", f.beta), url.Values{}, map[string]string{"Authorization": "bearer " + secret})
	require.Equal(t, http.StatusSeeOther, r.status, r.body)
}

// TestDashboardAuth: with a token, nothing is served without it (bearer
// or the login cookie); actions need the CSRF token on top of the cookie.
func TestDashboardAuth(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, openSQLite(t))
	const secret = "s3cret-token"
	b := newBrowser(t, newDashboard(t, dashboard.Config{Client: f.client, Token: secret}))
	cancelBeta := fmt.Sprintf("/runs/%d/cancel", f.beta)

	for _, path := range []string{"/", "/runs", "/queues/table", fmt.Sprintf("/jobs/%d", f.failed), "/locks"} {
		r := b.get(path)
		require.Equal(t, http.StatusUnauthorized, r.status, path)
		require.NotContains(t, r.body, "alpha")
	}
	// A browser is shown the login form.
	r := b.do(http.MethodGet, "/runs", nil, map[string]string{"Accept": "text/html"})
	require.Equal(t, http.StatusUnauthorized, r.status)
	require.Contains(t, r.body, `action="/login"`)
	require.Contains(t, r.body, `name="next" value="/runs"`)
	require.Equal(t, http.StatusUnauthorized, b.do(http.MethodGet, "/runs", nil, map[string]string{"Authorization": "Bearer wrong"}).status)
	require.Equal(t, http.StatusUnauthorized, b.do(http.MethodGet, "/runs", nil, map[string]string{"Authorization": "Basic " + secret}).status)
	require.Equal(t, http.StatusOK, b.get("/static/htmx.min.js").status, "static assets need no auth")

	// Mutations without auth are refused, whatever CSRF token they carry.
	token := b.csrf("/login")
	require.Equal(t, http.StatusUnauthorized, b.do(http.MethodPost, cancelBeta, url.Values{"csrf": {token}}, nil).status)
	require.Equal(t, http.StatusUnauthorized, b.do(http.MethodPost, cancelBeta, url.Values{"csrf": {token}}, map[string]string{"Authorization": "Bearer nope"}).status)
	rs, err := f.client.RunSummary(ctx, f.beta, 0)
	require.NoError(t, err)
	require.EqualValues(t, "ACTIVE", rs.Status)

	// The bearer token opens every page.
	r = b.do(http.MethodGet, "/runs", nil, map[string]string{"Authorization": "Bearer " + secret})
	require.Equal(t, http.StatusOK, r.status)
	require.Contains(t, r.body, "alpha")

	// Login: a wrong token is refused, the right one sets the cookie.
	r = b.do(http.MethodPost, "/login", url.Values{"csrf": {token}, "token": {"guess"}, "next": {"/runs"}}, nil)
	require.Equal(t, http.StatusUnauthorized, r.status)
	require.Contains(t, r.body, "wrong token")
	require.Equal(t, http.StatusForbidden, b.do(http.MethodPost, "/login", url.Values{"token": {secret}}, nil).status, "login needs the CSRF token")
	r = b.do(http.MethodPost, "/login", url.Values{"csrf": {token}, "token": {secret}, "next": {"/runs"}}, nil)
	require.Equal(t, http.StatusSeeOther, r.status, r.body)
	require.Equal(t, "/runs", r.header.Get("Location"))
	cookie := r.header.Get("Set-Cookie")
	require.Contains(t, cookie, "lockstep_session=")
	require.Contains(t, cookie, "HttpOnly")
	require.Contains(t, cookie, "SameSite=Strict")
	require.NotContains(t, cookie, secret)

	body := b.page("/runs")
	require.Contains(t, body, "alpha")
	require.Contains(t, body, `action="/logout"`)
	// Logged in, an action still needs the CSRF token.
	require.Equal(t, http.StatusForbidden, b.do(http.MethodPost, cancelBeta, url.Values{}, nil).status)
	rs, err = f.client.RunSummary(ctx, f.beta, 0)
	require.NoError(t, err)
	require.EqualValues(t, "ACTIVE", rs.Status)
	r = b.do(http.MethodPost, cancelBeta, url.Values{"csrf": {token}}, nil)
	require.Equal(t, http.StatusSeeOther, r.status, r.body)
	rs, err = f.client.RunSummary(ctx, f.beta, 0)
	require.NoError(t, err)
	require.EqualValues(t, "CANCELLED", rs.Status)

	// A bearer client (curl, a script) needs no CSRF token: a browser
	// never sends that header on its own.
	r = b.do(http.MethodPost, fmt.Sprintf("/jobs/%d/cancel", f.lonely), url.Values{}, map[string]string{"Authorization": "Bearer " + secret})
	require.Equal(t, http.StatusSeeOther, r.status, r.body)
	j, err := f.client.Job(ctx, f.lonely)
	require.NoError(t, err)
	require.Equal(t, lockstep.StatusCancelled, j.Status)

	// Logging out ends the session.
	r = b.do(http.MethodPost, "/logout", url.Values{"csrf": {token}}, nil)
	require.Equal(t, http.StatusSeeOther, r.status)
	require.Equal(t, http.StatusUnauthorized, b.get("/runs").status)
}

// TestDashboardHeaders: the security headers, the body limit, and the
// host check of a dashboard without a token.
func TestDashboardHeaders(t *testing.T) {
	f := newFixture(t, openSQLite(t))
	s := newDashboard(t, dashboard.Config{Client: f.client})
	b := newBrowser(t, s)
	r := b.get("/runs")
	require.Equal(t, http.StatusOK, r.status)
	require.Contains(t, r.header.Get("Content-Security-Policy"), "default-src 'self'")
	require.Equal(t, "DENY", r.header.Get("X-Frame-Options"))
	require.Equal(t, "no-referrer", r.header.Get("Referrer-Policy"))
	require.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"))
	require.NotContains(t, r.body, "style=", "the CSP allows no inline style")
	require.NotContains(t, r.body, "<script>", "the CSP allows no inline script")

	token := b.csrf("/runs")
	big := url.Values{"csrf": {token}, "pad": {strings.Repeat("x", dashboard.MaxBodyBytes)}}
	require.Equal(t, http.StatusRequestEntityTooLarge, b.do(http.MethodPost, fmt.Sprintf("/runs/%d/cancel", f.beta), big, nil).status)

	// Without a token only loopback host names are answered (DNS
	// rebinding); with one, any.
	req, err := http.NewRequest(http.MethodGet, "http://rebound.example/runs", nil)
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	require.Equal(t, http.StatusMisdirectedRequest, rec.Code)
	for _, host := range []string{"localhost:8080", "127.0.0.1", "[::1]:80"} {
		req.Host = host
		rec = httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		require.Equal(t, http.StatusOK, rec.Code, host)
	}
	withToken := newDashboard(t, dashboard.Config{Client: f.client, Token: "t"})
	req.Host = "dash.example.com"
	req.Header.Set("Authorization", "Bearer t")
	rec = httptest.NewRecorder()
	withToken.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)

	// /metrics is mounted when given, behind the same auth.
	m := newDashboard(t, dashboard.Config{Client: f.client, Token: "t", Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("lockstep_up 1\n"))
	})})
	mb := newBrowser(t, m)
	require.Equal(t, http.StatusUnauthorized, mb.get("/metrics").status)
	r = mb.do(http.MethodGet, "/metrics", nil, map[string]string{"Authorization": "Bearer t"})
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "lockstep_up 1\n", r.body)
}
