//go:build linux

// The tests run real processes and read their state in /proc, so they run
// on Linux only. They wait for what they can observe (a pipe's end, a
// process's exit status, /proc), never for time to pass.
package proc_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/proc"
)

// patience bounds each wait for something that should happen at once, so
// that a regression fails the test instead of hanging it.
const patience = 30 * time.Second

// child is a process started with proc.Start whose stdout is a pipe. What
// it starts inherits the pipe, so reading it to EOF means every process in
// the tree has exited.
type child struct {
	*proc.Process
	r   *os.File
	out *bufio.Reader
}

func start(t *testing.T, cmd *exec.Cmd) *child {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdout = w
	p, err := proc.Start(cmd, nil)
	w.Close() // the child has its own copy
	if err != nil {
		r.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop(syscall.SIGKILL, 0)
		r.Close()
	})
	return &child{Process: p, r: r, out: bufio.NewReader(r)}
}

func startShell(t *testing.T, script string, args ...string) *child {
	t.Helper()
	return start(t, exec.Command("/bin/sh", append([]string{"-c", script}, args...)...))
}

// startHelper starts this test binary as the helper mode names (see
// TestMain).
func startHelper(t *testing.T, mode string) *child {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.Stderr = os.Stderr
	return start(t, cmd)
}

// readPID reads a pid the child printed on a line of its own. A process it
// names is killed after a failed test, so as not to outlive it.
func (c *child) readPID(t *testing.T) int {
	t.Helper()
	require.NoError(t, c.r.SetReadDeadline(time.Now().Add(patience)))
	line, err := c.out.ReadString('\n')
	require.NoError(t, err, "reading a pid from the child")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() && !gone(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return pid
}

// waitTreeExited returns once no process holds the child's stdout any more
// and each of pids has exited.
func (c *child) waitTreeExited(t *testing.T, pids ...int) {
	t.Helper()
	require.NoError(t, c.r.SetReadDeadline(time.Now().Add(patience)))
	rest, err := io.ReadAll(c.out)
	require.NoError(t, err, "a process holding the child's stdout is still running")
	require.Empty(t, string(rest))
	for _, pid := range pids {
		// A process closes its files on the way out, a moment before it
		// becomes a zombie.
		waitUntil(t, fmt.Sprintf("pid %d exits", pid), func() bool { return gone(pid) })
	}
}

// waitErr waits for the child to exit on its own and returns its Wait error.
func (c *child) waitErr(t *testing.T) error {
	t.Helper()
	select {
	case <-c.Exited():
		return c.Wait()
	case <-time.After(patience):
		t.Fatalf("pid %d has not exited after %v", c.Pid(), patience)
		return nil
	}
}

// gone reports whether pid has exited: no such process, or a zombie that
// its new parent (after its own died) has not reaped yet.
func gone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	st, err := readStat(pid)
	return err != nil || st.state == 'Z'
}

// procStat holds fields of /proc/pid/stat.
type procStat struct {
	state               byte
	ppid, pgrp, session int
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name, in parentheses, may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 4 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	var st procStat
	st.state = f[0][0]
	st.ppid, _ = strconv.Atoi(f[1])
	st.pgrp, _ = strconv.Atoi(f[2])
	st.session, _ = strconv.Atoi(f[3])
	return st, nil
}

func mustStat(t *testing.T, pid int) procStat {
	t.Helper()
	st, err := readStat(pid)
	require.NoError(t, err)
	return st
}

// exitSignal returns the signal that ended a process, from its Wait error.
func exitSignal(t *testing.T, err error) syscall.Signal {
	t.Helper()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	ws := ee.Sys().(syscall.WaitStatus)
	require.True(t, ws.Signaled(), "not ended by a signal: %v", err)
	return ws.Signal()
}

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("/bin/true")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

// waitUntil polls cond, which reads state the kernel changes on its own
// schedule (such as /proc), until it holds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(patience)
	for !cond() {
		select {
		case <-tick.C:
		case <-timeout:
			t.Fatalf("%s: not after %v", what, patience)
		}
	}
}
