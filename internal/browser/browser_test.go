package browser_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/browser"
)

const indexPage = `<!doctype html>
<html><head><title>browser test</title></head><body>
<p id="greeting">waiting</p>
<button id="go">Go</button>
<button id="warn" onclick="alert('careful')">Warn</button>
<form method="post" action="/submit">
  <input id="name" name="name">
  <button id="save" type="submit">Save</button>
</form>
<ul><li>one</li><li>two</li><li>three</li></ul>
<script>
document.getElementById('go').addEventListener('click', function () {
  // Change the text after the click has returned, so that the test has to
  // wait for it rather than read it at once.
  setTimeout(function () {
    document.getElementById('greeting').textContent = 'clicked';
  }, 100);
});
</script>
</body></html>`

// site serves indexPage and records the names posted to /submit.
type site struct {
	mu     sync.Mutex
	posted []string
}

func (s *site) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, indexPage)
	})
	mux.HandleFunc("POST /submit", func(w http.ResponseWriter, r *http.Request) {
		name := r.PostFormValue("name")
		s.mu.Lock()
		s.posted = append(s.posted, name)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><p id="result">Saved %s</p>`, html.EscapeString(name))
	})
	return mux
}

func (s *site) postedNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.posted...)
}

// start serves a fresh site and opens a browser on it. A missing Chromium
// fails the test: end-to-end coverage that silently vanishes is worse than
// a red build that says `make deps`.
func start(t *testing.T) (context.Context, *browser.Session, *site, string) {
	t.Helper()
	st := &site{}
	srv := httptest.NewServer(st.handler())
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	b, err := browser.Start(ctx, browser.Options{TempDir: t.TempDir()})
	require.NoError(t, err)
	// Registered after srv.Close and TempDir's cleanup, so it runs first:
	// the browser must be gone before the server waits for its connections
	// and before its profile directory is removed.
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return ctx, b, st, srv.URL
}

func TestDrivePage(t *testing.T) {
	ctx, b, st, url := start(t)

	require.NoError(t, b.Navigate(ctx, url))
	greeting, err := b.Find(ctx, "#greeting")
	require.NoError(t, err)
	text, err := greeting.Text(ctx)
	require.NoError(t, err)
	require.Equal(t, "waiting", text)

	items, err := b.FindAll(ctx, "li")
	require.NoError(t, err)
	require.Len(t, items, 3)
	text, err = items[1].Text(ctx)
	require.NoError(t, err)
	require.Equal(t, "two", text)

	goButton, err := b.Find(ctx, "#go")
	require.NoError(t, err)
	require.NoError(t, goButton.Click(ctx))
	require.NoError(t, b.WaitForText(ctx, "#greeting", "clicked"))

	src, err := b.PageSource(ctx)
	require.NoError(t, err)
	require.Contains(t, src, `<p id="greeting">clicked</p>`)

	raw, err := b.ExecuteScript(ctx, "return [document.title, arguments[0].id, arguments[1]];", greeting, 42)
	require.NoError(t, err)
	var got []any
	require.NoError(t, json.Unmarshal(raw, &got))
	require.Equal(t, []any{"browser test", "greeting", float64(42)}, got)

	shot := filepath.Join(t.TempDir(), "page.png")
	require.NoError(t, b.Screenshot(ctx, shot))
	data, err := os.ReadFile(shot)
	require.NoError(t, err)
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	require.NoError(t, err, "screenshot is not a PNG")
	require.Positive(t, cfg.Width)
	require.Positive(t, cfg.Height)

	name, err := b.Find(ctx, "#name")
	require.NoError(t, err)
	require.NoError(t, name.SendKeys(ctx, "Ada & Bob"))
	save, err := b.Find(ctx, "#save")
	require.NoError(t, err)
	require.NoError(t, save.Click(ctx))
	require.NoError(t, b.WaitForText(ctx, "#result", "Saved Ada & Bob"))
	// The server recorded the post before it sent the page just seen.
	require.Equal(t, []string{"Ada & Bob"}, st.postedNames())
}

func TestAlert(t *testing.T) {
	ctx, b, _, url := start(t)

	require.NoError(t, b.Navigate(ctx, url))
	warn, err := b.Find(ctx, "#warn")
	require.NoError(t, err)
	require.NoError(t, warn.Click(ctx))
	msg, err := b.AlertText(ctx)
	require.NoError(t, err)
	require.Equal(t, "careful", msg)

	// An open alert blocks the page; waiting cannot help, so it must not.
	err = b.WaitForText(ctx, "#greeting", "waiting")
	var werr *browser.Error
	require.ErrorAs(t, err, &werr)
	require.Equal(t, "unexpected alert open", werr.Code)

	require.NoError(t, b.AcceptAlert(ctx))
	require.NoError(t, b.WaitForText(ctx, "#greeting", "waiting"))

	require.NoError(t, warn.Click(ctx))
	require.NoError(t, b.DismissAlert(ctx))
	_, err = b.AlertText(ctx)
	require.ErrorAs(t, err, &werr)
	require.Equal(t, "no such alert", werr.Code)
}

func TestErrors(t *testing.T) {
	ctx, b, _, url := start(t)
	require.NoError(t, b.Navigate(ctx, url))

	_, err := b.Find(ctx, "#missing")
	var werr *browser.Error
	require.ErrorAs(t, err, &werr)
	require.Equal(t, "no such element", werr.Code)
	require.ErrorContains(t, err, "browser: find #missing: no such element")

	els, err := b.FindAll(ctx, "#missing")
	require.NoError(t, err)
	require.Empty(t, els)

	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = b.WaitForText(short, "#greeting", "never")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, `last saw 1 matching element(s): "waiting"`)

	err = b.WaitForText(ctx, "p[", "x")
	require.ErrorContains(t, err, "invalid selector")

	_, err = b.ExecuteScript(ctx, "throw new Error('boom');")
	require.ErrorAs(t, err, &werr)
	require.Equal(t, "javascript error", werr.Code)
	require.ErrorContains(t, err, "boom")

	// After Close every command fails instead of reaching a stray browser.
	require.NoError(t, b.Close())
	require.NoError(t, b.Close())
	err = b.Navigate(ctx, url)
	require.Error(t, err)
	require.False(t, errors.Is(err, context.DeadlineExceeded))
}

func TestMissingBinary(t *testing.T) {
	_, err := browser.Start(t.Context(), browser.Options{
		ChromiumPath: filepath.Join(t.TempDir(), "no-such-chromium"),
		TempDir:      t.TempDir(),
	})
	require.ErrorContains(t, err, "chromium-driver")
	require.ErrorContains(t, err, "make deps")
}
