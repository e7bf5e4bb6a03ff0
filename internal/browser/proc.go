package browser

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// process is a chromedriver started by this package.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has been reaped
	err    error         // result of Wait; read only after exited is closed
}

func startProcess(cmd *exec.Cmd) (*process, error) {
	cmd.SysProcAttr = sysProcAttr()
	p := &process{cmd: cmd, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// The kernel sends the parent-death signal when the *thread* that
		// forked the child exits, not when the process does. Go may retire
		// idle threads, so fork from a locked thread that lives exactly as
		// long as the child; the lock is never released, which makes the
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

func (p *process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// stop sends sig to the whole process group and escalates to SIGKILL after
// grace. It returns once the leader has been reaped.
func (p *process) stop(sig syscall.Signal, grace time.Duration) {
	if p.hasExited() {
		return
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

// freePort asks the kernel for an unused loopback port. Another process may
// grab it before chromedriver binds it; startDriver retries when that happens.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logSince returns the last lines appended to path after offset: error
// messages are useless without chromedriver's and Chromium's own
// explanation, and a retry must not show an earlier attempt's output.
func logSince(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	b, _ := io.ReadAll(f)
	const maxLines = 40
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0
}
