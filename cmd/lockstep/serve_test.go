package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/dsn"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// TestServeRefusesNonLoopbackWithoutToken: listening beyond loopback
// without a token is refused before the database is even opened.
func TestServeRefusesNonLoopbackWithoutToken(t *testing.T) {
	t.Setenv("LOCKSTEP_TOKEN", "")
	path := filepath.Join(t.TempDir(), "q.db")
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:8080"} {
		code, out, errOut := runCLI(t, "--dsn", "sqlite:"+path, "serve", "--addr", addr)
		require.Equal(t, 1, code, addr)
		require.Empty(t, out)
		require.Equal(t, "lockstep: refusing to serve on "+addr+" without a token: set $LOCKSTEP_TOKEN (or --token), or listen on a loopback address such as 127.0.0.1:8080\n", errOut)
	}
	require.NoFileExists(t, path)

	code, _, errOut := runCLI(t, "--dsn", "sqlite:"+path, "serve", "--queue", "media")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "--queue is about workers: add --kind")
	code, _, errOut = runCLI(t, "--dsn", "sqlite:"+path, "serve", "--kind", "exec")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "--kind exec needs --command")
}

// syncBuffer collects a running command's output and reports the
// "listening on URL" line once it is written.
type syncBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	url   chan string
	found bool
}

var reListening = regexp.MustCompile(`(?m)^listening on (http://\S+)$`)

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if b.url != nil && !b.found {
		if m := reListening.FindStringSubmatch(b.buf.String()); m != nil {
			b.found = true
			b.url <- m[1]
		}
	}
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startServe runs `lockstep serve` in-process on 127.0.0.1:0 and returns
// its URL and a stop function (the signal) that returns its exit code.
func startServe(t *testing.T, env map[string]string, args ...string) (string, func() int) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stdout := &syncBuffer{url: make(chan string, 1)}
	stderr := &syncBuffer{}
	exited := make(chan int, 1)
	go func() { exited <- run(ctx, append(args, "serve", "--addr", "127.0.0.1:0"), stdout, stderr) }()
	stopped := false
	stop := func() int {
		if stopped {
			return 0
		}
		stopped = true
		cancel()
		select {
		case code := <-exited:
			return code
		case <-time.After(60 * time.Second):
			t.Fatalf("serve did not stop; stderr:\n%s", stderr)
			return -1
		}
	}
	t.Cleanup(func() { stop() })
	select {
	case u := <-stdout.url:
		require.Equal(t, "listening on "+u+"\n", stdout.String(), "one line on stdout")
		return u, stop
	case code := <-exited:
		stopped = true
		t.Fatalf("serve exited with %d before listening; stderr:\n%s", code, stderr)
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not listen; stderr:\n%s", stderr)
	}
	return "", stop
}

func httpGet(t *testing.T, url string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestServeDashboard: serve on each database answers /healthz, the pages
// and /metrics, and stops cleanly when signalled.
func TestServeDashboard(t *testing.T) {
	for _, d := range []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"SQLite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "q.db") }},
		{"MariaDB", func(t *testing.T) string { return mysqlURL(t, testdb.MySQL(t)) }},
		{"PostgreSQL", func(t *testing.T) string { return testdb.Postgres(t) }},
	} {
		t.Run(d.name, func(t *testing.T) {
			// Not parallel: startServe sets the environment.
			dsnURL := d.dsn(t)
			code, _, errOut := runCLI(t, "--dsn", dsnURL, "migrate", "up")
			require.Equal(t, 0, code, errOut)
			code, _, errOut = runCLI(t, "--dsn", dsnURL, "enqueue", "exec", "--queue", "mail", `{"to": "ada"}`)
			require.Equal(t, 0, code, errOut)

			url, stop := startServe(t, map[string]string{"LOCKSTEP_TOKEN": ""}, "--dsn", dsnURL)
			code, body := httpGet(t, url+"/healthz", nil)
			require.Equal(t, http.StatusOK, code)
			require.Equal(t, "ok\n", body)
			code, body = httpGet(t, url+"/", nil)
			require.Equal(t, http.StatusOK, code, body)
			require.Contains(t, body, `data-testid="queue-mail-pending">1<`)
			for _, p := range []string{"/runs", "/jobs", "/jobs/1", "/locks", "/static/htmx.min.js"} {
				code, body = httpGet(t, url+p, nil)
				require.Equal(t, http.StatusOK, code, "%s: %s", p, body)
			}
			code, body = httpGet(t, url+"/metrics", nil)
			require.Equal(t, http.StatusOK, code)
			require.Contains(t, body, "go_goroutines")
			require.Contains(t, body, `go_sql_open_connections{db_name="lockstep"}`)
			parsed, err := dsn.Parse(dsnURL)
			require.NoError(t, err)
			for _, p := range []string{"/", "/locks", "/metrics"} {
				_, body = httpGet(t, url+p, nil)
				require.NotContains(t, body, parsed.DSN, "never the DSN")
			}
			require.Equal(t, 0, stop())
		})
	}
}

// TestServeTokenAndWorkers: with $LOCKSTEP_TOKEN, pages and /metrics need
// it and /healthz does not; with --kind the process runs workers, and the
// dashboard shows their results.
func TestServeTokenAndWorkers(t *testing.T) {
	dsnURL := "sqlite:" + filepath.Join(t.TempDir(), "q.db")
	code, _, errOut := runCLI(t, "--dsn", dsnURL, "migrate", "up")
	require.Equal(t, 0, code, errOut)
	code, out, errOut := runCLI(t, "--dsn", dsnURL, "enqueue", "exec", `{"n": 1}`)
	require.Equal(t, 0, code, errOut)
	id, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	require.NoError(t, err, out)

	const token = "0123456789abcdef-token"
	url, stop := startServe(t, map[string]string{"LOCKSTEP_TOKEN": token},
		"--dsn", dsnURL, "--kind", "exec", "--command", "cat >/dev/null", "--poll", "50ms")
	bearer := map[string]string{"Authorization": "Bearer " + token}

	code, _ = httpGet(t, url+"/healthz", nil)
	require.Equal(t, http.StatusOK, code)
	for _, p := range []string{"/", "/runs", "/metrics"} {
		code, body := httpGet(t, url+p, nil)
		require.Equal(t, http.StatusUnauthorized, code, p)
		require.NotContains(t, body, token)
	}
	code, _ = httpGet(t, url+"/runs", map[string]string{"Authorization": "Bearer nope"})
	require.Equal(t, http.StatusUnauthorized, code)

	// The worker runs the job; the job page shows it DONE.
	jobURL := url + "/jobs/" + itoa(id)
	require.Eventually(t, func() bool {
		code, body := httpGet(t, jobURL, bearer)
		return code == http.StatusOK && strings.Contains(body, `data-testid="job-status"><span class="status st-done">`+string(lockstep.StatusDone))
	}, 30*time.Second, 50*time.Millisecond)
	code, body := httpGet(t, url+"/metrics", bearer)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `lockstep_jobs_finished_total{kind="exec",queue="default",status="DONE"} 1`)
	require.Equal(t, 0, stop())
}
