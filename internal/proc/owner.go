package proc

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A test binary that dies without cleaning up (a panic, a -timeout,
// SIGKILL) leaves its temp dirs behind, and the parent-death signal stops
// only its direct children. Names that carry the owner's pid let a later
// test binary tell what has outlived its owner.

// OwnedTempDir creates a new directory in parent (the system temp dir if
// parent is "") named prefix, this process's pid, "-", kind and "-" unless
// kind is "", then a random string; OwnerPID reads the pid back.
func OwnedTempDir(parent, prefix, kind string) (string, error) {
	pattern := prefix + strconv.Itoa(os.Getpid()) + "-"
	if kind != "" {
		pattern += kind + "-"
	}
	return os.MkdirTemp(parent, pattern)
}

// OwnerPID returns the pid in a name made by OwnedTempDir with prefix, or
// 0 if name is not such a name.
func OwnerPID(name, prefix string) int {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0
	}
	pidStr, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0
	}
	pid, err := strconv.Atoi(pidStr)
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// OwnerGone reports whether no process has pid, so that what it owned may
// be removed. It is false for pid 0 or less and for this process.
func OwnerGone(pid int) bool {
	if pid <= 0 || pid == os.Getpid() {
		return false
	}
	// EPERM means the process exists but belongs to someone else.
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// RemoveStaleDirs deletes the directories OwnedTempDir made in parent
// (the system temp dir if parent is "") with prefix whose owner is gone.
func RemoveStaleDirs(parent, prefix string) {
	if parent == "" {
		parent = os.TempDir()
	}
	matches, _ := filepath.Glob(filepath.Join(parent, prefix+"*"))
	for _, dir := range matches {
		if OwnerGone(OwnerPID(filepath.Base(dir), prefix)) {
			_ = os.RemoveAll(dir)
		}
	}
}
