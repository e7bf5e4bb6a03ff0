package cli

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
)

// TestServeBrowserQueueSettings: in headless Chromium, the queues page
// pauses and resumes a queue and sets its max workers without a page
// reload, and a value being typed into the max workers field survives the
// table's 2-second refresh (dashboard.js holds the refresh while the field
// has focus).
func TestServeBrowserQueueSettings(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sess, dsnURL, client := browserOnSQLite(ctx, t)
	var err error
	_, err = client.Insert(ctx, lockstep.RawArgs{KindName: "send", JSON: []byte(`{}`)}, &lockstep.InsertOpts{Queue: "mail"})
	require.NoError(t, err)
	settings := func() lockstep.QueueSettings {
		all, err := client.ListQueueSettings(ctx)
		require.NoError(t, err)
		for _, s := range all {
			if s.Queue == "mail" {
				return s
			}
		}
		return lockstep.QueueSettings{}
	}

	url, stop := startServe(t, map[string]string{"LOCKSTEP_TOKEN": ""}, "--dsn", dsnURL)
	require.NoError(t, sess.Navigate(ctx, url+"/"))
	state := `[data-testid="queue-mail-state"]`
	require.NoError(t, sess.WaitForText(ctx, state, "active"))
	require.NoError(t, waitScript(ctx, sess, "return typeof htmx === 'object'"))
	_, err = sess.ExecuteScript(ctx, `window.lockstepNoReload = true; window.lockstepPolls = 0; window.lockstepSwaps = 0;
document.addEventListener("htmx:beforeRequest", function (e) { if (e.detail.elt.id === "queues") window.lockstepPolls++; });
document.addEventListener("htmx:afterSwap", function (e) { if (e.detail.elt.id === "queues") window.lockstepSwaps++; });`)
	require.NoError(t, err)
	click := func(testid string) {
		t.Helper()
		el, err := sess.Find(ctx, fmt.Sprintf(`[data-testid=%q]`, testid))
		require.NoError(t, err)
		require.NoError(t, el.Click(ctx))
	}

	click("queue-mail-pause")
	require.NoError(t, sess.WaitForText(ctx, state, "paused"))
	require.False(t, settings().Paused.IsZero())

	// Typing: the refreshes that come meanwhile leave the field alone.
	// It starts right after one ended, so that none is in flight.
	_, err = sess.ExecuteScript(ctx, "window.lockstepSwaps = 0")
	require.NoError(t, err)
	require.NoError(t, waitScript(ctx, sess, "return window.lockstepSwaps > 0"))
	input, err := sess.Find(ctx, `[data-testid="queue-mail-max-workers-input"]`)
	require.NoError(t, err)
	require.NoError(t, input.SendKeys(ctx, "7"))
	_, err = sess.ExecuteScript(ctx, "window.lockstepPolls = 0")
	require.NoError(t, err)
	require.NoError(t, waitScript(ctx, sess, "return window.lockstepPolls >= 2"))
	value, err := sess.ExecuteScript(ctx, `return document.querySelector('[data-testid="queue-mail-max-workers-input"]').value`)
	require.NoError(t, err)
	require.JSONEq(t, `"7"`, string(value))
	click("queue-mail-max-workers-set")
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="queue-mail-max-workers"]`, "7"))
	require.Equal(t, 7, settings().MaxWorkers)

	click("queue-mail-resume")
	require.NoError(t, sess.WaitForText(ctx, state, "active"))
	require.True(t, settings().Paused.IsZero())
	still, err := sess.ExecuteScript(ctx, "return window.lockstepNoReload === true")
	require.NoError(t, err)
	require.JSONEq(t, "true", string(still), "no page reload")
	require.Equal(t, 0, stop())
}
