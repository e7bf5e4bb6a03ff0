package testdb

import (
	"bytes"
	"context"
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

// shutdown sends sig to the process group and waits for the leader to
// exit. When ctx ends first the group gets SIGKILL, and the error says so.
// A process that had already exited is reported as such.
func (p *process) shutdown(ctx context.Context, sig syscall.Signal) error {
	select {
	case <-p.exited:
		return fmt.Errorf("it had already exited (%v)", p.err)
	default:
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, sig)
	select {
	case <-p.exited:
		if p.err != nil {
			return fmt.Errorf("it exited with %v after %v", p.err, sig)
		}
		return nil
	case <-ctx.Done():
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.exited
	return fmt.Errorf("it did not stop after %v before %v, so it was killed", sig, context.Cause(ctx))
}

// kill kills the server's processes at once, as a machine losing power
// would. PostgreSQL backends are session leaders of their own (they call
// setsid), so the group signal does not reach them; left alone they would
// notice the postmaster's death, send their clients a last message and
// exit a little later, still holding the shared memory a restart needs.
// The leader is stopped first, so that it neither forks nor reacts to its
// children's deaths, then its children are killed, then the group.
func (p *process) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	pid := p.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGSTOP)
	for _, c := range childPIDs(pid) {
		_ = syscall.Kill(c, syscall.SIGKILL)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-p.exited
}

// portHold keeps a stopped server's port from being handed out: a socket
// bound to it (not listening, so connecting is refused as with no server)
// makes the kernel skip the port when it picks a free one, for another
// test's server (freePort) or as the source port of an outgoing
// connection (which could otherwise connect to itself).
type portHold struct{ fd int }

// holdPort binds 127.0.0.1:port. SO_REUSEADDR lets it share the port with
// the TIME_WAIT remains of the server's connections, and lets the server
// bind it again once the hold is released.
func holdPort(port int) (*portHold, error) {
	syscall.ForkLock.RLock() // no fork may inherit the descriptor before it is close-on-exec
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("SO_REUSEADDR: %w", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("bind 127.0.0.1:%d: %w", port, err)
	}
	return &portHold{fd: fd}, nil
}

func (h *portHold) release() {
	if h != nil {
		_ = syscall.Close(h.fd)
	}
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
