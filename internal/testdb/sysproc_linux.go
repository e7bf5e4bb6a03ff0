package testdb

import "syscall"

func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Setpgid:    true,
		Credential: cred,
		// A test binary that crashes or is killed never reaches Main's
		// cleanup; this keeps its servers from running on forever.
		Pdeathsig: syscall.SIGKILL,
	}
}
