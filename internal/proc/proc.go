package proc

import (
	"os/exec"
	"runtime"
	"syscall"
)

// Process is a child started by Start. Its methods may be called from
// several goroutines.
type Process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has been reaped
	err    error         // result of Wait; read only after exited is closed
}

// Start starts cmd in a process group of its own, with the parent-death
// signal set on Linux, and returns once it runs. cred, if not nil, runs
// the child as another user (PostgreSQL refuses to run as root); the
// parent-death signal survives that, because Go sets it in the child after
// switching users, which would otherwise clear it. Start replaces
// cmd.SysProcAttr; the caller must not Wait for cmd.
func Start(cmd *exec.Cmd, cred *syscall.Credential) (*Process, error) {
	cmd.SysProcAttr = sysProcAttr(cred)
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// The kernel sends the parent-death signal when the *thread* that
		// forked the child exits, not when the process does. Unlocked, a
		// goroutine moves between threads, and the runtime ends a thread
		// whose locked goroutine exits: the thread that forked could then
		// end, taking the child with it, while the test binary runs on. So
		// fork from a thread locked to this goroutine, which lives exactly
		// as long as the child; the lock is never released, which makes
		// the runtime discard the thread only after Wait has returned.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// Pid is the child's pid, which is also its process group's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed once the child has exited and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// HasExited reports whether Exited is closed.
func (p *Process) HasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Wait waits for the child to exit and returns what exec.Cmd.Wait did.
func (p *Process) Wait() error {
	<-p.exited
	return p.err
}
