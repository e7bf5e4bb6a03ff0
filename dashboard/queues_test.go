package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/dashboard"
)

// queueSettings reads one queue's settings through the client; zero when
// it has none.
func queueSettings(t *testing.T, client *lockstep.Client, queue string) lockstep.QueueSettings {
	t.Helper()
	all, err := client.ListQueueSettings(context.Background())
	require.NoError(t, err)
	for _, s := range all {
		if s.Queue == queue {
			return s
		}
	}
	return lockstep.QueueSettings{}
}

// TestDashboardQueueSettings: on each database the queues page shows each
// queue's state and max workers; pause, resume and max workers change
// them, as plain forms (a redirect with a message) and through htmx (the
// table alone), only with the CSRF token; bad values are refused and
// change nothing.
func TestDashboardQueueSettings(t *testing.T) {
	for _, db := range databases() {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, db.open(t))
			b := newBrowser(t, newDashboard(t, dashboard.Config{Client: f.client}))
			htmx := map[string]string{"HX-Request": "true", "Origin": b.base, "Sec-Fetch-Site": "same-origin"}

			body := b.page("/")
			require.Contains(t, body, `data-testid="queue-work-state">active<`)
			require.Contains(t, body, `data-testid="queue-work-max-workers"><span class="muted">as configured<`)
			require.Contains(t, body, `data-testid="queue-work-pause"`)
			require.Contains(t, body, `data-testid="queue-work-max-workers-input"`)
			token := b.csrf("/")

			// Refused without a valid token: nothing changes.
			for _, path := range []string{"/queues/pause", "/queues/resume", "/queues/max-workers"} {
				for name, form := range map[string]url.Values{
					"no token":    {"queue": {"work"}, "max_workers": {"3"}},
					"wrong token": {"csrf": {token + "x"}, "queue": {"work"}, "max_workers": {"3"}},
				} {
					r := b.do(http.MethodPost, path, form, nil)
					require.Equal(t, http.StatusForbidden, r.status, "%s, %s: %s", path, name, r.body)
				}
				require.Equal(t, http.StatusMethodNotAllowed, b.get(path).status, path)
			}
			require.Equal(t, lockstep.QueueSettings{}, queueSettings(t, f.client, "work"))

			// Pause as a plain form: a redirect to the page, which says so.
			r := b.do(http.MethodPost, "/queues/pause", url.Values{"csrf": {token}, "queue": {"work"}}, nil)
			require.Equal(t, http.StatusSeeOther, r.status, r.body)
			require.Equal(t, "/?done=paused", r.header.Get("Location"))
			require.False(t, queueSettings(t, f.client, "work").Paused.IsZero())
			body = b.page(r.header.Get("Location"))
			require.Contains(t, body, `data-testid="queues-message">Queue paused:`)
			require.Contains(t, body, `data-testid="queue-work-state"><span class="paused">paused</span>`)
			require.Contains(t, body, `data-testid="queue-work-resume"`)
			require.NotContains(t, body, `data-testid="queue-work-pause"`)
			require.Contains(t, body, `data-testid="queue-idle-pause"`, "the other queue is untouched")

			// Max workers through htmx: the table comes back, with a note.
			r = b.do(http.MethodPost, "/queues/max-workers", url.Values{"csrf": {token}, "queue": {"work"}, "max_workers": {"4"}}, htmx)
			require.Equal(t, http.StatusOK, r.status, r.body)
			require.True(t, strings.HasPrefix(r.body, `<div id="queues" hx-get="/queues/table"`), r.body)
			require.NotContains(t, r.body, "<html")
			require.Contains(t, r.body, `data-testid="queues-note">Max workers set`)
			require.Contains(t, r.body, `data-testid="queue-work-max-workers">4<`)
			require.Contains(t, r.body, `value="4"`)
			require.Equal(t, 4, queueSettings(t, f.client, "work").MaxWorkers)

			// Bad values are refused; nothing changes.
			for _, form := range []url.Values{
				{"csrf": {token}, "queue": {"work"}, "max_workers": {"abc"}},
				{"csrf": {token}, "queue": {"work"}, "max_workers": {"-1"}},
				{"csrf": {token}, "queue": {"work"}, "max_workers": {"10001"}},
				{"csrf": {token}, "max_workers": {"2"}},
				{"csrf": {token}, "queue": {strings.Repeat("q", 200)}, "max_workers": {"2"}},
				{"csrf": {token}, "queue": {"bad\x1bname"}, "max_workers": {"2"}},
			} {
				r = b.do(http.MethodPost, "/queues/max-workers", form, nil)
				require.Equal(t, http.StatusBadRequest, r.status, "%v: %s", form, r.body)
			}
			require.Equal(t, 4, queueSettings(t, f.client, "work").MaxWorkers)
			all, err := f.client.ListQueueSettings(context.Background())
			require.NoError(t, err)
			require.Len(t, all, 1, "no settings for a refused queue name")

			// A queue with settings and no jobs (paused ahead of its first
			// job) gets a row.
			r = b.do(http.MethodPost, "/queues/pause", url.Values{"csrf": {token}, "queue": {"later <b>"}}, nil)
			require.Equal(t, http.StatusSeeOther, r.status, r.body)
			body = b.page("/queues/table")
			require.Contains(t, body, `data-testid="queue-later &lt;b&gt;-pending">0<`)
			require.Contains(t, body, `data-testid="queue-later &lt;b&gt;-state"><span class="paused">paused</span>`)
			require.NotContains(t, body, "later <b>")

			// Resume, and clear max workers with an empty field.
			r = b.do(http.MethodPost, "/queues/resume", url.Values{"csrf": {token}, "queue": {"work"}}, nil)
			require.Equal(t, http.StatusSeeOther, r.status, r.body)
			require.Equal(t, "/?done=resumed", r.header.Get("Location"))
			r = b.do(http.MethodPost, "/queues/max-workers", url.Values{"csrf": {token}, "queue": {"work"}, "max_workers": {""}}, nil)
			require.Equal(t, http.StatusSeeOther, r.status, r.body)
			require.Equal(t, "/?done=max-workers-cleared", r.header.Get("Location"))
			s := queueSettings(t, f.client, "work")
			require.True(t, s.Paused.IsZero())
			require.Zero(t, s.MaxWorkers)
			body = b.page("/")
			require.Contains(t, body, `data-testid="queue-work-state">active<`)
			require.Contains(t, body, `data-testid="queue-work-max-workers"><span class="muted">as configured<`)
		})
	}
}

// TestDashboardQueueSettingsBeyondMaxQueues: when the queues read stops at
// MaxQueues, a queue with settings but not among those read may have
// jobs: its counts are shown as unknown, not as zeros.
func TestDashboardQueueSettingsBeyondMaxQueues(t *testing.T) {
	f := newFixture(t, openSQLite(t)) // queues idle and work
	require.NoError(t, f.client.SetQueueMaxWorkers(context.Background(), "work", 2))
	b := newBrowser(t, newDashboard(t, dashboard.Config{Client: f.client, MaxQueues: 1}))
	body := b.page("/queues/table")
	require.Contains(t, body, `data-testid="queues-limited"`)
	require.Contains(t, body, `data-testid="queue-work-done">—<`)
	require.Contains(t, body, `data-testid="queue-work-max-workers">2<`)

	b = newBrowser(t, newDashboard(t, dashboard.Config{Client: f.client}))
	require.Contains(t, b.page("/queues/table"), `data-testid="queue-work-done">2<`)
}
