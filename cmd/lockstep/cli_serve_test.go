package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCLIServeAndToolsThroughBinary: the commands the other CLI tests do
// not run through the built binary — serve, migrate status/print, demo's
// neighbours in lab and deadlock — on each database.
func TestCLIServeAndToolsThroughBinary(t *testing.T) {
	forEachDialect(t, func(t *testing.T, l *lockstepCLI) {
		require.Regexp(t, `(?m)^0002\s+queue_status\s+applied`, l.ok("migrate", "status"))
		require.Contains(t, l.ok("migrate", "print", "--dialect", "postgres"), "CREATE INDEX lockstep_jobs_queue_status")
		require.Contains(t, l.ok("lab", "catalog", "--dialect", "sqlite"), "`queue.count`")
		id := l.enqueue("exec", `{"n":1}`, "--new-run", "shown")

		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := l.command(ctx, "serve", "--addr", "127.0.0.1:0")
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
	})
}
