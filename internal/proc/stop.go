package proc

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// SignalGroup sends sig to the child's process group, even if the child
// itself has already exited: the kernel does not hand a group's id out
// again while the group has members, so the signal still reaches what the
// child left behind.
func (p *Process) SignalGroup(sig syscall.Signal) error {
	return syscall.Kill(-p.Pid(), sig)
}

// Stop sends sig to the whole process group and escalates to SIGKILL after
// grace. It returns once the leader has been reaped.
func (p *Process) Stop(sig syscall.Signal, grace time.Duration) {
	if p.HasExited() {
		return
	}
	// The leader has not been reaped yet, so its pid still names our group
	// and cannot have been reused by an unrelated process.
	pgid := p.Pid()
	_ = syscall.Kill(-pgid, sig)
	select {
	case <-p.exited:
		return
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.exited
}

// Shutdown sends sig to the process group and waits for the leader to
// exit. When ctx ends first the group gets SIGKILL, and the error says so.
// A process that had already exited is reported as such.
func (p *Process) Shutdown(ctx context.Context, sig syscall.Signal) error {
	if p.HasExited() {
		return fmt.Errorf("it had already exited (%v)", p.err)
	}
	pgid := p.Pid()
	_ = syscall.Kill(-pgid, sig)
	select {
	case <-p.exited:
		if p.err != nil {
			return fmt.Errorf("it exited with %v after %v", p.err, sig)
		}
		return nil
	case <-ctx.Done():
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.exited
	return fmt.Errorf("it did not stop after %v before %v, so it was killed", sig, context.Cause(ctx))
}

// Kill kills the child's processes at once, as a machine losing power
// would, including direct children that have left the group: PostgreSQL
// backends, for one, are session leaders of their own (they call setsid),
// so a group signal does not reach them; left alone they would notice the
// postmaster's death, send their clients a last message and exit a little
// later, still holding the shared memory a restart needs. The group is
// stopped first, so that the leader neither forks nor reacts to its
// children's deaths, then the children are killed, then the group. Kill
// returns once the leader has been reaped. Children are found through
// /proc on Linux only; elsewhere those outside the group are left alone.
func (p *Process) Kill() {
	if p.HasExited() {
		return
	}
	pid := p.Pid()
	_ = syscall.Kill(-pid, syscall.SIGSTOP)
	for _, c := range childPIDs(pid) {
		_ = syscall.Kill(c, syscall.SIGKILL)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-p.exited
}
