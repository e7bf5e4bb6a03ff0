//go:build unix && !linux

package testdb

import "syscall"

// Without Pdeathsig, servers of a crashed test binary keep running until
// killed by hand; Main still stops them on every normal exit.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}

// childPIDs is not implemented here: Kill leaves a PostgreSQL server's
// backends to notice their postmaster's death, and Start waits for them.
func childPIDs(int) []int { return nil }
