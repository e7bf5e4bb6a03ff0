//go:build unix && !linux

package testdb

import "syscall"

// Without Pdeathsig, servers of a crashed test binary keep running until
// killed by hand; Main still stops them on every normal exit.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}
