package testdb

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/lockstep-queue/lockstep/internal/proc"
)

// dirPrefix marks our temp dirs so that removeStale can find the ones left
// behind by a test binary that crashed before Main could clean up.
const dirPrefix = "lockstep-testdb-"

// makeTempDir creates a directory whose name carries our pid, so that
// removeStale can tell whether its owner is still alive.
func makeTempDir(kind string) (string, error) {
	return proc.OwnedTempDir("", dirPrefix, kind)
}

// removeStale deletes temp dirs of test binaries that died without running
// Main's cleanup (their servers died with them, via the parent-death signal).
func removeStale() { proc.RemoveStaleDirs("", dirPrefix) }

// openLog opens path for appending; servers that also write the file
// themselves (mariadbd's --log-error) append too, so nothing is overwritten.
func openLog(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logSince returns what was appended to path after offset, so that a retry
// does not mistake an earlier attempt's messages for its own.
func logSince(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// logTail returns the last lines of a server log for error messages, which
// are useless without the server's own explanation.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	const maxLines = 40
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	return fmt.Sprintf("last lines of %s:\n%s", path, bytes.Join(lines, []byte("\n")))
}

// lookBinary finds the first of names in PATH or in dirs. Server binaries
// often live in sbin or versioned directories that are not in PATH.
func lookBinary(names []string, dirs []string) (string, bool) {
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p, true
		}
		for _, dir := range dirs {
			p := filepath.Join(dir, name)
			if isExecutable(p) {
				return p, true
			}
		}
	}
	return "", false
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
