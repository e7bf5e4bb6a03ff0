package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/clitest"
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
		{"MariaDB", func(t *testing.T) string { return clitest.MySQLURL(t, testdb.MySQL(t)) }},
		{"OracleMySQL", func(t *testing.T) string { return clitest.MySQLURL(t, testdb.OracleMySQL(t)) }},
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
	// The worker counts the finish after its commit, so the page can show
	// DONE a moment before /metrics counts it.
	require.Eventually(t, func() bool {
		code, body := httpGet(t, url+"/metrics", bearer)
		return code == http.StatusOK && strings.Contains(body, `lockstep_jobs_finished_total{kind="exec",queue="default",status="DONE"} 1`)
	}, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, 0, stop())
}

// blockedJobDir makes a fifo and an exec command that writes "started"
// to it, then runs until killed: reading the fifo returns once the job is
// RUNNING, with no polling.
func blockedJobDir(t *testing.T) (fifo, command string) {
	t.Helper()
	fifo = filepath.Join(t.TempDir(), "started")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	return fifo, fmt.Sprintf("cat >/dev/null; echo started > '%s'; exec sleep 300", fifo)
}

// waitStarted blocks until the job's command opened and wrote the fifo.
func waitStarted(t *testing.T, fifo string) {
	t.Helper()
	read := make(chan []byte, 1)
	go func() {
		b, _ := os.ReadFile(fifo)
		read <- b
	}()
	select {
	case b := <-read:
		require.Equal(t, "started\n", string(b))
	case <-time.After(60 * time.Second):
		t.Fatal("the job's command did not start")
	}
}

// blockRequest sends a POST whose body never comes and returns once its
// handler is reading the body (the server answered "100 Continue"), so
// the request is in flight when serve is stopped.
func blockRequest(t *testing.T, base string) net.Conn {
	t.Helper()
	host := strings.TrimPrefix(base, "http://")
	conn, err := net.Dial("tcp", host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = fmt.Fprintf(conn, "POST /login HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n", host)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(60*time.Second)))
	line, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 100 Continue\r\n", line)
	return conn
}

// TestServeStopSharesOneDeadline: stopped while a job runs and a request
// is in flight, serve waits --stop-timeout once for both (not once for
// the requests, then again for the jobs), cancels the job, which goes
// back to PENDING, and exits 1, as `lockstep work` does.
func TestServeStopSharesOneDeadline(t *testing.T) {
	dsnURL := "sqlite:" + filepath.Join(t.TempDir(), "q.db")
	code, _, errOut := runCLI(t, "--dsn", dsnURL, "migrate", "up")
	require.Equal(t, 0, code, errOut)
	code, out, errOut := runCLI(t, "--dsn", dsnURL, "enqueue", "exec", `{}`)
	require.Equal(t, 0, code, errOut)
	id := strings.TrimSpace(out)
	fifo, command := blockedJobDir(t)

	const stopTimeout = 3 * time.Second
	url, stop, stderr := startServeLog(t, map[string]string{"LOCKSTEP_TOKEN": ""}, "--dsn", dsnURL,
		"--kind", "exec", "--command", command, "--poll", "50ms", "--stop-timeout", stopTimeout.String())
	waitStarted(t, fifo)
	conn := blockRequest(t, url)

	start := time.Now()
	code = stop()
	elapsed := time.Since(start)
	require.Equal(t, 1, code, "running jobs were cancelled: exit status 1; stderr:\n%s", stderr)
	require.True(t, strings.HasSuffix(stderr.String(), "lockstep: running jobs did not finish within --stop-timeout 3s: they were cancelled and will be retried\n"), stderr.String())
	require.Contains(t, stderr.String(), `msg="requests in flight did not finish: their connections were closed" reason="--stop-timeout 3s passed"`)
	require.GreaterOrEqual(t, elapsed, stopTimeout, "serve waited for the job and the request")
	require.Less(t, elapsed, stopTimeout+stopTimeout*2/3, "one deadline for requests and jobs, not one after the other")

	// The request's connection was closed at the deadline.
	_, err := io.ReadAll(conn)
	require.NoError(t, err)

	var j jobOut
	code, out, errOut = runCLI(t, "--dsn", dsnURL, "jobs", "show", id, "--json")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &j), out)
	require.Equal(t, lockstep.StatusPending, j.Status, "the cancelled job is retried later")
}

// TestServeSecondSignal: a second SIGTERM stops serve at once, cancelling
// the running job rather than waiting --stop-timeout, with exit status 1.
func TestServeSecondSignal(t *testing.T) {
	l := &lockstepCLI{&clitest.CLI{T: t, Bin: clitest.Binary(t), DSN: "sqlite:" + filepath.Join(t.TempDir(), "q.db")}}
	require.Contains(t, l.OK("migrate", "up"), "schema is at version")
	id := l.enqueue("exec", `{}`)
	fifo, command := blockedJobDir(t)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := l.Command(ctx, "serve", "--addr", "127.0.0.1:0", "--kind", "exec", "--command", command,
		"--poll", "50ms", "--stop-timeout", "10m")
	cmd.Env = append(cmd.Env, "LOCKSTEP_TOKEN=")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	// The log, line by line; shuttingDown is closed once serve watches
	// for the second signal.
	var logMu sync.Mutex
	var log strings.Builder
	shuttingDown := make(chan struct{})
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		seen := false
		for sc.Scan() {
			logMu.Lock()
			log.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if !seen && strings.Contains(sc.Text(), "shutting down") {
				seen = true
				close(shuttingDown)
			}
		}
	}()
	logs := func() string {
		logMu.Lock()
		defer logMu.Unlock()
		return log.String()
	}

	waitStarted(t, fifo)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-shuttingDown:
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not start shutting down:\n%s", logs())
	}
	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	<-logDone
	err = cmd.Wait()
	require.Less(t, time.Since(start), time.Minute, "not --stop-timeout")
	require.Error(t, err, logs())
	require.Equal(t, 1, cmd.ProcessState.ExitCode(), logs())
	require.Contains(t, logs(), "second signal: cancelling running jobs")
	require.Contains(t, logs(), "lockstep: stopped by a second signal: running jobs were cancelled and will be retried\n")
	require.Equal(t, lockstep.StatusPending, l.job(id).Status, "the cancelled job is retried later")
}
