//go:build linux

package proc_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/proc"
)

// A test binary that is killed runs no cleanup: the kernel has to kill
// its children.
func TestParentDeathKillsTheChild(t *testing.T) {
	parent := startHelper(t, "crashing-parent")
	orphan := parent.readPID(t)
	st := mustStat(t, orphan)
	require.Equal(t, parent.Pid(), st.ppid)
	require.Equal(t, orphan, st.pgrp, "killing the parent's group cannot reach it")

	parent.Stop(syscall.SIGKILL, 0)
	// The orphan holds the pipe too: only its death closes it.
	parent.waitTreeExited(t, orphan)
}

// The kernel sends the parent-death signal when the thread that forked
// exits. Start must not fork on its caller's thread, which may exit long
// before the child should: here the caller's goroutine ends locked to its
// thread, which makes the runtime terminate the thread. (That Start's own
// goroutine keeps its thread until Wait returns cannot be shown this way:
// which thread the runtime would end is not for a test to choose.)
func TestChildOutlivesTheCallersThread(t *testing.T) {
	type started struct {
		p   *proc.Process
		tid int
		err error
	}
	var s started
	for s.p == nil {
		done := make(chan started)
		go func() {
			runtime.LockOSThread()
			tid := syscall.Gettid()
			if tid == os.Getpid() {
				// The runtime never terminates the main thread.
				runtime.UnlockOSThread()
				done <- started{tid: tid}
				return
			}
			p, err := proc.Start(exec.Command("/bin/sleep", "1000"), nil)
			done <- started{p, tid, err}
		}()
		s = <-done
		require.NoError(t, s.err)
	}
	t.Cleanup(func() { s.p.Stop(syscall.SIGKILL, 0) })
	task := fmt.Sprintf("/proc/self/task/%d", s.tid)
	waitUntil(t, "the caller's thread exits", func() bool {
		_, err := os.Stat(task)
		return errors.Is(err, fs.ErrNotExist)
	})

	// Had the exit sent the child SIGKILL, that would be how it ended: a
	// process being killed ignores further signals.
	s.p.Stop(syscall.SIGTERM, patience)
	require.Equal(t, syscall.SIGTERM, exitSignal(t, s.p.Wait()),
		"the child got the parent-death signal when its caller's thread exited")
}
