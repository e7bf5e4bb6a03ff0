package dashboard_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/dashboard"
)

// TestDashboardHistory: on each database the overview draws the rollup's
// counts with labelled axes, filters by the range, queue and kind chosen
// from select boxes, a queue's page charts that queue, an empty range is
// zeros, and the kinds page sums each kind's last hour and day, in the
// table its own refresh reloads.
func TestDashboardHistory(t *testing.T) {
	for _, db := range databases() {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			drv := db.open(t)
			c, err := lockstep.NewClient(drv, lockstep.Config{Logger: quietLogger()})
			require.NoError(t, err)
			b := newBrowser(t, newDashboard(t, dashboard.Config{Client: c}))

			// Nothing yet: zeros, axes still drawn.
			body := b.page("/")
			require.Contains(t, body, `data-testid="history-done">0<`)
			require.Contains(t, body, `data-testid="history-rate-ylabel">jobs/min<`)
			require.Contains(t, body, `data-testid="history-failure-ylabel">% failed<`)
			require.Contains(t, body, `data-testid="history-rate-xlabel">time (UTC)<`)
			kinds := b.page("/kinds")
			require.Contains(t, kinds, `data-testid="kinds-none"`)
			// The table reloads itself, as the other list pages do: htmx
			// fetches the page and keeps its #kinds.
			require.Contains(t, kinds, `<div id="kinds" hx-get="/kinds" hx-trigger="every 10s" hx-select="#kinds" hx-swap="outerHTML">`)

			now := time.Now().UTC().Truncate(time.Minute)
			require.NoError(t, drv.Executor().HistoryAdd(ctx, []lockstep.HistoryRow{
				{Bucket: now.Add(-5 * time.Minute), Queue: "mail", Kind: "send", Done: 30, Failed: 10, Retried: 2, RunMillis: 4200},
				{Bucket: now.Add(-2 * time.Minute), Queue: "mail", Kind: "bounce", Done: 5},
				{Bucket: now.Add(-3 * time.Hour), Queue: "pay", Kind: "charge", Done: 7, Failed: 1},
			}))
			body = b.page("/")
			require.Contains(t, body, `data-testid="history-done">35<`)
			require.Contains(t, body, `data-testid="history-failed">10<`)
			require.Contains(t, body, `<option value="mail">mail</option>`)
			require.Contains(t, body, `<option value="send">send</option>`)
			require.Contains(t, body, `30 done, 10 failed (30 and 10 jobs/min)`)
			require.Contains(t, body, `25% failed`)
			require.Contains(t, body, `data-testid="history-rate-ytick">40<`)

			frag := b.page("/history?range=6h&queue=pay")
			require.NotContains(t, frag, "<html")
			require.Contains(t, frag, `data-testid="history-done">7<`)
			require.Contains(t, frag, `<option value="pay" selected>pay</option>`)
			require.Contains(t, frag, `<option value="6h" selected>last 6 hours</option>`)
			require.Contains(t, b.page("/history?range=1h&kind=bounce"), `data-testid="history-done">5<`)
			require.Contains(t, b.page("/history?range=7d&queue=none"), `data-testid="history-done">0<`)

			q := b.page("/queue/mail")
			require.Contains(t, q, `data-testid="history-done">35<`)
			require.NotContains(t, q, `data-testid="history-queue"`)

			k := b.do(http.MethodGet, "/kinds", nil, map[string]string{"HX-Request": "true"}).body
			require.Contains(t, k, `data-testid="kind-send"`)
			require.Contains(t, k, `data-testid="kind-charge-day-done">7<`)
			require.Contains(t, k, `25%`)
			require.Contains(t, k, `100ms`, "4200 ms over 42 attempts")
		})
	}
}
