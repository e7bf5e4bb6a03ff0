package cli

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
)

// TestServeBrowserQueueLimits: in headless Chromium, the queues table
// links to a queue's page, whose form sets the queue's limits without a
// page reload; the page's numbers, which reload every 2 seconds, then show
// the new limits, and a value being typed into the form survives those
// reloads (the form is outside what reloads). Removing the limits clears
// them.
func TestServeBrowserQueueLimits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sess, dsnURL, client := browserOnSQLite(ctx, t)
	var err error
	_, err = client.Insert(ctx, lockstep.RawArgs{KindName: "send", JSON: []byte(`{}`)}, &lockstep.InsertOpts{Queue: "mail", LimitKey: "acct-1"})
	require.NoError(t, err)
	limits := func() lockstep.QueueLimits {
		s, err := queueSettingsOf(ctx, client, "mail")
		require.NoError(t, err)
		return s.Limits
	}
	click := func(testid string) {
		t.Helper()
		el, err := sess.Find(ctx, fmt.Sprintf(`[data-testid=%q]`, testid))
		require.NoError(t, err)
		require.NoError(t, el.Click(ctx))
	}

	url, stop := startServe(t, map[string]string{"LOCKSTEP_TOKEN": ""}, "--dsn", dsnURL)
	require.NoError(t, sess.Navigate(ctx, url+"/"))
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="queue-mail-limits"]`, "none"))
	// Clicked by a script: the table reloads every 2 seconds, and an
	// element found before a reload is gone by the time it is clicked.
	_, err = sess.ExecuteScript(ctx, `document.querySelector('[data-testid="queue-mail-link"]').click()`)
	require.NoError(t, err)
	text := `[data-testid="queue-limits-text"]`
	require.NoError(t, sess.WaitForText(ctx, text, "none"))
	require.NoError(t, waitScript(ctx, sess, "return typeof htmx === 'object' && location.pathname === '/queue/mail'"))
	_, err = sess.ExecuteScript(ctx, `window.lockstepNoReload = true; window.lockstepPolls = 0;
document.addEventListener("htmx:beforeRequest", function (e) { if (e.detail.elt.id === "queue-stats") window.lockstepPolls++; });`)
	require.NoError(t, err)

	// Typing while the numbers reload: the field keeps what was typed.
	input, err := sess.Find(ctx, `[data-testid="limit-concurrency"]`)
	require.NoError(t, err)
	require.NoError(t, input.SendKeys(ctx, "4"))
	_, err = sess.ExecuteScript(ctx, "window.lockstepPolls = 0")
	require.NoError(t, err)
	require.NoError(t, waitScript(ctx, sess, "return window.lockstepPolls >= 2"))
	value, err := sess.ExecuteScript(ctx, `return document.querySelector('[data-testid="limit-concurrency"]').value`)
	require.NoError(t, err)
	require.JSONEq(t, `"4"`, string(value))
	_, err = sess.ExecuteScript(ctx, `document.querySelector('[data-testid="limit-sequence"]').value = "hold"`)
	require.NoError(t, err)
	click("limit-set")
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="queue-limits-note"]`, "Limits set"))
	require.NoError(t, sess.WaitForText(ctx, text, "concurrency 4, sequence hold"))
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="queue-usage"]`, "0 of 4"))
	require.Equal(t, lockstep.QueueLimits{Concurrency: 4, Sequence: lockstep.SequenceHold}, limits())

	click("limit-clear")
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="queue-limits-note"]`, "Limits removed"))
	require.NoError(t, sess.WaitForText(ctx, text, "none"))
	require.Equal(t, lockstep.QueueLimits{}, limits())
	still, err := sess.ExecuteScript(ctx, "return window.lockstepNoReload === true")
	require.NoError(t, err)
	require.JSONEq(t, "true", string(still), "no page reload")
	require.Equal(t, 0, stop())
}
