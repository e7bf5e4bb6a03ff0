package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/clitest"
)

// TestCLIServeAndToolsThroughBinary: the commands the other CLI tests do
// not run through the built binary — serve, migrate status/print, demo's
// neighbours in lab and deadlock — on each database.
func TestCLIServeAndToolsThroughBinary(t *testing.T) {
	forEachDialect(t, func(t *testing.T, l *lockstepCLI) {
		require.Regexp(t, `(?m)^0002\s+queue_status\s+applied`, l.OK("migrate", "status"))
		require.Contains(t, l.OK("migrate", "print", "--dialect", "postgres"), "CREATE INDEX lockstep_jobs_queue_status")
		require.Contains(t, l.OK("lab", "catalog", "--dialect", "sqlite"), "`queue.count`")
		id := l.enqueue("exec", `{"n":1}`, "--new-run", "shown")

		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := l.Command(ctx, "serve", "--addr", "127.0.0.1:0")
		cmd.Env = append(cmd.Env, "LOCKSTEP_TOKEN=")
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		stderr := &syncBuffer{}
		cmd.Stderr = stderr
		require.NoError(t, cmd.Start())
		line, err := bufio.NewReader(stdout).ReadString('\n')
		require.NoError(t, err, "serve printed no address; stderr: %s", stderr.String())
		url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
		require.True(t, ok, line)

		get := func(path string) string {
			resp, err := http.Get(url + path)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, b)
			return string(b)
		}
		require.Equal(t, "ok\n", get("/healthz"))
		require.Contains(t, get("/runs"), "shown")
		require.Contains(t, get("/jobs/"+itoa(id)), `&#34;n&#34;: 1`)
		// The sampler reads queue depth when serve starts, in the
		// background: wait for its first sample.
		require.Eventually(t, func() bool {
			return strings.Contains(get("/metrics"), `lockstep_queue_jobs{queue="default",status="PENDING"} 1`)
		}, time.Minute, 50*time.Millisecond)

		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		require.NoError(t, cmd.Wait(), "serve exits 0 on SIGTERM; stderr: %s", stderr.String())

		// migrate down and up again, one migration at a time.
		require.Contains(t, l.OK("migrate", "down"), "schema is at version")
		require.Contains(t, l.OK("migrate", "up"), "schema is at version")
	})
}

// TestCLIDatabaseFreeCommandsThroughBinary: demo (its own SQLite file,
// whatever --dsn says) and deadlock decode, through the built binary.
func TestCLIDatabaseFreeCommandsThroughBinary(t *testing.T) {
	l := &lockstepCLI{&clitest.CLI{T: t, Bin: clitest.Binary(t), DSN: "sqlite:" + filepath.Join(t.TempDir(), "unused.db")}}
	out := l.OK("deadlock", "decode", deadlockTestdata("claim_cancel_mysql84.txt"))
	require.Contains(t, out, "Pattern: opposite-index-order on lab.attempt (idx_status vs PRIMARY)")
	var rep struct {
		Runs []json.RawMessage `json:"runs"`
	}
	l.json(&rep, "demo")
	require.Len(t, rep.Runs, 3, "the demo creates three runs")
}

// TestCLIWorkMetrics: a worker process serves its own /metrics (claims,
// finishes and run times are seen only where workers run), behind the
// token when one is set, and refuses a non-loopback address without one.
func TestCLIWorkMetrics(t *testing.T) {
	l := &lockstepCLI{&clitest.CLI{T: t, Bin: clitest.Binary(t), DSN: "sqlite:" + filepath.Join(t.TempDir(), "q.db")}}
	l.OK("migrate", "up")
	require.Equal(t, "lockstep: refusing to serve metrics on 0.0.0.0:0 without a token: set $LOCKSTEP_TOKEN, or listen on a loopback address such as 127.0.0.1:9090",
		l.Fail("work", "--kind", "exec", "--command", "true", "--metrics-addr", "0.0.0.0:0"))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const token = "0123456789abcdef-metrics"
	cmd := l.Command(ctx, "work", "--kind", "exec", "--command", "cat >/dev/null", "--poll", "50ms",
		"--metrics-addr", "127.0.0.1:0", "--log-format", "json")
	cmd.Env = append(cmd.Env, "LOCKSTEP_TOKEN="+token)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(stderr)
	var url string
	for url == "" && lines.Scan() {
		var rec struct{ Msg, URL string }
		if json.Unmarshal(lines.Bytes(), &rec) == nil && rec.Msg == "serving metrics" {
			url = rec.URL
		}
	}
	require.NotEmpty(t, url, "work logged no metrics address")
	go func() { _, _ = io.Copy(io.Discard, stderr) }()

	id := l.enqueue("exec", `{"n":1}`)
	l.waitStatus(id, lockstep.StatusDone)

	get := func(auth string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, _ := get("")
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = get("Bearer wrong")
	require.Equal(t, http.StatusUnauthorized, code)
	code, body := get("bearer " + token)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `lockstep_jobs_finished_total{kind="exec",queue="default",status="DONE"} 1`)
	require.Contains(t, body, `lockstep_claim_duration_seconds_count{queue="default"}`)
	require.Contains(t, body, `lockstep_job_wait_seconds_count{kind="exec",queue="default"} 1`)
	require.NotContains(t, body, token)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait())
}
