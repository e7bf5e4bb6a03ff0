package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
)

// TestRetentionFlags: the flags' values reach the client's config, 0 means
// at once (not the library's default), and a negative keeps jobs.
func TestRetentionFlags(t *testing.T) {
	cmd := newWorkCmd(&app{Env: &clienv.Env{}})
	require.NoError(t, cmd.Flags().Parse([]string{"--retain-done", "0", "--retain-failed", "-1s", "--no-retention"}))
	o := retentionOptions{}
	o.done, _ = cmd.Flags().GetDuration("retain-done")
	o.cancelled, _ = cmd.Flags().GetDuration("retain-cancelled")
	o.failed, _ = cmd.Flags().GetDuration("retain-failed")
	o.off, _ = cmd.Flags().GetBool("no-retention")
	var cfg lockstep.Config
	o.apply(&cfg)
	require.Equal(t, time.Nanosecond, cfg.RetainDone)
	require.Equal(t, 24*time.Hour, cfg.RetainCancelled, "the default")
	require.Equal(t, -time.Second, cfg.RetainFailed)
	require.True(t, cfg.DisableRetention)

	serve := newServeCmd(&app{Env: &clienv.Env{}})
	for _, name := range []string{"retain-done", "retain-cancelled", "retain-failed", "no-retention"} {
		require.NotNil(t, serve.Flags().Lookup(name), "serve --%s", name)
	}
}
