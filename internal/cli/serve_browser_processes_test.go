package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/dashboard"
	"github.com/lockstep-queue/lockstep/internal/dsn"
)

// TestServeBrowserProcesses: in headless Chromium, the processes page
// shows three live `lockstep work` processes and one killed with SIGKILL
// while it ran a job: once its heartbeat is older than the reap limit
// (3 s here), the page shows it DEAD, highlighted, with its RUNNING job
// to be reaped, and 3 live, 1 dead. The processes are real OS processes of
// the lockstep binary the test builds, on one SQLite file. The page's
// client does not reap (nor do the workers, whose limit is an hour), so
// the dead process's job stays RUNNING for the page to show. A screenshot
// is saved ($LOCKSTEP_TEST_SCREENSHOTS, else a temporary directory).
func TestServeBrowserProcesses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sess, dsnURL, client := browserOnSQLite(ctx, t)

	bin := filepath.Join(t.TempDir(), "lockstep")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/lockstep-queue/lockstep/cmd/lockstep")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	// The page's client: reap limit 3 s, and no reaper of its own.
	drv, err := dsn.Open(ctx, dsnURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	pageClient, err := lockstep.NewClient(drv, lockstep.Config{
		Logger: slog.New(slog.DiscardHandler), ReapAfter: 3 * time.Second, HeartbeatInterval: time.Second, DisableReaper: true,
	})
	require.NoError(t, err)
	dash, err := dashboard.New(dashboard.Config{Client: pageClient, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	srv := httptest.NewServer(dash)
	t.Cleanup(srv.Close)

	// Work for them: two jobs each for the live ones (two workers each),
	// one for the doomed.
	for i := range 6 {
		_, err := client.Insert(ctx, lockstep.RawArgs{KindName: "render", JSON: fmt.Appendf(nil, `{"page": %d}`, i)}, nil)
		require.NoError(t, err)
	}
	doomedJob, err := client.Insert(ctx, lockstep.RawArgs{KindName: "export", JSON: []byte(`{"report": "2026-11"}`)}, &lockstep.InsertOpts{Queue: "exports"})
	require.NoError(t, err)

	start := func(args ...string) *exec.Cmd {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--dsn", dsnURL, "work", "--heartbeat", "300ms", "--reap-after", "1h", "--poll", "200ms"}, args...)...)
		// Its own process group, so that a kill reaches the job's sleep too.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Env = append(os.Environ(), "LOCKSTEP_DSN=")
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		})
		return cmd
	}
	for range 3 {
		start("--queue", "default=2", "--exec", "render=sleep 600")
	}
	doomed := start("--queue", "exports=1", "--exec", "export=sleep 600")

	// Wait, on what the table holds, for four processes and the doomed
	// one's claim.
	var doomedID string
	require.Eventually(t, func() bool {
		ps, _, err := pageClient.Processes(ctx)
		if err != nil || len(ps) != 4 {
			return false
		}
		for _, p := range ps {
			if p.PID == doomed.Process.Pid && len(p.Running) == 1 && p.Running[0].ID == doomedJob.ID {
				doomedID = p.ID
			}
		}
		return doomedID != ""
	}, time.Minute, 100*time.Millisecond, "four registered processes, the doomed one running its job")
	j, err := client.Job(ctx, doomedJob.ID)
	require.NoError(t, err)
	require.Equal(t, doomedID, j.ClaimedBy)

	require.NoError(t, sess.Navigate(ctx, srv.URL+"/processes"))
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="processes-live"]`, "4"))

	// SIGKILL: no clean stop, its row stays and its heartbeat ages.
	require.NoError(t, syscall.Kill(-doomed.Process.Pid, syscall.SIGKILL))
	_, _ = doomed.Process.Wait()

	// The page refreshes itself every 5 s: wait for DEAD to appear.
	state := fmt.Sprintf(`[data-testid="process-%s-state"]`, doomedID)
	require.NoError(t, sess.WaitForText(ctx, state, "DEAD"))
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="processes-live"]`, "3"))
	require.NoError(t, sess.WaitForText(ctx, `[data-testid="processes-dead"]`, "1"))
	require.NoError(t, sess.WaitForText(ctx, fmt.Sprintf(`[data-testid="process-%s-reap"]`, doomedID), "To be reaped"))
	require.NoError(t, sess.WaitForText(ctx, fmt.Sprintf(`[data-testid="process-%s-reap"] [data-testid="job-%d"]`, doomedID, doomedJob.ID), "RUNNING"))
	src, err := sess.PageSource(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, strings.Count(src, `pstate-LIVE`), "three LIVE")
	require.Equal(t, 1, strings.Count(src, `pstate-DEAD`), "one DEAD")
	require.Contains(t, src, `class="process-dead"`)

	dir := os.Getenv("LOCKSTEP_TEST_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	shot := filepath.Join(dir, "processes.png")
	require.NoError(t, sess.Screenshot(ctx, shot))
	t.Logf("screenshot: %s", shot)

	// The CLI says the same.
	code, text, errOut := runCLI(t, "--dsn", dsnURL, "processes", "--reap-after", "3s")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, 3, strings.Count(text, " LIVE "), text)
	require.Equal(t, 1, strings.Count(text, " DEAD "), text)
	require.Contains(t, text, fmt.Sprintf("%s is DEAD: its RUNNING jobs are to be reaped: %d", doomedID, doomedJob.ID))
}
