package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/browser"
)

// TestServeBrowserRunGraph: a workflow created with `runs create --spec`,
// one of its jobs cancelled with `cancel job`, drawn by `lockstep serve`
// in headless Chromium: every node is laid out on screen (none collapsed
// or overlapping), coloured by its status's colour, and is a link to its
// job. The screenshot stays in $LOCKSTEP_TEST_SCREENSHOTS when set.
func TestServeBrowserRunGraph(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sess, err := browser.Start(ctx, browser.Options{TempDir: t.TempDir()})
	require.NoError(t, err, "the browser test needs Debian's chromium and chromium-driver (make deps installs them)")
	t.Cleanup(func() { _ = sess.Close() })

	dir := t.TempDir()
	dsnURL := "sqlite:" + filepath.Join(dir, "q.db")
	code, _, errOut := runCLI(t, "--dsn", dsnURL, "migrate", "up")
	require.Equal(t, 0, code, errOut)
	spec := filepath.Join(dir, "nightly.json")
	require.NoError(t, os.WriteFile(spec, []byte(specExample), 0o600))
	code, out, errOut := runCLI(t, "--dsn", dsnURL, "runs", "create", "--spec", spec, "--json")
	require.Equal(t, 0, code, errOut)
	var created createRunOut
	require.NoError(t, json.Unmarshal([]byte(out), &created))
	byKey := map[string]int64{}
	for _, j := range created.Jobs {
		byKey[j.Key] = j.ID
	}
	code, _, errOut = runCLI(t, "--dsn", dsnURL, "cancel", "job", itoa(byKey["load-b"]))
	require.Equal(t, 0, code, errOut)

	url, stop := startServe(t, map[string]string{"LOCKSTEP_TOKEN": ""}, "--dsn", dsnURL)
	require.NoError(t, sess.Navigate(ctx, fmt.Sprintf("%s/runs/%d", url, created.Run.ID)))
	require.NoError(t, sess.WaitForText(ctx, "#run-graph-title", "Workflow"))

	// Each node's box on screen and its fill, as the browser computed them.
	raw, err := sess.ExecuteScript(ctx, `return Array.from(document.querySelectorAll('[data-testid^="node-"]')).map(function (a) {
  var r = a.querySelector("rect"), b = r.getBoundingClientRect();
  return {id: a.getAttribute("data-testid"), href: a.getAttribute("href"), fill: getComputedStyle(r).fill,
          x: b.x, y: b.y, w: b.width, h: b.height, text: a.textContent.replace(/\s+/g, " ").trim()};
});`)
	require.NoError(t, err)
	var nodes []struct {
		ID, Href, Fill, Text string
		X, Y, W, H           float64
	}
	require.NoError(t, json.Unmarshal(raw, &nodes))
	require.Len(t, nodes, 6, "four jobs and two callbacks")
	fills := map[string]string{}
	for i, n := range nodes {
		require.Positive(t, n.W, n.ID)
		require.Positive(t, n.H, n.ID)
		require.Equal(t, "/jobs/"+strings.TrimPrefix(n.ID, "node-"), n.Href)
		for _, m := range nodes[:i] {
			overlap := n.X < m.X+m.W && m.X < n.X+n.W && n.Y < m.Y+m.H && m.Y < n.Y+n.H
			require.False(t, overlap, "%s overlaps %s", n.ID, m.ID)
		}
		fills[n.ID] = n.Fill
	}
	node := func(key string) string { return "node-" + itoa(byKey[key]) }
	require.Equal(t, "rgb(91, 141, 239)", fills[node("extract")], "PENDING is the dashboard's pending blue")
	require.Equal(t, "rgb(126, 87, 194)", fills[node("load-a")], "WAITING")
	require.Equal(t, "rgb(158, 158, 158)", fills[node("load-b")], "CANCELLED")
	require.Equal(t, "rgb(126, 87, 194)", fills[node("report")], "report still waits for load-a")

	dir = os.Getenv("LOCKSTEP_TEST_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	shot := filepath.Join(dir, "run-graph.png")
	require.NoError(t, sess.Screenshot(ctx, shot))
	info, err := os.Stat(shot)
	require.NoError(t, err)
	require.Positive(t, info.Size())
	t.Logf("screenshot: %s", shot)

	// A node is a link: clicking it opens the job.
	link, err := sess.Find(ctx, `[data-testid="`+node("report")+`"]`)
	require.NoError(t, err)
	require.NoError(t, link.Click(ctx))
	require.NoError(t, sess.WaitForText(ctx, "h1", "Job "+itoa(byKey["report"])))
	require.Equal(t, 0, stop())
}
