//go:build linux

package proc_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/proc"
)

func TestOwnedTempDirNamesItsOwner(t *testing.T) {
	parent := t.TempDir()
	for _, kind := range []string{"", "mysql"} {
		dir, err := proc.OwnedTempDir(parent, "lockstep-x-", kind)
		require.NoError(t, err)
		require.Equal(t, parent, filepath.Dir(dir))
		name := filepath.Base(dir)
		want := "lockstep-x-" + strconv.Itoa(os.Getpid()) + "-"
		if kind != "" {
			want += kind + "-"
		}
		require.True(t, strings.HasPrefix(name, want), name)
		require.Equal(t, os.Getpid(), proc.OwnerPID(name, "lockstep-x-"))
	}
}

func TestOwnerPID(t *testing.T) {
	for name, want := range map[string]int{
		"lockstep-x-123-abc":       123,
		"lockstep-x-123-mysql-abc": 123,
		"lockstep-x-123":           0, // OwnedTempDir always puts a "-" after the pid
		"lockstep-x--abc":          0,
		"lockstep-x-0-abc":         0,
		"lockstep-x-abc-1":         0,
		"lockstep-y-123-abc":       0,
		"other":                    0,
	} {
		require.Equal(t, want, proc.OwnerPID(name, "lockstep-x-"), name)
	}
}

func TestOwnerGone(t *testing.T) {
	require.True(t, proc.OwnerGone(deadPID(t)))
	require.False(t, proc.OwnerGone(os.Getpid()), "this process owns what it made")
	require.False(t, proc.OwnerGone(os.Getppid()))
	require.False(t, proc.OwnerGone(0))
	require.False(t, proc.OwnerGone(-1))
}

func TestRemoveStaleDirs(t *testing.T) {
	parent := t.TempDir()
	mk := func(name string) string {
		dir := filepath.Join(parent, name)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "data"), 0o755))
		return dir
	}
	stale := mk("lockstep-x-" + strconv.Itoa(deadPID(t)) + "-mysql-1")
	mine := mk("lockstep-x-" + strconv.Itoa(os.Getpid()) + "-mysql-2")
	live := mk("lockstep-x-" + strconv.Itoa(os.Getppid()) + "-3")
	unrelated := mk("lockstep-y-" + strconv.Itoa(deadPID(t)) + "-4")

	proc.RemoveStaleDirs(parent, "lockstep-x-")
	require.NoDirExists(t, stale)
	for _, dir := range []string{mine, live, unrelated} {
		require.DirExists(t, dir)
	}
}

func TestKillOrphanGroups(t *testing.T) {
	// Each shell carries its owner in its command line ($0); the sleep it
	// waits for is in its group.
	const marker = "lockstep-proc-test-"
	script := `sleep 1000 & echo $!; wait`
	orphan := startShell(t, script, marker+strconv.Itoa(deadPID(t))+"-orphan")
	orphanChild := orphan.readPID(t)
	owned := startShell(t, script, marker+strconv.Itoa(os.Getppid())+"-owned")
	owned.readPID(t)
	for _, c := range []*child{orphan, owned} {
		require.Equal(t, c.Pid(), mustStat(t, c.Pid()).pgrp, "a group the sweep can kill without hitting the test")
	}

	proc.KillOrphanGroups(func(cmdline []byte) int {
		for _, arg := range strings.Split(string(cmdline), "\x00") {
			if strings.HasPrefix(arg, marker) {
				return proc.OwnerPID(arg, marker)
			}
		}
		return 0
	})
	require.Equal(t, syscall.SIGKILL, exitSignal(t, orphan.waitErr(t)))
	orphan.waitTreeExited(t, orphanChild)

	// Had the sweep sent it SIGKILL, that would be how it ended.
	owned.Stop(syscall.SIGTERM, patience)
	require.Equal(t, syscall.SIGTERM, exitSignal(t, owned.Wait()))
}
