//go:build unix

package execjob

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// processGroup runs the command in a process group of its own, so that
// killing it kills whatever it started too.
//
// The group's id is the command's pid, which the kernel may give to a new
// process once the command has been reaped and the group is empty. So that a
// signal meant for the group does not reach another one, nothing is
// signalled after finish, and on Linux finish runs after the command exits
// but before it is reaped (see wait).
type processGroup struct {
	cmd *exec.Cmd

	mu       sync.Mutex
	timer    *time.Timer
	finished bool
}

func newProcessGroup(cmd *exec.Cmd, grace time.Duration) *processGroup {
	g := &processGroup{cmd: cmd}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Called by os/exec when the context ends while the command runs.
	cmd.Cancel = func() error {
		g.mu.Lock()
		defer g.mu.Unlock()
		if grace <= 0 {
			return g.signalLocked(syscall.SIGKILL)
		}
		err := g.signalLocked(syscall.SIGTERM)
		if !g.finished {
			g.timer = time.AfterFunc(grace, func() { _ = g.signal(syscall.SIGKILL) })
		}
		return err
	}
	return g
}

// signal sends sig to the whole group, unless the command has finished.
func (g *processGroup) signal(sig syscall.Signal) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.signalLocked(sig)
}

func (g *processGroup) signalLocked(sig syscall.Signal) error {
	if g.finished {
		return os.ErrProcessDone
	}
	err := syscall.Kill(-g.cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// finish kills what is left of the group and stops signalling it.
func (g *processGroup) finish() {
	g.mu.Lock()
	defer g.mu.Unlock()
	_ = g.signalLocked(syscall.SIGKILL)
	g.finished = true
	if g.timer != nil {
		g.timer.Stop()
	}
}

// wait waits for the started command, like cmd.Wait, and kills whatever
// the command left running in its group as soon as it exits.
//
// Killing the group at once matters for a command that exits but leaves a
// background process holding its standard error open: cmd.Wait waits for
// that output to close (up to WaitDelay).
//
// On Linux, waitExited sees the exit without reaping the command, so the
// group is killed while the command is still a zombie member of it: the group
// id cannot have been reused, and the signal reaches only the command's own
// processes. Elsewhere the group is killed after cmd.Wait has reaped the
// command (and, should a background process hold the output, up to WaitDelay
// later). That is safe while the group has any member left, as a group's id
// is not reused while the group exists; once it is empty the kill fails with
// ESRCH, unless in between the kernel wrapped around its pids to hand out
// the command's pid again and its new owner made itself a group leader —
// negligible, and the price of a platform without waitid.
func (g *processGroup) wait() error {
	if waitExited(g.cmd.Process.Pid) {
		g.finish()
		return g.cmd.Wait()
	}
	err := g.cmd.Wait()
	g.finish()
	return err
}

// signalOf names the signal that ended the command, if one did.
func signalOf(xe *exec.ExitError) string {
	ws, ok := xe.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return ""
	}
	if name, ok := signalNames[ws.Signal()]; ok {
		return name
	}
	return fmt.Sprintf("%d (%s)", int(ws.Signal()), ws.Signal())
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGABRT: "SIGABRT", syscall.SIGALRM: "SIGALRM", syscall.SIGBUS: "SIGBUS",
	syscall.SIGFPE: "SIGFPE", syscall.SIGHUP: "SIGHUP", syscall.SIGILL: "SIGILL",
	syscall.SIGINT: "SIGINT", syscall.SIGKILL: "SIGKILL", syscall.SIGPIPE: "SIGPIPE",
	syscall.SIGQUIT: "SIGQUIT", syscall.SIGSEGV: "SIGSEGV", syscall.SIGTERM: "SIGTERM",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2",
}
