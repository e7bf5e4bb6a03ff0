// Package execjob runs an external command as a lockstep job of kind
// "exec".
//
// The command is configured on the Worker by whoever runs the workers, and
// never taken from a job: a job's args are data, written as JSON to the
// command's standard input, so whoever can enqueue jobs cannot choose what
// runs. The job's id, attempt, kind and queue are in the environment as
// LOCKSTEP_JOB_ID, LOCKSTEP_JOB_ATTEMPT, LOCKSTEP_JOB_KIND and
// LOCKSTEP_JOB_QUEUE.
//
// Exit status 0 finishes the job DONE. With Worker.OutputBytes set, the run
// also records the end of the command's standard output and standard error
// as the job's output (an Output, which `lockstep jobs show`, the dashboard
// and the job's dependents read). Any other exit is an *ExitError that
// holds the exit code (or signal) and the tail of the command's standard
// error, which lockstep records in the job's error history before retrying
// it (or failing it once its attempts are used up). When the job's context
// ends — the job was cancelled, timed out, or the client stopped without
// waiting — the command's whole process group is killed. So is whatever the
// command left running in its group when it exits: a job does not outlive
// its command.
//
// The command inherits the worker process's environment except for the
// variables named LOCKSTEP_*, such as LOCKSTEP_DSN (which may hold a
// database password) and LOCKSTEP_TOKEN, which are lockstep's own settings
// and not for jobs; Worker.Env can pass any variable on explicitly.
//
// The processes the command started are not the worker's children: when
// they are killed (or exit) after the command, they are reparented to PID 1,
// normally an init that reaps them. In a container where lockstep itself is
// PID 1 nothing reaps them and they pile up as zombies, so run it under an
// init, such as `docker run --init` or tini.
//
// Register it like any worker:
//
//	ws := lockstep.NewWorkers()
//	err := execjob.Register(ws, &execjob.Worker{Shell: "./bin/resize", Timeout: 10 * time.Minute})
//
// and enqueue its jobs with execjob.Args (or lockstep.RawArgs of kind
// "exec"):
//
//	res, err := client.Insert(ctx, execjob.Args{JSON: []byte(`{"image":"a.png"}`)}, nil)
package execjob

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep-queue/lockstep"
)

// Kind is the job kind the Worker runs.
const Kind = "exec"

// DefaultMaxOutputBytes is how much of the end of a command's standard
// error an *ExitError keeps when Worker.MaxOutputBytes is zero.
const DefaultMaxOutputBytes = 4 << 10

// DefaultOutputBytes is the OutputBytes `lockstep work` gives its exec
// workers unless --exec-output-bytes says otherwise.
const DefaultOutputBytes = 64 << 10

// waitDelay bounds how long Work waits, once the command has exited or been
// killed, for processes that escaped its process group to close its output.
const waitDelay = 2 * time.Second

// Args are an exec job's args: any JSON value, passed as it is to the
// command's standard input.
type Args struct {
	JSON json.RawMessage
}

// Kind implements lockstep.JobArgs.
func (Args) Kind() string { return Kind }

// MarshalJSON returns the raw JSON ({} when empty), checking it.
func (a Args) MarshalJSON() ([]byte, error) {
	if len(a.JSON) == 0 {
		return []byte("{}"), nil
	}
	if !json.Valid(a.JSON) {
		return nil, errors.New("execjob: args are not valid JSON")
	}
	return a.JSON, nil
}

// UnmarshalJSON keeps the raw JSON.
func (a *Args) UnmarshalJSON(b []byte) error {
	a.JSON = append(a.JSON[:0], b...)
	return nil
}

// Worker runs a configured command for each job of kind "exec". Give
// exactly one of Command and Shell. A Worker must not be changed once
// registered; it is safe for concurrent jobs.
type Worker struct {
	// Command is the program and its arguments, run without a shell.
	Command []string
	// Shell is a command line run with `sh -c`.
	Shell string
	// Timeout bounds each run of the command; 0 means none beyond the
	// client's Config.JobTimeout. A command that times out is killed and
	// the attempt fails (and is retried if it has attempts left).
	Timeout time.Duration
	// KillGrace: when a job's context ends, the command's process group is
	// sent SIGTERM and, KillGrace later, SIGKILL. 0 sends SIGKILL at once.
	KillGrace time.Duration
	// MaxOutputBytes is how much of the end of the command's standard error
	// an *ExitError keeps. Default DefaultMaxOutputBytes.
	MaxOutputBytes int
	// OutputBytes is how much of the end of each of the command's standard
	// output and standard error a successful run keeps as the job's output
	// (an Output; so up to twice OutputBytes in all). 0 keeps none and
	// discards standard output, as before this field existed; the lockstep
	// CLI defaults to DefaultOutputBytes. Encoded as JSON, the output must
	// fit in the client's Config.MaxArgsBytes: what does not is cut
	// further, by halves.
	OutputBytes int
	// Env holds extra KEY=value entries, added to the worker process's own
	// environment (and before the LOCKSTEP_JOB_* variables, which win).
	// The inherited environment has no LOCKSTEP_* variables; entries here
	// may set them.
	Env []string
	// Dir is the command's working directory; default the worker process's.
	Dir string
}

// Register validates w and registers it for kind "exec".
func Register(ws *lockstep.Workers, w *Worker) error {
	if err := w.Validate(); err != nil {
		return err
	}
	return lockstep.AddWorkerSafely[Args](ws, w)
}

// RegisterKind validates w and registers it for jobs of another kind, so
// that each kind can have its own command (resize → ./resize.sh, mail →
// ./mail.py). Such jobs are enqueued with lockstep.RawArgs of that kind.
func RegisterKind(ws *lockstep.Workers, kind string, w *Worker) error {
	if err := w.Validate(); err != nil {
		return err
	}
	return lockstep.AddRawWorker(ws, kind, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[lockstep.RawArgs]) error {
		return w.Work(ctx, &lockstep.Job[Args]{JobRow: job.JobRow, Args: Args{JSON: job.Args.JSON}})
	}))
}

// Validate reports a Worker that cannot run anything.
func (w *Worker) Validate() error {
	switch {
	case len(w.Command) > 0 && w.Shell != "":
		return errors.New("execjob: give Command or Shell, not both")
	case len(w.Command) == 0 && strings.TrimSpace(w.Shell) == "":
		return errors.New("execjob: no command: give Command or Shell")
	case len(w.Command) > 0 && w.Command[0] == "":
		return errors.New("execjob: Command[0] (the program) is empty")
	case w.Timeout < 0:
		return fmt.Errorf("execjob: Timeout must not be negative, got %s", w.Timeout)
	case w.KillGrace < 0:
		return fmt.Errorf("execjob: KillGrace must not be negative, got %s", w.KillGrace)
	case w.MaxOutputBytes < 0:
		return fmt.Errorf("execjob: MaxOutputBytes must not be negative, got %d", w.MaxOutputBytes)
	case w.OutputBytes < 0:
		return fmt.Errorf("execjob: OutputBytes must not be negative, got %d", w.OutputBytes)
	}
	for _, kv := range w.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("execjob: Env entry %q is not KEY=value", kv)
		}
	}
	return nil
}

// ExitError is a run of the command that did not exit 0.
type ExitError struct {
	// Code is the exit code, or -1 when the command was killed by a signal
	// or did not start.
	Code int
	// Signal names the signal that killed the command, if one did.
	Signal string
	// Killed says why Work killed the command (its context ended), if it did.
	Killed string
	// Stderr is the end of the command's standard error, at most
	// Worker.MaxOutputBytes, as valid UTF-8 without NUL bytes.
	Stderr string
	// StderrOmitted is how many bytes of standard error were dropped before
	// Stderr.
	StderrOmitted int64
}

func (e *ExitError) Error() string {
	var b strings.Builder
	b.WriteString("exec: ")
	switch {
	case e.Killed != "":
		fmt.Fprintf(&b, "command killed: %s", e.Killed)
	case e.Signal != "":
		fmt.Fprintf(&b, "command killed by signal %s", e.Signal)
	default:
		fmt.Fprintf(&b, "command exited with code %d", e.Code)
	}
	if e.Stderr != "" {
		b.WriteString("; stderr")
		if e.StderrOmitted > 0 {
			fmt.Fprintf(&b, " (last %d bytes, %d omitted)", len(e.Stderr), e.StderrOmitted)
		}
		b.WriteString(":\n")
		b.WriteString(e.Stderr)
	}
	return b.String()
}

// Work implements lockstep.Worker: it runs the command once for the job.
func (w *Worker) Work(ctx context.Context, job *lockstep.Job[Args]) error {
	if err := w.Validate(); err != nil {
		return lockstep.Permanent(err)
	}
	if w.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, w.Timeout, fmt.Errorf("timed out after %s", w.Timeout))
		defer cancel()
	}
	name, argv := "sh", []string{"-c", w.Shell}
	if len(w.Command) > 0 {
		name, argv = w.Command[0], w.Command[1:]
	}
	stdin := []byte(job.Args.JSON)
	if len(stdin) == 0 {
		stdin = []byte("{}")
	}
	limit := w.MaxOutputBytes
	if limit == 0 {
		limit = DefaultMaxOutputBytes
	}
	// One buffer serves both the error's tail and the output's.
	stderr := &tailBuffer{max: max(limit, w.OutputBytes)}
	var stdout *tailBuffer

	cmd := exec.CommandContext(ctx, name, argv...)
	cmd.Dir = w.Dir
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stderr = stderr
	if w.OutputBytes > 0 {
		stdout = &tailBuffer{max: w.OutputBytes}
		cmd.Stdout = stdout
	}
	cmd.Env = append(append(inheritedEnv(), w.Env...),
		"LOCKSTEP_JOB_ID="+strconv.FormatInt(job.ID, 10),
		"LOCKSTEP_JOB_ATTEMPT="+strconv.Itoa(job.Attempts),
		"LOCKSTEP_JOB_KIND="+job.Kind,
		"LOCKSTEP_JOB_QUEUE="+job.Queue,
	)
	group := newProcessGroup(cmd, w.KillGrace)
	cmd.WaitDelay = w.KillGrace + waitDelay

	if err := cmd.Start(); err != nil {
		return fmt.Errorf("exec: start %s: %w", name, err)
	}
	// Whatever the command left behind in its group goes with it.
	err := group.wait()
	if err == nil {
		return w.recordOutput(ctx, stdout, stderr)
	}
	if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success() && ctx.Err() == nil {
		// The command exited 0, but a process that escaped its group (into
		// a session of its own, say) held its standard error open past
		// WaitDelay: the command still succeeded.
		return w.recordOutput(ctx, stdout, stderr)
	}
	out, omitted := stderr.tail(limit)
	ee := &ExitError{Code: -1, Stderr: out, StderrOmitted: omitted}
	if ctx.Err() != nil {
		ee.Killed = context.Cause(ctx).Error()
	}
	var xe *exec.ExitError
	switch {
	case errors.As(err, &xe):
		ee.Code = xe.ExitCode()
		ee.Signal = signalOf(xe)
	case ee.Killed == "":
		// Not an exit status: the output could not be read, say.
		return fmt.Errorf("exec: %s: %w", name, err)
	}
	return ee
}

// inheritedEnv is the worker process's environment without the variables
// named LOCKSTEP_*, which configure lockstep itself (LOCKSTEP_DSN,
// LOCKSTEP_TOKEN) and may hold secrets no job should see.
func inheritedEnv() []string {
	env := os.Environ()
	kept := env[:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if runtime.GOOS == "windows" {
			k = strings.ToUpper(k) // Windows names are case-insensitive.
		}
		if !strings.HasPrefix(k, "LOCKSTEP_") {
			kept = append(kept, kv)
		}
	}
	return kept
}
