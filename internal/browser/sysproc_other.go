//go:build unix && !linux

package browser

import "syscall"

// Without Pdeathsig, the chromedriver of a crashed test binary keeps running
// until killed by hand; Close still stops it on every normal exit.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// reapOrphans has no /proc to look in; see the Linux version.
func reapOrphans() {}
