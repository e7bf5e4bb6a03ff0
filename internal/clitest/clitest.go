// Package clitest runs the lockstep command line for the tests of the
// packages that build its commands — internal/cli (the queue's commands)
// and lab/labcli (the lock-order lab's) — either in-process, through the
// package's Run, or as the built binary, as a script or an operator would.
// Both packages' tests need the same binary, runner and waits; having them
// here keeps one copy.
package clitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// command is the package the tests build: the binary operators run, with
// every command mounted.
const command = "github.com/lockstep-queue/lockstep/cmd/lockstep"

// binary is the package's only mutable state: the lockstep binary this
// test process built, once, for all its tests, which Main removes.
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Main runs the tests with testdb's throwaway servers (started lazily, for
// the commands that need MariaDB or PostgreSQL), then removes the binary
// Binary built. It returns the exit code for os.Exit.
func Main(m *testing.M) int {
	code := testdb.Main(m)
	if binary.dir != "" {
		_ = os.RemoveAll(binary.dir)
	}
	return code
}

// Binary builds cmd/lockstep once per test process (with -race when the
// tests run with it) and returns its path.
func Binary(t *testing.T) string {
	t.Helper()
	binary.once.Do(func() {
		dir, err := os.MkdirTemp("", "lockstep-cli-test-")
		if err != nil {
			binary.err = err
			return
		}
		binary.dir = dir
		path := filepath.Join(dir, "lockstep")
		args := []string{"build", "-o", path}
		if raceEnabled() {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, command)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			binary.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		binary.path = path
	})
	require.NoError(t, binary.err)
	return binary.path
}

func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// RunFunc is a command line's entry point, as cli.Run: it executes args
// and returns the exit code.
type RunFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// InProcess runs the command line in-process with run and returns its
// exit code and output.
func InProcess(t *testing.T, run RunFunc, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code = run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// CLI runs the binary Bin on one database, DSN, given in $LOCKSTEP_DSN.
type CLI struct {
	T   *testing.T
	Bin string
	DSN string
}

// Result is how one run of the binary ended.
type Result struct {
	Code           int
	Stdout, Stderr string
}

// Command prepares the binary with the database in $LOCKSTEP_DSN.
func (l *CLI) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, l.Bin, args...)
	cmd.Env = append(os.Environ(), "LOCKSTEP_DSN="+l.DSN,
		// A -race binary otherwise sleeps a second at exit.
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	return cmd
}

// RunStdin runs one command to its end.
func (l *CLI) RunStdin(stdin string, args ...string) Result {
	l.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := l.Command(ctx, args...)
	var out, errOut bytes.Buffer
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var xe *exec.ExitError
	if err != nil && !errors.As(err, &xe) {
		require.NoError(l.T, err, "lockstep %s", strings.Join(args, " "))
	}
	return Result{Code: cmd.ProcessState.ExitCode(), Stdout: out.String(), Stderr: errOut.String()}
}

// Run runs one command to its end, with nothing on its stdin.
func (l *CLI) Run(args ...string) Result {
	l.T.Helper()
	return l.RunStdin("", args...)
}

// RunIn runs a command in dir, so that a DSN that fell back to a local
// file would show.
func (l *CLI) RunIn(dir string, args ...string) Result {
	l.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := l.Command(ctx, args...)
	cmd.Dir = dir
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	_ = cmd.Run()
	return Result{Code: cmd.ProcessState.ExitCode(), Stdout: out.String(), Stderr: errOut.String()}
}

// OK runs a command that must succeed and returns its stdout.
func (l *CLI) OK(args ...string) string {
	l.T.Helper()
	r := l.Run(args...)
	require.Equal(l.T, 0, r.Code, "lockstep %s: %s", strings.Join(args, " "), r.Stderr)
	return r.Stdout
}

// Fail runs a command that must fail with one line on stderr, nothing on
// stdout, and returns that line.
func (l *CLI) Fail(args ...string) string {
	l.T.Helper()
	r := l.Run(args...)
	require.Equal(l.T, 1, r.Code, "lockstep %s should fail; stdout: %s", strings.Join(args, " "), r.Stdout)
	require.Empty(l.T, r.Stdout, "lockstep %s", strings.Join(args, " "))
	require.Equal(l.T, 1, strings.Count(r.Stderr, "\n"), "one line: %q", r.Stderr)
	require.True(l.T, strings.HasPrefix(r.Stderr, "lockstep: "), r.Stderr)
	return strings.TrimSuffix(r.Stderr, "\n")
}

// MySQLURL turns a test server's go-sql-driver DSN into the CLI's form.
func MySQLURL(t *testing.T, dsn string) string {
	cfg, err := gomysql.ParseDSN(dsn)
	require.NoError(t, err)
	return fmt.Sprintf("mysql://%s:%s@%s/%s", cfg.User, cfg.Passwd, cfg.Addr, cfg.DBName)
}

// WaitFor polls observable state until cond holds, for up to a minute.
func WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		require.False(t, time.Now().After(deadline), "timed out waiting for %s", what)
		time.Sleep(20 * time.Millisecond)
	}
}
