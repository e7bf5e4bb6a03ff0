package cli

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/dsn"
)

// TestServeBrowserHistory: in headless Chromium, the overview draws the
// history rollup's last 6 hours (axis labels, UTC ticks, a known count),
// a queue chosen from its select box redraws the section (htmx), and the
// Kinds page sums each kind, reloading its table by itself when a new
// kind finishes. Screenshots of both are saved
// ($LOCKSTEP_TEST_SCREENSHOTS, else a temporary directory): history.png
// and kinds.png.
func TestServeBrowserHistory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sess, dsnURL, _ := browserOnSQLite(ctx, t)
	drv, err := dsn.Open(ctx, dsnURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })

	// Six hours of a day's shape: mail's sends rise and fall, with a burst
	// of failures; reports build steadily; a webhook kind fails often.
	now := time.Now().UTC().Truncate(time.Minute)
	var rows []lockstep.HistoryRow
	var mailDone int64
	to := now.Truncate(5 * time.Minute) // the 5-minute step under way is not drawn
	for m := 6*60 + 10; m >= 1; m-- {
		at := now.Add(-time.Duration(m) * time.Minute)
		phase := float64(m) / 60
		send := int64(30 + 18*math.Sin(phase) + float64(m%7))
		failed := int64(m % 11 / 9)
		if m > 120 && m < 140 {
			failed += 6
		}
		rows = append(rows,
			lockstep.HistoryRow{Bucket: at, Queue: "mail", Kind: "send", Done: send, Failed: failed, Retried: failed, RunMillis: send * 120},
			lockstep.HistoryRow{Bucket: at, Queue: "reports", Kind: "build", Done: 4 + int64(m%3), RunMillis: (4 + int64(m%3)) * 2500},
			lockstep.HistoryRow{Bucket: at, Queue: "mail", Kind: "webhook", Done: 6, Failed: int64(m % 4 / 3), Retried: 2, RunMillis: 8 * 300},
		)
		if at.Before(to) && !at.Before(to.Add(-6*time.Hour)) {
			mailDone += send + 6
		}
	}
	require.NoError(t, drv.Executor().HistoryAdd(ctx, rows))

	url, stop := startServe(t, map[string]string{"LOCKSTEP_TOKEN": ""}, "--dsn", dsnURL)
	require.NoError(t, sess.Navigate(ctx, url+"/?range=6h"))
	// The axes' labels are SVG text, read by their textContent.
	svgText := func(testid, want string) string {
		return `return document.querySelector('[data-testid="` + testid + `"]')?.textContent === "` + want + `"`
	}
	require.NoError(t, waitScript(ctx, sess, svgText("history-rate-ylabel", "jobs/min")))
	require.NoError(t, waitScript(ctx, sess, svgText("history-failure-ylabel", "% failed")))
	require.NoError(t, waitScript(ctx, sess, svgText("history-rate-xlabel", "time (UTC)")))
	ticks, err := sess.ExecuteScript(ctx, `return [...document.querySelectorAll('[data-testid="history-rate-xtick"]')].map(e => e.textContent).join(' ')`)
	require.NoError(t, err)
	require.Regexp(t, `\d\d:00`, string(ticks), "hourly UTC ticks")

	// The mail queue, chosen from its list: htmx redraws the section.
	_, err = sess.ExecuteScript(ctx, `const s = document.querySelector('[data-testid="history-queue"]');
s.value = "mail"; s.dispatchEvent(new Event('change', {bubbles: true}));`)
	require.NoError(t, err)
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="history-done"]`, lockstepNum(mailDone)))
	_, err = sess.ExecuteScript(ctx, `document.querySelector('h2 + #history, #history').scrollIntoView()`)
	require.NoError(t, err)

	dir := os.Getenv("LOCKSTEP_TEST_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, sess.Screenshot(ctx, filepath.Join(dir, "history.png")))

	require.NoError(t, sess.Navigate(ctx, url+"/kinds"))
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="kind-send"]`, "send"))
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="kind-build"]`, "2.5s"))
	require.NoError(t, sess.Screenshot(ctx, filepath.Join(dir, "kinds.png")))
	t.Logf("screenshots: %s", dir)

	// The Kinds table reloads itself (every 10 s, the rollup's flush
	// interval): a kind that finishes its first job appears, and the page
	// was not reloaded (the mark set on its window is still there).
	_, err = sess.ExecuteScript(ctx, `window.lockstepMark = "before"`)
	require.NoError(t, err)
	require.NoError(t, drv.Executor().HistoryAdd(ctx, []lockstep.HistoryRow{
		{Bucket: now.Add(-time.Minute), Queue: "mail", Kind: "digest", Done: 1234, RunMillis: 1234 * 40},
	}))
	refreshed, cancelRefresh := context.WithTimeout(ctx, 30*time.Second)
	defer cancelRefresh()
	require.NoError(t, sess.WaitForText(refreshed, `[data-testid="kind-digest"]`, "1,234"))
	mark, err := sess.ExecuteScript(ctx, `return window.lockstepMark`)
	require.NoError(t, err)
	require.Equal(t, `"before"`, string(mark), "the table is swapped in, the page is not reloaded")
	require.Equal(t, 0, stop())
}

// lockstepNum is n as the dashboard prints counts (thousands with commas).
func lockstepNum(n int64) string {
	s := ""
	for n >= 1000 {
		s = "," + pad3(n%1000) + s
		n /= 1000
	}
	return itoa(n) + s
}

func pad3(n int64) string {
	d := itoa(n)
	for len(d) < 3 {
		d = "0" + d
	}
	return d
}
