package testdb

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// dirPrefix marks our temp dirs so that removeStale can find the ones left
// behind by a test binary that crashed before Main could clean up.
const dirPrefix = "lockstep-testdb-"

// process is a server started by this test binary.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has been reaped
	err    error         // result of Wait; read only after exited is closed
}

// startProcess starts cmd in its own process group, so that stopping it also
// reaches any children (PostgreSQL backends), and so that a Ctrl-C aimed at
// `go test` does not hit the server before Main can stop it properly.
func startProcess(cmd *exec.Cmd, cred *syscall.Credential) (*process, error) {
	cmd.SysProcAttr = sysProcAttr(cred)
	p := &process{cmd: cmd, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// The kernel sends the parent-death signal when the *thread* that
		// forked the child exits, not when the process does. Go may retire
		// idle threads, so fork from a locked thread that lives exactly as
		// long as the server; the lock is never released, which makes the
		// runtime discard the thread only after Wait has returned.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// stop sends sig to the whole process group and escalates to SIGKILL after
// grace. It returns once the leader has been reaped.
func (p *process) stop(sig syscall.Signal, grace time.Duration) {
	select {
	case <-p.exited:
		return
	default:
	}
	// The leader has not been reaped yet, so its pid still names our group
	// and cannot have been reused by an unrelated process.
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, sig)
	select {
	case <-p.exited:
		return
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.exited
}

// freePort asks the kernel for an unused port. Another process may grab it
// before the server binds it; callers retry on "Address already in use".
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// makeTempDir creates a directory whose name carries our pid, so that
// removeStale can tell whether its owner is still alive.
func makeTempDir(kind string) (string, error) {
	return os.MkdirTemp("", fmt.Sprintf("%s%d-%s-", dirPrefix, os.Getpid(), kind))
}

// removeStale deletes temp dirs of test binaries that died without running
// Main's cleanup (their servers died with them, via the parent-death signal).
func removeStale() {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range matches {
		rest := strings.TrimPrefix(filepath.Base(dir), dirPrefix)
		pidStr, _, ok := strings.Cut(rest, "-")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		// EPERM means the process exists but belongs to someone else.
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(dir)
		}
	}
}

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
