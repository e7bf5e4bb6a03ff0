package testdb

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Setpgid:    true,
		Credential: cred,
		// A test binary that crashes or is killed never reaches Main's
		// cleanup; this keeps its servers from running on forever.
		Pdeathsig: syscall.SIGKILL,
	}
}

// childPIDs lists pid's children (Linux 3.5+ with CONFIG_PROC_CHILDREN;
// none otherwise).
func childPIDs(pid int) []int {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil && c > 0 {
				out = append(out, c)
			}
		}
	}
	return out
}
