package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Setpgid:    true,
		Credential: cred,
		// A test binary that crashes or is killed never runs its cleanup;
		// this keeps its children from running on forever.
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

// KillOrphanGroups sends SIGKILL to the process group of every process
// whose command line (NUL-separated, as in /proc/pid/cmdline) owner
// attributes to a pid that is gone (see OwnerGone). It is for what the
// parent-death signal misses: a grandchild, such as the Chromium of a
// chromedriver that died with its test binary, whose group is still that
// of the dead child. Elsewhere than on Linux there is no /proc to look in,
// and it does nothing.
func KillOrphanGroups(owner func(cmdline []byte) int) {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, path := range cmdlines {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // exited meanwhile, or not ours to read
		}
		if !OwnerGone(owner(b)) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if err != nil {
			continue
		}
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
}
