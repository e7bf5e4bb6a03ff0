//go:build unix

package execjob_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/execjob"
)

func testJob(args string) *lockstep.Job[execjob.Args] {
	return &lockstep.Job[execjob.Args]{
		JobRow: &lockstep.JobRow{ID: 42, Attempts: 3, MaxAttempts: 5, Kind: execjob.Kind, Queue: "media"},
		Args:   execjob.Args{JSON: json.RawMessage(args)},
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestExecStdinEnvAndDir(t *testing.T) {
	out := t.TempDir()
	work := t.TempDir()
	w := &execjob.Worker{
		Shell: `cat > "$OUT/stdin"; env | grep '^LOCKSTEP_JOB_' | sort > "$OUT/env"; echo "$EXTRA" > "$OUT/extra"; pwd -P > "$OUT/pwd"`,
		Env:   []string{"OUT=" + out, "EXTRA=from-worker", "LOCKSTEP_JOB_ID=spoofed"},
		Dir:   work,
	}
	args := `{"image":"a.png","sizes":[1,2]}`
	require.NoError(t, w.Work(context.Background(), testJob(args)))

	require.Equal(t, args, readFile(t, filepath.Join(out, "stdin")))
	require.Equal(t, "LOCKSTEP_JOB_ATTEMPT=3\nLOCKSTEP_JOB_ID=42\nLOCKSTEP_JOB_KIND=exec\nLOCKSTEP_JOB_QUEUE=media\n",
		readFile(t, filepath.Join(out, "env")), "the job's variables win over Env")
	require.Equal(t, "from-worker\n", readFile(t, filepath.Join(out, "extra")))
	real, err := filepath.EvalSymlinks(work)
	require.NoError(t, err)
	require.Equal(t, real+"\n", readFile(t, filepath.Join(out, "pwd")))
}

func TestExecEmptyArgsAreAnEmptyObject(t *testing.T) {
	out := filepath.Join(t.TempDir(), "stdin")
	w := &execjob.Worker{Command: []string{"sh", "-c", `cat > "$1"`, "sh", out}}
	require.NoError(t, w.Work(context.Background(), testJob("")))
	require.Equal(t, "{}", readFile(t, out))
}

func TestExecCommandRunsWithoutShell(t *testing.T) {
	dir := t.TempDir()
	// An argument with shell syntax is passed as it is, not interpreted.
	w := &execjob.Worker{Command: []string{"touch", "$(echo nope); x"}, Dir: dir}
	require.NoError(t, w.Work(context.Background(), testJob(`{}`)))
	_, err := os.Stat(filepath.Join(dir, "$(echo nope); x"))
	require.NoError(t, err)

	w = &execjob.Worker{Command: []string{"false"}}
	err = w.Work(context.Background(), testJob(`{}`))
	var ee *execjob.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 1, ee.Code)
	require.Equal(t, "exec: command exited with code 1", err.Error())
}

func TestExecCommandThatIgnoresStdin(t *testing.T) {
	// The command exits without reading its (large) args: not an error.
	big := `{"blob":"` + strings.Repeat("x", 1<<20) + `"}`
	require.NoError(t, (&execjob.Worker{Shell: "exit 0"}).Work(context.Background(), testJob(big)))
	var ee *execjob.ExitError
	require.ErrorAs(t, (&execjob.Worker{Shell: "exit 5"}).Work(context.Background(), testJob(big)), &ee)
	require.Equal(t, 5, ee.Code)
}

func TestExecExitCodeAndStderr(t *testing.T) {
	w := &execjob.Worker{Shell: `echo "some output"; echo "first line" >&2; echo "boom: disk on fire" >&2; exit 3`}
	err := w.Work(context.Background(), testJob(`{}`))
	var ee *execjob.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 3, ee.Code)
	require.Empty(t, ee.Signal)
	require.Empty(t, ee.Killed)
	require.Equal(t, "first line\nboom: disk on fire", ee.Stderr)
	require.Zero(t, ee.StderrOmitted)
	require.Equal(t, "exec: command exited with code 3; stderr:\nfirst line\nboom: disk on fire", err.Error())
	require.NotContains(t, err.Error(), "some output", "standard output is not kept")

	// Success ignores stderr.
	w = &execjob.Worker{Shell: `echo "warning" >&2; exit 0`}
	require.NoError(t, w.Work(context.Background(), testJob(`{}`)))
}

func TestExecStderrTailIsBoundedAndStorable(t *testing.T) {
	w := &execjob.Worker{
		// 100,000 bytes of x, then bytes no database text column takes.
		Shell:          `head -c 100000 /dev/zero | tr '\0' x >&2; printf '\nbad \000 \377 end' >&2; exit 2`,
		MaxOutputBytes: 64,
	}
	err := w.Work(context.Background(), testJob(`{}`))
	var ee *execjob.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 2, ee.Code)
	require.True(t, strings.HasSuffix(ee.Stderr, "bad  \uFFFD end"), "%q", ee.Stderr)
	require.NotContains(t, ee.Stderr, "\x00")
	require.LessOrEqual(t, len(ee.Stderr), 64+len("\uFFFD"))
	require.Greater(t, ee.StderrOmitted, int64(100000-64))
	require.Contains(t, err.Error(), "omitted")

	// The default keeps the last 4 KiB.
	w = &execjob.Worker{Shell: `head -c 10000 /dev/zero | tr '\0' y >&2; exit 1`}
	err = w.Work(context.Background(), testJob(`{}`))
	require.ErrorAs(t, err, &ee)
	require.Len(t, ee.Stderr, execjob.DefaultMaxOutputBytes)
	require.Equal(t, int64(10000-execjob.DefaultMaxOutputBytes), ee.StderrOmitted)
}

func TestExecKillsProcessGroupOnCancel(t *testing.T) {
	dir := t.TempDir()
	w := &execjob.Worker{
		// A grandchild in the background: killing only the shell would
		// leave it running.
		Shell: `sleep 60 & echo $! > "$DIR/child.tmp"; mv "$DIR/child.tmp" "$DIR/child"; wait`,
		Env:   []string{"DIR=" + dir},
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	errc := make(chan error, 1)
	go func() { errc <- w.Work(ctx, testJob(`{}`)) }()

	childFile := filepath.Join(dir, "child")
	require.Eventually(t, func() bool { _, err := os.Stat(childFile); return err == nil }, 10*time.Second, 10*time.Millisecond)
	child, err := strconv.Atoi(strings.TrimSpace(readFile(t, childFile)))
	require.NoError(t, err)
	require.True(t, alive(child), "the grandchild runs")

	begin := time.Now()
	cancel(errors.New("run was cancelled"))
	var werr error
	select {
	case werr = <-errc:
	case <-time.After(10 * time.Second):
		t.Fatal("Work did not return after its context was cancelled")
	}
	require.Less(t, time.Since(begin), 5*time.Second)
	var ee *execjob.ExitError
	require.ErrorAs(t, werr, &ee)
	require.Equal(t, "run was cancelled", ee.Killed)
	require.Equal(t, "SIGKILL", ee.Signal)
	require.Equal(t, "exec: command killed: run was cancelled", werr.Error())
	require.Eventually(t, func() bool { return !alive(child) }, 10*time.Second, 10*time.Millisecond,
		"the grandchild was killed with its group")
}

func TestExecTimeout(t *testing.T) {
	w := &execjob.Worker{Shell: `echo starting >&2; exec sleep 60`, Timeout: 200 * time.Millisecond}
	begin := time.Now()
	err := w.Work(context.Background(), testJob(`{}`))
	require.Less(t, time.Since(begin), 5*time.Second)
	var ee *execjob.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, "timed out after 200ms", ee.Killed)
	require.Equal(t, "exec: command killed: timed out after 200ms; stderr:\nstarting", err.Error())
}

func TestExecKillGraceSendsTermFirst(t *testing.T) {
	dir := t.TempDir()
	w := &execjob.Worker{
		Shell:     `trap 'echo "cleaning up" >&2; exit 7' TERM; touch "$DIR/ready"; while :; do sleep 0.05; done`,
		Env:       []string{"DIR=" + dir},
		KillGrace: 30 * time.Second,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- w.Work(ctx, testJob(`{}`)) }()
	require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(dir, "ready")); return err == nil }, 10*time.Second, 10*time.Millisecond)
	cancel()
	var err error
	select {
	case err = <-errc:
	case <-time.After(10 * time.Second):
		t.Fatal("the command did not stop on SIGTERM")
	}
	var ee *execjob.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 7, ee.Code, "the trap ran and chose the exit code")
	require.True(t, strings.HasSuffix(ee.Stderr, "cleaning up"), "%q", ee.Stderr)
	require.Equal(t, context.Canceled.Error(), ee.Killed)
}

func TestExecStartFailure(t *testing.T) {
	w := &execjob.Worker{Command: []string{"/no/such/program"}}
	err := w.Work(context.Background(), testJob(`{}`))
	require.ErrorContains(t, err, "exec: start /no/such/program")
	var ee *execjob.ExitError
	require.False(t, errors.As(err, &ee))
}

func TestExecValidateAndRegister(t *testing.T) {
	for _, tc := range []struct {
		w    execjob.Worker
		want string
	}{
		{execjob.Worker{}, "no command"},
		{execjob.Worker{Shell: "  "}, "no command"},
		{execjob.Worker{Shell: "true", Command: []string{"true"}}, "not both"},
		{execjob.Worker{Command: []string{""}}, "is empty"},
		{execjob.Worker{Shell: "true", Timeout: -time.Second}, "Timeout must not be negative"},
		{execjob.Worker{Shell: "true", KillGrace: -time.Second}, "KillGrace must not be negative"},
		{execjob.Worker{Shell: "true", MaxOutputBytes: -1}, "MaxOutputBytes"},
		{execjob.Worker{Shell: "true", Env: []string{"NOEQUALS"}}, "not KEY=value"},
	} {
		require.ErrorContains(t, tc.w.Validate(), tc.want)
		require.ErrorContains(t, execjob.Register(lockstep.NewWorkers(), &tc.w), tc.want)
	}
	// A misconfigured worker fails its jobs permanently rather than
	// retrying them.
	var perm *lockstep.PermanentError
	require.ErrorAs(t, (&execjob.Worker{}).Work(context.Background(), testJob(`{}`)), &perm)

	ws := lockstep.NewWorkers()
	require.NoError(t, execjob.Register(ws, &execjob.Worker{Shell: "true"}))
	require.Equal(t, []string{execjob.Kind}, ws.Kinds())
	require.ErrorContains(t, execjob.Register(ws, &execjob.Worker{Shell: "true"}), "already registered")
}

func TestExecArgsJSON(t *testing.T) {
	var a execjob.Args
	require.NoError(t, json.Unmarshal([]byte(`{"a": [1, 2]}`), &a))
	require.Equal(t, `{"a": [1, 2]}`, string(a.JSON))
	require.Equal(t, "exec", a.Kind())

	b, err := json.Marshal(execjob.Args{JSON: json.RawMessage(`{"a": [1, 2]}`)})
	require.NoError(t, err)
	require.Equal(t, `{"a":[1,2]}`, string(b))
	b, err = json.Marshal(execjob.Args{})
	require.NoError(t, err)
	require.Equal(t, `{}`, string(b))
	_, err = json.Marshal(execjob.Args{JSON: json.RawMessage(`{nope`)})
	require.Error(t, err)
}

// alive reports whether pid is a live process (not gone, not a zombie
// waiting for a parent that does not reap it).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !os.IsNotExist(err) && runtime.GOOS != "linux"
	}
	// pid (comm) STATE ...
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// TestExecBackgroundChildHoldingStderr: a command that exits 0 but leaves a
// background process holding its standard error open succeeds, at once
// (not after WaitDelay), and the background process is killed with its
// group.
func TestExecBackgroundChildHoldingStderr(t *testing.T) {
	dir := t.TempDir()
	w := &execjob.Worker{
		Shell: `sleep 30 & echo $! > "$DIR/child"; echo started >&2; exit 0`,
		Env:   []string{"DIR=" + dir},
	}
	begin := time.Now()
	require.NoError(t, w.Work(context.Background(), testJob(`{}`)))
	if runtime.GOOS == "linux" {
		// The group is killed as soon as the shell exits, closing the
		// pipe; otherwise this would take WaitDelay (2s).
		require.Less(t, time.Since(begin), 1500*time.Millisecond)
	}
	child, err := strconv.Atoi(strings.TrimSpace(readFile(t, filepath.Join(dir, "child"))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	require.Eventually(t, func() bool { return !alive(child) }, 10*time.Second, 10*time.Millisecond,
		"the background sleep was killed with its group")
}

// TestExecEscapedChildHoldingStderr: a background process that left the
// command's group (here, into a session of its own) cannot be killed with
// it and holds standard error open past WaitDelay; the command exited 0,
// so the job still succeeds.
func TestExecEscapedChildHoldingStderr(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	dir := t.TempDir()
	w := &execjob.Worker{
		Shell: `setsid sh -c 'echo $$ > "$DIR/child.tmp"; mv "$DIR/child.tmp" "$DIR/child"; exec sleep 30' &
until [ -s "$DIR/child" ]; do sleep 0.01; done; exit 0`,
		Env: []string{"DIR=" + dir},
	}
	err := w.Work(context.Background(), testJob(`{}`))
	child, perr := strconv.Atoi(strings.TrimSpace(readFile(t, filepath.Join(dir, "child"))))
	require.NoError(t, perr)
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	require.NoError(t, err)
	require.True(t, alive(child), "the escaped process is out of reach of the group kill")
}

func TestExecEnvWithoutLockstepSettings(t *testing.T) {
	t.Setenv("LOCKSTEP_TOKEN", "dashboard-token")
	t.Setenv("LOCKSTEP_DSN", "postgres://app:secret@db/queue")
	t.Setenv("LOCKSTEP_SOMETHING_ELSE", "x")
	t.Setenv("LOCKSTEP_JOB_ID", "inherited")
	t.Setenv("EXECJOB_TEST_KEPT", "kept")
	out := t.TempDir()
	w := &execjob.Worker{
		Shell: `env | grep '^LOCKSTEP_' | sort > "$OUT/env"; echo "$EXECJOB_TEST_KEPT" > "$OUT/kept"`,
		Env:   []string{"OUT=" + out, "LOCKSTEP_EXPLICIT=configured"},
	}
	require.NoError(t, w.Work(context.Background(), testJob(`{}`)))
	require.Equal(t, "LOCKSTEP_EXPLICIT=configured\nLOCKSTEP_JOB_ATTEMPT=3\nLOCKSTEP_JOB_ID=42\nLOCKSTEP_JOB_KIND=exec\nLOCKSTEP_JOB_QUEUE=media\n",
		readFile(t, filepath.Join(out, "env")))
	require.Equal(t, "kept\n", readFile(t, filepath.Join(out, "kept")), "other variables are inherited")
}

func TestExecStderrTailStartsAtARune(t *testing.T) {
	// "ééé" is 6 bytes; the last 5 start inside the first é.
	w := &execjob.Worker{Shell: `printf '\303\251\303\251\303\251' >&2; exit 1`, MaxOutputBytes: 5}
	err := w.Work(context.Background(), testJob(`{}`))
	var ee *execjob.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, "éé", ee.Stderr)
	require.Equal(t, int64(2), ee.StderrOmitted)

	// 4-byte characters: up to 3 continuation bytes are skipped.
	w = &execjob.Worker{Shell: `printf 'a\360\237\230\200\360\237\230\200' >&2; exit 1`, MaxOutputBytes: 5}
	require.ErrorAs(t, w.Work(context.Background(), testJob(`{}`)), &ee)
	require.Equal(t, "😀", ee.Stderr)
	require.Equal(t, int64(5), ee.StderrOmitted)

	// Nothing dropped: a stray continuation byte is kept (as U+FFFD).
	w = &execjob.Worker{Shell: `printf '\251ok' >&2; exit 1`}
	require.ErrorAs(t, w.Work(context.Background(), testJob(`{}`)), &ee)
	require.Equal(t, "\uFFFDok", ee.Stderr)
}
