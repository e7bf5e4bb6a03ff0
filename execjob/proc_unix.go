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
		if grace <= 0 {
			return g.signal(syscall.SIGKILL)
		}
		err := g.signal(syscall.SIGTERM)
		g.mu.Lock()
		if !g.finished {
			g.timer = time.AfterFunc(grace, func() { _ = g.signal(syscall.SIGKILL) })
		}
		g.mu.Unlock()
		return err
	}
	return g
}

// signal sends sig to the whole group.
func (g *processGroup) signal(sig syscall.Signal) error {
	err := syscall.Kill(-g.cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// done kills what is left of the group once the command has exited.
func (g *processGroup) done() {
	g.mu.Lock()
	g.finished = true
	if g.timer != nil {
		g.timer.Stop()
	}
	g.mu.Unlock()
	if g.cmd.Process != nil {
		_ = g.signal(syscall.SIGKILL)
	}
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
