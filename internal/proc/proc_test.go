//go:build linux

package proc_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStartLeadsItsOwnGroup(t *testing.T) {
	c := start(t, exec.Command("/bin/sleep", "1000"))
	st := mustStat(t, c.Pid())
	require.Equal(t, c.Pid(), st.pgrp, "the child leads a group of its own")
	require.NotEqual(t, syscall.Getpgrp(), st.pgrp, "a signal to the test binary's group does not reach the child")
	require.False(t, c.HasExited())

	c.Stop(syscall.SIGTERM, patience)
	require.True(t, c.HasExited())
	require.Equal(t, syscall.SIGTERM, exitSignal(t, c.Wait()))
	c.Stop(syscall.SIGTERM, patience) // a no-op once it has exited
}

func TestStopReachesGrandchildren(t *testing.T) {
	c := startShell(t, `sleep 1000 & echo $!; wait`)
	grandchild := c.readPID(t)
	require.Equal(t, c.Pid(), mustStat(t, grandchild).pgrp)

	c.Stop(syscall.SIGTERM, patience)
	require.Equal(t, syscall.SIGTERM, exitSignal(t, c.Wait()))
	c.waitTreeExited(t, grandchild)
}

func TestStopEscalatesToSIGKILL(t *testing.T) {
	// An ignored signal stays ignored in what the shell starts.
	c := startShell(t, `trap "" TERM; sleep 1000 & echo $!; wait`)
	grandchild := c.readPID(t)

	c.Stop(syscall.SIGTERM, time.Millisecond)
	require.Equal(t, syscall.SIGKILL, exitSignal(t, c.Wait()))
	c.waitTreeExited(t, grandchild)
}

func TestShutdownReportsHowItEnded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	t.Run("clean", func(t *testing.T) {
		c := startHelper(t, "exit-on-term")
		c.readPID(t)
		require.NoError(t, c.Shutdown(ctx, syscall.SIGTERM))
	})
	t.Run("failed", func(t *testing.T) {
		c := start(t, exec.Command("/bin/sleep", "1000"))
		err := c.Shutdown(ctx, syscall.SIGTERM)
		require.EqualError(t, err, "it exited with signal: terminated after terminated")
	})
	t.Run("killed", func(t *testing.T) {
		c := startShell(t, `trap "" TERM; sleep 1000 & echo $!; wait`)
		grandchild := c.readPID(t)
		ctx, cancel := context.WithCancelCause(ctx)
		cancel(errors.New("the test's deadline"))
		err := c.Shutdown(ctx, syscall.SIGTERM)
		require.EqualError(t, err, "it did not stop after terminated before the test's deadline, so it was killed")
		require.Equal(t, syscall.SIGKILL, exitSignal(t, c.Wait()))
		c.waitTreeExited(t, grandchild)
	})
	t.Run("already exited", func(t *testing.T) {
		c := start(t, exec.Command("/bin/sh", "-c", "exit 3"))
		require.Error(t, c.waitErr(t))
		err := c.Shutdown(ctx, syscall.SIGTERM)
		require.EqualError(t, err, "it had already exited (exit status 3)")
	})
}

// PostgreSQL's backends call setsid, so a signal to the postmaster's group
// misses them; Kill finds them as the leader's children.
func TestKillReachesChildrenOutsideTheGroup(t *testing.T) {
	if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(syscall.Gettid()) + "/children"); err != nil {
		t.Skipf("no /proc/pid/task/tid/children (CONFIG_PROC_CHILDREN): %v", err)
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip(err)
	}
	// The inner shell prints its pid once setsid has made it a session
	// (and group) leader, then becomes sleep.
	c := startShell(t, `setsid sh -c 'echo $$; exec sleep 1000' & wait`)
	outsider := c.readPID(t)
	st := mustStat(t, outsider)
	require.Equal(t, c.Pid(), st.ppid, "a direct child of the leader")
	require.Equal(t, outsider, st.pgrp, "in a group of its own")

	c.Kill()
	require.Equal(t, syscall.SIGKILL, exitSignal(t, c.Wait()))
	c.waitTreeExited(t, outsider)
	c.Kill() // a no-op once it has exited
}

func TestSignalGroupReachesTheGroupAfterTheLeaderHasGone(t *testing.T) {
	// The leader exits at once; the sleep it started keeps the group alive.
	c := startShell(t, `sleep 1000 & echo $!`)
	grandchild := c.readPID(t)
	require.NoError(t, c.waitErr(t))
	require.False(t, gone(grandchild))

	require.NoError(t, c.SignalGroup(syscall.SIGKILL))
	c.waitTreeExited(t, grandchild)
}
