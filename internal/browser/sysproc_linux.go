package browser

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		// Its own group, so that stopping chromedriver also reaches the
		// Chromium it started, and a Ctrl-C aimed at `go test` does not.
		Setpgid: true,
		// A test binary that crashes or is killed never calls Close; this
		// keeps its chromedriver from running on forever.
		Pdeathsig: syscall.SIGKILL,
	}
}

// reapOrphans kills the Chromiums of test binaries that died without calling
// Close (a panic, a -timeout, SIGKILL): Pdeathsig stops their chromedriver
// but not the browser it started, which would otherwise run on forever. Such
// a browser is recognised by a profile in a directory named after a pid that
// no longer exists.
func reapOrphans() {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, path := range cmdlines {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // exited meanwhile, or not ours to read
		}
		owner := profileOwner(b)
		if owner <= 0 || owner == os.Getpid() || !errors.Is(syscall.Kill(owner, 0), syscall.ESRCH) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if err != nil {
			continue
		}
		// The group is that of the dead chromedriver, which held only the
		// browser and its helpers.
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
}

// profileOwner returns the pid in the dirPrefix directory named by a
// --user-data-dir flag in a NUL-separated command line, or 0.
func profileOwner(cmdline []byte) int {
	for arg := range bytes.SplitSeq(cmdline, []byte{0}) {
		dir, ok := bytes.CutPrefix(arg, []byte("--user-data-dir="))
		if !ok {
			continue
		}
		for elem := range strings.SplitSeq(string(dir), "/") {
			rest, ok := strings.CutPrefix(elem, dirPrefix)
			if !ok {
				continue
			}
			pidStr, _, _ := strings.Cut(rest, "-")
			pid, _ := strconv.Atoi(pidStr)
			return pid
		}
	}
	return 0
}
