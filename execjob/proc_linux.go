package execjob

import (
	"syscall"
	"unsafe"
)

// waitExited blocks until the process pid, a child of this one, has exited,
// without reaping it (waitid with WNOWAIT), and reports whether it did so.
// While the child is unreaped its pid, and so the id of the process group it
// leads, cannot be reused. It reports false when waitid is unavailable.
func waitExited(pid int) bool {
	const pPID = 1           // P_PID
	var info [128 / 8]uint64 // siginfo_t, which waitid fills in
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			return errno == 0
		}
	}
}
