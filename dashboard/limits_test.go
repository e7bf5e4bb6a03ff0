package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/dashboard"
	"github.com/lockstep-queue/lockstep/driver"
)

// blockJobs claims the queue's jobs through the executor, as a worker's
// producer would, until want of them are BLOCKED: the first claim that
// meets a key creates its row (leaving its jobs PENDING), the next one
// blocks the jobs its limit has no room for.
func blockJobs(t *testing.T, f *fixture, queue string, want int) []*lockstep.JobRow {
	t.Helper()
	ctx := context.Background()
	var claimed []*lockstep.JobRow
	blocked := 0
	for i := 0; i < 10 && blocked < want; i++ {
		res, err := f.drv.Executor().JobClaimLimited(ctx, &driver.JobClaimParams{
			Queue: queue, Max: 10, Limits: queueSettings(t, f.client, queue).Limits, Grace: time.Minute})
		require.NoError(t, err)
		claimed = append(claimed, res.Jobs...)
		blocked += res.Blocked
	}
	require.Equal(t, want, blocked, "jobs blocked")
	return claimed
}

// TestDashboardQueueLimits: on each database the queues table shows each
// queue's BLOCKED jobs and limits and links to the queue's page, which
// shows the limits, the RUNNING jobs against the concurrency limit, the
// BLOCKED ones with a link to them, and sets the limits through a form
// (plain and htmx, only with the CSRF token; bad values refused, changing
// nothing). A BLOCKED job's page says what holds it back; it can be
// cancelled; its run is still active.
func TestDashboardQueueLimits(t *testing.T) {
	for _, db := range databases() {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newFixture(t, db.open(t))
			b := newBrowser(t, newDashboard(t, dashboard.Config{Client: f.client}))
			htmx := map[string]string{"HX-Request": "true", "Origin": b.base, "Sec-Fetch-Site": "same-origin"}

			// Two of key "acct <1>"'s three jobs are held back by its limit.
			require.NoError(t, f.client.SetQueueLimits(ctx, "limited", lockstep.QueueLimits{Concurrency: 5, KeyConcurrency: 1}))
			key := &lockstep.InsertOpts{Queue: "limited", LimitKey: "acct <1>"}
			run, res, err := f.client.InsertRun(ctx, "limited run", nil,
				lockstep.InsertManyParams{Args: okArgs{N: 1}, Opts: key},
				lockstep.InsertManyParams{Args: okArgs{N: 2}, Opts: key},
				lockstep.InsertManyParams{Args: okArgs{N: 3}, Opts: key},
				lockstep.InsertManyParams{Args: okArgs{N: 4}, Opts: &lockstep.InsertOpts{Queue: "limited", LimitKey: "acct-2"}},
			)
			require.NoError(t, err)
			ids := insertedIDs(res)
			blockJobs(t, f, "limited", 2)
			held := ids[1]

			body := b.page("/")
			require.Contains(t, body, `<th class="num">BLOCKED</th>`)
			require.Contains(t, body, `data-testid="queue-limited-blocked">2<`)
			require.Contains(t, body, `data-testid="queue-limited-running">2<`)
			require.Contains(t, body, `data-testid="queue-limited-limits"><a href="/queue/limited">concurrency 5, per key 1</a>`)
			require.Contains(t, body, `data-testid="queue-work-limits"><a href="/queue/work"><span class="muted">none</span>`)
			require.Contains(t, body, `<a href="/queue/limited" data-testid="queue-limited-link">limited</a>`)

			body = b.page("/queue/limited")
			require.Contains(t, body, `data-testid="queue-limits-text">concurrency 5, per key 1<`)
			require.Contains(t, body, `data-testid="queue-usage">2 of 5 `)
			require.Contains(t, body, `<a href="/jobs?queue=limited&amp;status=BLOCKED" data-testid="queue-blocked-link">2 held back by limits</a>`)
			require.Contains(t, body, `data-testid="queue-count-blocked">2<`)
			require.Contains(t, body, `value="5" placeholder="none" data-testid="limit-concurrency"`)
			require.Contains(t, body, `value="1" placeholder="none" data-testid="limit-key-concurrency"`)
			require.Contains(t, body, `value="" placeholder="none" data-testid="limit-rate"`)
			require.Contains(t, body, `<option value="none" selected>`)
			require.Contains(t, body, `data-testid="limit-clear"`)
			require.Contains(t, body, `hx-select="#queue-stats"`)

			// The BLOCKED jobs, with their key; the filters offer BLOCKED.
			body = b.page("/jobs?queue=limited&status=BLOCKED")
			require.Contains(t, body, `<option value="BLOCKED" selected>BLOCKED</option>`)
			require.Contains(t, body, fmt.Sprintf(`id="job-%d"`, held))
			require.Contains(t, body, fmt.Sprintf(`id="job-%d"`, ids[2]))
			require.NotContains(t, body, fmt.Sprintf(`id="job-%d"`, ids[0]), "RUNNING")
			require.Contains(t, body, fmt.Sprintf(`data-testid="job-%d-limit-key">acct &lt;1&gt;<`, held))
			require.Contains(t, body, fmt.Sprintf(`data-testid="job-%d-cancel"`, held))
			require.NotContains(t, body, "acct <1>")

			// The job's page says why it is held back.
			body = b.page(fmt.Sprintf("/jobs/%d", held))
			require.Contains(t, body, `data-testid="job-status"><span class="status st-blocked">BLOCKED<`)
			require.Contains(t, body, `data-testid="job-limit-key">acct &lt;1&gt;<`)
			require.Contains(t, body, `data-testid="job-blocked">Blocked by limit: key acct &lt;1&gt; at its limit (at most 1 RUNNING per key).`)
			require.NotContains(t, b.page(fmt.Sprintf("/jobs/%d", ids[0])), `data-testid="job-blocked"`)
			require.Contains(t, b.page(fmt.Sprintf("/jobs/%d", ids[0])), `data-testid="job-limit-key">acct &lt;1&gt;<`)

			// Its run is active while jobs are BLOCKED.
			body = b.page(fmt.Sprintf("/runs/%d", run.ID))
			require.Contains(t, body, fmt.Sprintf(`data-testid="run-%d-status" class="state state-ACTIVE">ACTIVE<`, run.ID))
			require.Contains(t, body, "2 BLOCKED")
			require.Contains(t, b.page(fmt.Sprintf("/runs/%d?status=BLOCKED", run.ID)), fmt.Sprintf(`id="job-%d"`, held))

			// Setting limits: refused without a valid token.
			token := b.csrf("/queue/limited")
			for name, form := range map[string]url.Values{
				"no token":    {"queue": {"limited"}, "concurrency": {"3"}},
				"wrong token": {"csrf": {token + "x"}, "queue": {"limited"}, "concurrency": {"3"}},
			} {
				r := b.do(http.MethodPost, "/queues/limits", form, nil)
				require.Equal(t, http.StatusForbidden, r.status, "%s: %s", name, r.body)
			}
			require.Equal(t, http.StatusMethodNotAllowed, b.get("/queues/limits").status)

			// Bad values are refused in the form's words; nothing changes.
			for form, want := range map[string]string{
				"concurrency=-1":                    "concurrency must be a whole number from 0 (no limit) to 2147483647",
				"concurrency=abc":                   "concurrency must be a whole number from 0 (no limit) to 2147483647",
				"key_concurrency=2147483648":        "per-key concurrency must be a whole number from 0 (no limit) to 2147483647",
				"rate=1.5&per=1s":                   "rate must be a whole number from 0 (no limit) to 2147483647",
				"sequence=sometimes":                "sequence must be none, release or hold",
				"rate=10":                           "a rate limit needs a period (per), such as 1s or 1m",
				"rate=10&per=soon":                  "per must be a duration such as 1s or 1m, from 1ms to 168h0m0s",
				"rate=10&per=0s":                    "per must be a duration such as 1s or 1m, from 1ms to 168h0m0s",
				"rate=10&per=200h":                  "per must be a duration such as 1s or 1m, from 1ms to 168h0m0s",
				"queue=&concurrency=1":              "no queue given",
				"queue=" + strings.Repeat("q", 200): "queue name is 200 bytes long",
			} {
				v, err := url.ParseQuery(form)
				require.NoError(t, err)
				v.Set("csrf", token)
				if !v.Has("queue") {
					v.Set("queue", "limited")
				}
				r := b.do(http.MethodPost, "/queues/limits", v, nil)
				require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", form, r.body)
				require.Contains(t, r.body, want, form)
				r = b.do(http.MethodPost, "/queues/limits", v, htmx)
				require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", form, r.body)
				require.Contains(t, r.body, want, "htmx shows the message: %s", form)
			}
			require.Equal(t, lockstep.QueueLimits{Concurrency: 5, KeyConcurrency: 1}, queueSettings(t, f.client, "limited").Limits)

			// A plain form: a redirect to the queue's page, which says so.
			r := b.do(http.MethodPost, "/queues/limits", url.Values{"csrf": {token}, "queue": {"limited"}, "concurrency": {"3"},
				"key_concurrency": {"1"}, "sequence": {"hold"}, "rate": {"100"}, "per": {"1s"}, "rate_by_key": {"1"}}, nil)
			require.Equal(t, http.StatusSeeOther, r.status, r.body)
			require.Equal(t, "/queue/limited?done=limits-set", r.header.Get("Location"))
			require.Equal(t, lockstep.QueueLimits{Concurrency: 3, KeyConcurrency: 1, Sequence: lockstep.SequenceHold,
				Rate: 100, RatePeriod: time.Second, RateByKey: true}, queueSettings(t, f.client, "limited").Limits)
			body = b.page(r.header.Get("Location"))
			require.Contains(t, body, `data-testid="queue-message">Limits set:`)
			require.Contains(t, body, `data-testid="queue-limits-text">concurrency 3, per key 1, sequence hold, rate 100/1s per key<`)
			require.Contains(t, body, `data-testid="queue-usage">2 of 3 `)
			require.Contains(t, body, `<option value="hold" selected>`)
			require.Contains(t, body, `value="1s" placeholder="1s" size="6" maxlength="32" data-testid="limit-per"`)
			require.Contains(t, body, `value="1" checked data-testid="limit-rate-by-key"`)
			// Sequences say so on the job's page.
			require.Contains(t, b.page(fmt.Sprintf("/jobs/%d", held)),
				"Blocked by limit: key acct &lt;1&gt; at its limit (a sequence: one job at a time in insert order, and a FAILED job holds the rest until it is retried).")

			// Through htmx: the limits section comes back with a note, and
			// the page's lists are told to reload. An emptied rate takes
			// its period and per-key count along.
			r = b.do(http.MethodPost, "/queues/limits", url.Values{"csrf": {token}, "queue": {"limited"}, "concurrency": {""},
				"key_concurrency": {"2"}, "sequence": {"none"}, "rate": {""}, "per": {"1s"}, "rate_by_key": {"1"}}, htmx)
			require.Equal(t, http.StatusOK, r.status, r.body)
			require.True(t, strings.HasPrefix(r.body, `<div id="queue-limits">`), r.body)
			require.NotContains(t, r.body, "<html")
			require.Contains(t, r.body, `data-testid="queue-limits-note">Limits set:`)
			require.Contains(t, r.body, `value="2" placeholder="none" data-testid="limit-key-concurrency"`)
			require.Equal(t, "lockstep-changed", r.header.Get("HX-Trigger"))
			require.Equal(t, lockstep.QueueLimits{KeyConcurrency: 2}, queueSettings(t, f.client, "limited").Limits)

			// A BLOCKED job can be cancelled.
			r = b.do(http.MethodPost, fmt.Sprintf("/jobs/%d/cancel", ids[2]), url.Values{"csrf": {token}}, nil)
			require.Equal(t, http.StatusSeeOther, r.status, r.body)
			j, err := f.client.Job(ctx, ids[2])
			require.NoError(t, err)
			require.Equal(t, lockstep.StatusCancelled, j.Status)

			// Clear: every limit goes.
			r = b.do(http.MethodPost, "/queues/limits", url.Values{"csrf": {token}, "queue": {"limited"}, "clear": {"1"}, "concurrency": {"9"}}, nil)
			require.Equal(t, http.StatusSeeOther, r.status, r.body)
			require.Equal(t, "/queue/limited?done=limits-cleared", r.header.Get("Location"))
			require.Equal(t, lockstep.QueueLimits{}, queueSettings(t, f.client, "limited").Limits)
			body = b.page(r.header.Get("Location"))
			require.Contains(t, body, `data-testid="queue-message">Limits removed:`)
			require.Contains(t, body, `data-testid="queue-limits-text">none<`)
			require.NotContains(t, body, `data-testid="limit-clear"`)

			// A queue without jobs or settings has a page (limits may be
			// set ahead of its first job); a name with '/', '?', '#' and
			// markup is one escaped path segment.
			odd := "odd/name ?#<b>"
			body = b.page("/queue/" + url.PathEscape(odd))
			require.Contains(t, body, "<h1>Queue odd/name ?#&lt;b&gt;</h1>")
			require.Contains(t, body, `name="queue" value="odd/name ?#&lt;b&gt;"`)
			r = b.do(http.MethodPost, "/queues/limits", url.Values{"csrf": {token}, "queue": {odd}, "concurrency": {"2"}}, nil)
			require.Equal(t, http.StatusSeeOther, r.status, r.body)
			require.Equal(t, "/queue/odd%2Fname%20%3F%23%3Cb%3E?done=limits-set", r.header.Get("Location"))
			require.Equal(t, 2, queueSettings(t, f.client, odd).Limits.Concurrency)
			require.Contains(t, b.page(r.header.Get("Location")), `data-testid="queue-limits-text">concurrency 2<`)
			require.Contains(t, b.page("/"), `href="/queue/odd%2Fname%20%3F%23%3Cb%3E"`)
			require.Equal(t, http.StatusNotFound, b.get("/queue/"+strings.Repeat("q", 200)).status)
		})
	}
}
