//go:build unix && !linux

package proc

import "syscall"

// Without Pdeathsig, the children of a crashed test binary keep running
// until killed by hand; their owners still stop them on every normal exit.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}

// childPIDs is not implemented here: Kill leaves the children that left
// the group to notice their parent's death on their own.
func childPIDs(int) []int { return nil }

// KillOrphanGroups has no /proc to look in; see the Linux version.
func KillOrphanGroups(func(cmdline []byte) int) {}
