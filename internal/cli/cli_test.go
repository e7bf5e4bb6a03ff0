//go:build unix

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/clitest"
	"github.com/lockstep-queue/lockstep/internal/dsn"
)

// These tests run the real binary, built once, as a script or an operator
// would: every command, on SQLite, MariaDB and PostgreSQL.

// TestCLIEnqueueAndRead enqueues with every option and with bad input,
// and reads jobs, runs and stats back, as tables and as JSON.
func TestCLIEnqueueAndRead(t *testing.T) {
	forEachDialect(t, func(t *testing.T, l *lockstepCLI) {
		// Plain: args default to {}, the default queue.
		plain := l.enqueue("resize")
		j := l.job(plain)
		require.Equal(t, "resize", j.Kind)
		require.Equal(t, lockstep.DefaultQueue, j.Queue)
		require.JSONEq(t, `{}`, string(j.Args))
		require.Equal(t, lockstep.StatusPending, j.Status)
		require.Equal(t, 25, j.MaxAttempts)
		require.Zero(t, j.RunID)
		require.Empty(t, j.Errors)

		// Every option.
		mail := l.enqueue("send_email", "--queue", "mail", "--priority=-5", "--max-attempts", "3", "--in", "1h", `{"to": "a@example.com"}`)
		j = l.job(mail)
		require.Equal(t, "mail", j.Queue)
		require.Equal(t, -5, j.Priority)
		require.Equal(t, 3, j.MaxAttempts)
		require.JSONEq(t, `{"to":"a@example.com"}`, string(j.Args))
		require.NotNil(t, j.AvailableAt)
		require.NotNil(t, j.CreatedAt)
		delay := j.AvailableAt.Sub(*j.CreatedAt)
		require.InDelta(t, time.Hour.Seconds(), delay.Seconds(), 60, "--in 1h: available %s, created %s", j.AvailableAt, j.CreatedAt)

		at := l.enqueue("report", "--at", "2030-01-02T15:04:05Z")
		require.True(t, l.job(at).AvailableAt.Equal(time.Date(2030, 1, 2, 15, 4, 5, 0, time.UTC)), "%v", l.job(at).AvailableAt)

		// A new run holding the job, as JSON; then more jobs into it, from
		// a file and from stdin.
		var first jobOut
		l.json(&first, "enqueue", "thumb", "--new-run", "nightly", `{"n":1}`)
		require.NotZero(t, first.RunID)
		require.Equal(t, "thumb", first.Kind)
		runID := first.RunID
		argsFile := filepath.Join(t.TempDir(), "args.json")
		require.NoError(t, os.WriteFile(argsFile, []byte(`{"n": 2, "nested": {"list": [1, 2, 3]}}`), 0o600))
		fromFile := l.enqueue("thumb", "--run", itoa(runID), "--args-file", argsFile)
		r := l.RunStdin(`{"n": 3}`, "enqueue", "thumb", "--run", itoa(runID), "--args-file", "-")
		require.Equal(t, 0, r.Code, r.Stderr)
		fromStdin, err := strconv.ParseInt(strings.TrimSpace(r.Stdout), 10, 64)
		require.NoError(t, err)
		require.Equal(t, runID, l.job(fromFile).RunID)
		require.JSONEq(t, `{"n":2,"nested":{"list":[1,2,3]}}`, string(l.job(fromFile).Args))
		require.JSONEq(t, `{"n":3}`, string(l.job(fromStdin).Args))

		// Bad input: one clear line, exit 1, and no job added.
		before := l.allJobs()
		require.Len(t, before, 6)
		for _, tc := range []struct {
			args  []string
			stdin string
			want  string
		}{
			{args: []string{"enqueue", "resize", `{"a": 1,}`}, want: "lockstep: args from JSON_ARGS are not valid JSON: invalid character '}' looking for beginning of object key string (at byte 9)"},
			{args: []string{"enqueue", "resize", "--args-file", "-"}, stdin: "not json", want: "lockstep: args from standard input are not valid JSON: invalid character 'o' in literal null (expecting 'u') (at byte 2)"},
			{args: []string{"enqueue", "resize", "--in", "-5m"}, want: "lockstep: --in must not be negative, got -5m0s"},
			{args: []string{"enqueue", "resize", "--in", "5m", "--at", "2030-01-02T15:04:05Z"}, want: "lockstep: give --at or --in, not both"},
			{args: []string{"enqueue", "resize", "--at", "tomorrow"}, want: `lockstep: --at "tomorrow" is not an RFC 3339 time such as 2030-01-02T15:04:05Z`},
			{args: []string{"enqueue", "resize", "--max-attempts", "0"}, want: "lockstep: --max-attempts must be at least 1, got 0"},
			{args: []string{"enqueue", "resize", "--priority", "40000"}, want: "lockstep: enqueue: priority 40000 is out of range [-32768, 32767]"},
			{args: []string{"enqueue", "resize", "--run", "1", "--new-run", "x"}, want: "lockstep: give --run or --new-run, not both"},
			{args: []string{"enqueue", "resize", "--run", "999999"}, want: "lockstep: enqueue: run 999999 not found"},
			{args: []string{"enqueue", "resize", "{}", "--args-file", argsFile}, want: "lockstep: give JSON_ARGS or --args-file, not both"},
			{args: []string{"enqueue", "resize", "--args-file", filepath.Join(t.TempDir(), "missing.json")}, want: "lockstep: --args-file: open "},
			{args: []string{"enqueue"}, want: "lockstep: lockstep enqueue needs KIND [JSON_ARGS], got no arguments"},
			{args: []string{"jobs", "--status", "finished"}, want: `lockstep: unknown job status "finished": use WAITING, PENDING, BLOCKED, RUNNING, DONE, FAILED or CANCELLED`},
			{args: []string{"jobs", "list", "--status", "nope"}, want: `lockstep: unknown job status "nope": use WAITING, PENDING, BLOCKED, RUNNING, DONE, FAILED or CANCELLED`},
			{args: []string{"jobs", "--limit", "0"}, want: "lockstep: --limit must be at least 1, got 0"},
			{args: []string{"jobs", "show", "abc"}, want: `lockstep: invalid job id "abc": want a positive integer`},
			{args: []string{"jobs", "show", "999999"}, want: "lockstep: job 999999 not found"},
			{args: []string{"runs", "show", "999999"}, want: "lockstep: run 999999 not found"},
			{args: []string{"cancel", "job", "999999"}, want: "lockstep: job 999999 not found"},
			{args: []string{"cancel", "run", "999999"}, want: "lockstep: run 999999 not found"},
			{args: []string{"retry", "job", "999999"}, want: "lockstep: job 999999 not found"},
			{args: []string{"retry", "job", itoa(plain)}, want: fmt.Sprintf("lockstep: cannot retry job %d: it is PENDING; only FAILED jobs can be retried", plain)},
			{args: []string{"stats", "--window", "0s"}, want: "lockstep: --window must be positive, got 0s"},
		} {
			r := l.RunStdin(tc.stdin, tc.args...)
			require.Equal(t, 1, r.Code, "%v: %s", tc.args, r.Stdout)
			require.Empty(t, r.Stdout, "%v", tc.args)
			require.Equal(t, 1, strings.Count(r.Stderr, "\n"), "%v: one line: %q", tc.args, r.Stderr)
			require.True(t, strings.HasPrefix(r.Stderr, tc.want), "%v:\n got %q\nwant %q", tc.args, r.Stderr, tc.want)
		}
		require.Equal(t, ids(before), ids(l.allJobs()), "no bad command added or changed a job")

		// jobs: newest first, filtered, paged.
		all := l.allJobs()
		require.Equal(t, []int64{fromStdin, fromFile, first.ID, at, mail, plain}, ids(all))
		var page jobPageOut
		l.json(&page, "jobs", "--queue", "mail")
		require.Equal(t, []int64{mail}, ids(page.Jobs))
		l.json(&page, "jobs", "list", "--kind", "thumb", "--status", "pending")
		require.Equal(t, []int64{fromStdin, fromFile, first.ID}, ids(page.Jobs))
		l.json(&page, "jobs", "--run", itoa(runID), "--limit", "2")
		require.Equal(t, []int64{fromStdin, fromFile}, ids(page.Jobs))
		require.Equal(t, fromFile, page.Next, "the next page starts below the last job shown")
		l.json(&page, "jobs", "--run", itoa(runID), "--limit", "2", "--before", itoa(page.Next))
		require.Equal(t, []int64{first.ID}, ids(page.Jobs))
		l.json(&page, "jobs", "--status", "DONE")
		require.Empty(t, page.Jobs)

		out := l.OK("jobs", "--limit", "2")
		require.Regexp(t, `(?m)^ID\s+RUN\s+QUEUE\s+KIND\s+STATUS\s+ATTEMPTS\s+CREATED\s+LAST_ERROR$`, out)
		require.Regexp(t, fmt.Sprintf(`(?m)^%d\s+%d\s+default\s+thumb\s+PENDING\s+0/25\s+\S+\s+-$`, fromStdin, runID), out)
		require.Contains(t, out, fmt.Sprintf("next page: --before %d", fromFile))
		require.Equal(t, "no jobs\n", l.OK("jobs", "--status", "failed"))

		out = l.OK("jobs", "show", itoa(fromFile))
		for _, want := range []string{"status:", "PENDING", "attempts:", "0 of 25", "args:", `    "nested": {`, `      "list": [`, "errors: none"} {
			require.Contains(t, out, want)
		}

		// runs.
		var runs runsListOut
		l.json(&runs, "runs")
		require.Len(t, runs.Runs, 1)
		rr := runs.Runs[0]
		require.Equal(t, runID, rr.ID)
		require.Equal(t, "nightly", rr.Name)
		require.Equal(t, "ACTIVE", rr.Status)
		require.Equal(t, 3, rr.Jobs)
		require.Equal(t, 3, rr.Counts[lockstep.StatusPending])
		require.False(t, rr.Complete)
		require.False(t, rr.CountsCapped)
		require.Zero(t, runs.Next)

		second := l.enqueue("thumb", "--new-run", "hourly")
		secondRun := l.job(second).RunID
		l.json(&runs, "runs", "list", "--limit", "1")
		require.Len(t, runs.Runs, 1)
		require.Equal(t, secondRun, runs.Runs[0].ID, "newest first")
		require.Equal(t, secondRun, runs.Next)
		l.json(&runs, "runs", "--limit", "1", "--before", itoa(runs.Next))
		require.Equal(t, runID, runs.Runs[0].ID)
		l.json(&runs, "runs", "--count-limit", "2")
		require.True(t, runs.Runs[1].CountsCapped, "nightly has 3 jobs, more than 2")
		require.Equal(t, 2, runs.Runs[1].Jobs)

		out = l.OK("runs")
		require.Regexp(t, `(?m)^ID\s+NAME\s+STATUS\s+PROGRESS\s+WAITING\s+PENDING\s+BLOCKED\s+RUNNING\s+DONE\s+FAILED\s+CANCELLED\s+CREATED$`, out)
		require.Regexp(t, fmt.Sprintf(`(?m)^%d\s+nightly\s+ACTIVE\s+0/3\s+0\s+3\s+0\s+0\s+0\s+0\s+0\s+\S+$`, runID), out)
		require.Regexp(t, fmt.Sprintf(`(?m)^%d\s+nightly\s+ACTIVE\s+≥0/≥2\s+≥0\s+≥2\s`, runID), l.OK("runs", "--count-limit", "2"))

		var show runShowOut
		l.json(&show, "runs", "show", itoa(runID), "--limit", "2")
		require.Equal(t, "nightly", show.Run.Name)
		require.Equal(t, 3, show.Run.Jobs)
		require.Equal(t, []int64{fromStdin, fromFile}, ids(show.Jobs))
		require.Equal(t, fromFile, show.Next)
		out = l.OK("runs", "show", itoa(runID))
		require.Contains(t, out, "nightly")
		require.Contains(t, out, "newest jobs:")
		require.Regexp(t, `(?m)^progress:\s+0/3 final$`, out)

		// stats.
		var st statsOut
		l.json(&st, "stats")
		require.Equal(t, 60.0, st.WindowSeconds)
		byQueue := map[string]queueStatsOut{}
		for _, q := range st.Queues {
			byQueue[q.Queue] = q
		}
		require.Len(t, byQueue, 2, "%+v", st.Queues)
		def := byQueue[lockstep.DefaultQueue]
		require.Equal(t, countOut{N: 6}, def.Counts[lockstep.StatusPending], "report's job is not available yet but PENDING")
		require.Equal(t, countOut{}, def.Counts[lockstep.StatusDone])
		require.Zero(t, def.JobsPerSecond)
		require.NotNil(t, def.OldestPendingAgeSeconds)
		require.GreaterOrEqual(t, *def.OldestPendingAgeSeconds, 0.0)
		require.Equal(t, countOut{N: 1}, byQueue["mail"].Counts[lockstep.StatusPending])
		require.Nil(t, byQueue["mail"].OldestPendingAgeSeconds, "its only job is an hour away")
		l.json(&st, "stats", "--count-limit", "2", "--window", "5m")
		require.Equal(t, 300.0, st.WindowSeconds)
		for _, q := range st.Queues {
			if q.Queue == lockstep.DefaultQueue {
				require.Equal(t, countOut{N: 2, Capped: true}, q.Counts[lockstep.StatusPending])
			}
		}
		out = l.OK("stats", "--count-limit", "2")
		require.Regexp(t, `(?m)^QUEUE\s+WAITING\s+PENDING\s+BLOCKED\s+RUNNING\s+DONE\s+FAILED\s+CANCELLED\s+SCHEDULED\s+OLDEST_PENDING\s+JOBS/S\(1m0s\)$`, out)
		// Both of default's PENDING and ready counts stop at 2: how many
		// are scheduled is not known.
		require.Regexp(t, `(?m)^default\s+0\s+≥2\s+0\s+0\s+0\s+0\s+0\s+\?\s+\S+\s+0\.00$`, out)
		require.Regexp(t, `(?m)^mail\s+0\s+1\s+0\s+0\s+0\s+0\s+0\s+1\s+-\s+0\.00$`, out)

		// cancel: a job, again, then a run; a cancelled run takes no jobs.
		var change jobChangeOut
		l.json(&change, "cancel", "job", itoa(plain))
		require.True(t, change.Changed)
		require.Equal(t, lockstep.StatusCancelled, change.Job.Status)
		require.Equal(t, fmt.Sprintf("job %d was already CANCELLED\n", plain), l.OK("cancel", "job", itoa(plain)))
		require.Equal(t, fmt.Sprintf("lockstep: cannot retry job %d: it is CANCELLED; only FAILED jobs can be retried", plain),
			l.Fail("retry", "job", itoa(plain)))
		require.Equal(t, fmt.Sprintf("job %d is CANCELLED\n", mail), l.OK("cancel", "job", itoa(mail)))

		var cr cancelRunOut
		l.json(&cr, "cancel", "run", itoa(runID))
		require.Equal(t, "CANCELLED", cr.Run.Status)
		require.NotNil(t, cr.Run.CancelledAt)
		require.Equal(t, []int64{first.ID, fromFile, fromStdin}, cr.Cancelled)
		for _, id := range cr.Cancelled {
			require.Equal(t, lockstep.StatusCancelled, l.job(id).Status)
		}
		require.Equal(t, lockstep.StatusPending, l.job(second).Status, "another run's job is untouched")
		require.Equal(t, fmt.Sprintf("lockstep: enqueue: run %d is cancelled; its jobs cannot be added to", runID),
			l.Fail("enqueue", "thumb", "--run", itoa(runID)))
		require.Regexp(t, fmt.Sprintf(`^run %d \(hourly\) is CANCELLED; 1 of its jobs were cancelled\n$`, secondRun), l.OK("cancel", "run", itoa(secondRun)))
		l.json(&show, "runs", "show", itoa(runID))
		require.Equal(t, "CANCELLED", show.Run.Status)
		require.Equal(t, 3, show.Run.Counts[lockstep.StatusCancelled])
	})
}

// workScript is the --command of the exec worker: what it does depends on
// the job's args (data), never on a command from the job.
const workScript = `input=$(cat)
case "$input" in
*fail*) echo "disk on fire (attempt $LOCKSTEP_JOB_ATTEMPT of job $LOCKSTEP_JOB_ID)" >&2; exit 3 ;;
*sleep*) echo $$ > "$TEST_DIR/sleep.tmp"; mv "$TEST_DIR/sleep.tmp" "$TEST_DIR/sleep.pid"; exec sleep 300 ;;
esac
printf '%s|%s|%s|%s' "$input" "$LOCKSTEP_JOB_KIND" "$LOCKSTEP_JOB_QUEUE" "$LOCKSTEP_JOB_ATTEMPT" > "$TEST_DIR/ok-$LOCKSTEP_JOB_ID"`

// TestCLIWork runs `lockstep work --kind exec --kind demo` as a process:
// a command that exits 0 finishes DONE; one that exits 3 is retried, then
// FAILED with its stderr in the error history, and `retry job` gives it
// another attempt; a cancelled job's command is killed; SIGTERM stops the
// worker with exit status 0.
func TestCLIWork(t *testing.T) {
	forEachDialect(t, func(t *testing.T, l *lockstepCLI) {
		dir := t.TempDir()
		okJob := l.enqueue("exec", `{"say": "hello"}`)
		failJob := l.enqueue("exec", "--max-attempts", "2", `{"fail": true}`)
		demoJob := l.enqueue("resize", `{"image": "a.png", "width": 10, "ms": 1}`)
		mediaJob := l.enqueue("exec", "--queue", "media", `{"say": "media"}`)
		thumbJob := l.enqueue("thumbnail", `{"say": "thumb"}`)

		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		work := l.Command(ctx, "work", "--kind", "exec", "--kind", "demo", "--command", workScript, "--exec", "thumbnail="+workScript,
			"--queue", "default=4", "--queue", "media",
			"--poll", "100ms", "--heartbeat", "200ms", "--reap-after", "5s", "--log-level", "debug")
		work.Env = append(work.Env, "TEST_DIR="+dir)
		logPath := filepath.Join(dir, "work.log")
		logFile, err := os.Create(logPath)
		require.NoError(t, err)
		defer logFile.Close()
		work.Stdout, work.Stderr = logFile, logFile
		require.NoError(t, work.Start())
		exited := make(chan error, 1)
		go func() { exited <- work.Wait() }()
		stopped := false
		defer func() {
			if !stopped {
				_ = work.Process.Kill()
				<-exited
				b, _ := os.ReadFile(logPath)
				t.Logf("work's output:\n%s", b)
			}
		}()

		// exit 0: DONE, with the args on stdin and the job in the environment.
		j := l.waitStatus(okJob, lockstep.StatusDone)
		require.Equal(t, 1, j.Attempts)
		require.Empty(t, j.Errors)
		require.NotNil(t, j.FinishedAt)
		b, err := os.ReadFile(filepath.Join(dir, "ok-"+itoa(okJob)))
		require.NoError(t, err)
		args, env, _ := strings.Cut(string(b), "|")
		require.JSONEq(t, `{"say":"hello"}`, args)
		require.Equal(t, "exec|default|1", env)
		l.waitStatus(mediaJob, lockstep.StatusDone)
		b, err = os.ReadFile(filepath.Join(dir, "ok-"+itoa(mediaJob)))
		require.NoError(t, err)
		args, env, _ = strings.Cut(string(b), "|")
		require.JSONEq(t, `{"say":"media"}`, args)
		require.Equal(t, "exec|media|1", env)
		// --exec KIND=COMMAND: a kind of its own, the same contract.
		l.waitStatus(thumbJob, lockstep.StatusDone)
		b, err = os.ReadFile(filepath.Join(dir, "ok-"+itoa(thumbJob)))
		require.NoError(t, err)
		args, env, _ = strings.Cut(string(b), "|")
		require.JSONEq(t, `{"say":"thumb"}`, args)
		require.Equal(t, "thumbnail|default|1", env)
		l.waitStatus(demoJob, lockstep.StatusDone)

		// exit 3 twice: retried, then FAILED, stderr in the history.
		j = l.waitStatus(failJob, lockstep.StatusFailed)
		require.Equal(t, 2, j.Attempts)
		require.Len(t, j.Errors, 2)
		for i, e := range j.Errors {
			require.Equal(t, i+1, e.Attempt)
			require.False(t, e.At.IsZero())
			require.Equal(t, fmt.Sprintf("exec: command exited with code 3; stderr:\ndisk on fire (attempt %d of job %d)", i+1, failJob), e.Error)
		}
		require.Equal(t, j.Errors[1].Error, j.LastError)
		out := l.OK("jobs", "show", itoa(failJob))
		require.Contains(t, out, "errors (2):")
		require.Regexp(t, `(?m)^  attempt 2 at \S+:\n    exec: command exited with code 3; stderr:\n    disk on fire \(attempt 2 of job \d+\)$`, out)
		require.Regexp(t, fmt.Sprintf(`(?m)^%d\s+-\s+default\s+exec\s+FAILED\s+2/2\s+\S+\s+exec: command exited with code 3; stderr: disk on fire`, failJob),
			l.OK("jobs", "--status", "failed"))

		// retry: one more attempt, which fails again.
		require.Equal(t, fmt.Sprintf("lockstep: cannot retry job %d: it is DONE; only FAILED jobs can be retried", okJob), l.Fail("retry", "job", itoa(okJob)))
		var change jobChangeOut
		l.json(&change, "retry", "job", itoa(failJob))
		require.True(t, change.Changed)
		require.Equal(t, 3, change.Job.MaxAttempts)
		j = l.waitJob(failJob, "FAILED again", func(j jobOut) bool { return j.Status == lockstep.StatusFailed && len(j.Errors) == 3 })
		require.Equal(t, 3, j.Attempts)
		require.Contains(t, j.Errors[2].Error, "disk on fire (attempt 3 of")

		// A FAILED job of a cancelled run cannot be retried.
		var inRun jobOut
		l.json(&inRun, "enqueue", "exec", "--new-run", "doomed", "--max-attempts", "1", `{"fail": 1}`)
		l.waitStatus(inRun.ID, lockstep.StatusFailed)
		// Every job of the run has ended: its cancel is refused. With a
		// job left (in a queue no worker serves), it is cancelled.
		require.Contains(t, l.Fail("cancel", "run", itoa(inRun.RunID)), "it has finished")
		l.enqueue("exec", "--run", itoa(inRun.RunID), "--queue", "unserved", `{"fail": 1}`)
		l.OK("cancel", "run", itoa(inRun.RunID))
		require.Equal(t, fmt.Sprintf("lockstep: cannot retry job %d: its run %d is cancelled", inRun.ID, inRun.RunID),
			l.Fail("retry", "job", itoa(inRun.ID)))
		require.Equal(t, lockstep.StatusFailed, l.job(inRun.ID).Status)

		// cancel a running job: its command is killed.
		sleepJob := l.enqueue("exec", `{"sleep": true}`)
		l.waitStatus(sleepJob, lockstep.StatusRunning)
		pidFile := filepath.Join(dir, "sleep.pid")
		var pid int
		require.Eventually(t, func() bool {
			b, err := os.ReadFile(pidFile)
			if err != nil {
				return false
			}
			pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
			return err == nil
		}, 30*time.Second, 20*time.Millisecond)
		require.True(t, processAlive(pid))
		require.Equal(t, fmt.Sprintf("job %d is CANCELLED\n", sleepJob), l.OK("cancel", "job", itoa(sleepJob)))
		require.Eventually(t, func() bool { return !processAlive(pid) }, 30*time.Second, 20*time.Millisecond,
			"the heartbeat notices the cancel and the command is killed")
		require.Equal(t, lockstep.StatusCancelled, l.job(sleepJob).Status, "the killed command's result is discarded")

		// stats see the finished jobs.
		var st statsOut
		l.json(&st, "stats", "--window", "10m")
		for _, q := range st.Queues {
			if q.Queue == lockstep.DefaultQueue {
				// DONE: the exec job, the demo job and the thumbnail job.
				require.Equal(t, countOut{N: 3}, q.Counts[lockstep.StatusDone], "%+v", q)
				require.Equal(t, countOut{N: 2}, q.Counts[lockstep.StatusFailed])
				require.Equal(t, countOut{N: 1}, q.Counts[lockstep.StatusCancelled])
				require.Equal(t, countOut{N: 3}, q.Finished[lockstep.StatusDone])
				require.Equal(t, countOut{N: 2}, q.Finished[lockstep.StatusFailed])
				require.InDelta(t, 5.0/600, q.JobsPerSecond, 1e-9)
			}
		}

		// SIGTERM: a graceful stop, exit status 0.
		require.NoError(t, work.Process.Signal(syscall.SIGTERM))
		select {
		case err = <-exited:
		case <-time.After(60 * time.Second):
			t.Fatal("work did not stop within 60s of SIGTERM")
		}
		stopped = true
		logs, _ := os.ReadFile(logPath)
		require.NoError(t, err, "work exits 0 on SIGTERM:\n%s", logs)
		require.Equal(t, 0, work.ProcessState.ExitCode())
		require.Contains(t, string(logs), "working; stop with SIGINT or SIGTERM")
		require.Contains(t, string(logs), "lockstep: client stopped")
		require.NotContains(t, string(logs), "DATA RACE")
	})
}

// TestCLIWorkRefusesBadFlags checks work's flags before it touches a
// database.
func TestCLIWorkRefusesBadFlags(t *testing.T) {
	bin := clitest.Binary(t)
	l := &lockstepCLI{&clitest.CLI{T: t, Bin: bin, DSN: "sqlite:" + filepath.Join(t.TempDir(), "q.db")}}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"work"}, "lockstep: --kind (exec with --command, or demo) or --exec KIND=COMMAND is required"},
		{[]string{"work", "--exec", "thumbnail"}, `lockstep: --exec "thumbnail": want KIND=COMMAND`},
		{[]string{"work", "--exec", "=./x.sh"}, `lockstep: --exec "=./x.sh": want KIND=COMMAND`},
		{[]string{"work", "--exec", "a=true", "--exec", "a=false"}, `lockstep: --exec "a=false": add worker: kind "a" is already registered`},
		{[]string{"work", "--kind", "demo", "--exec-timeout", "1s"}, "lockstep: --exec-timeout is only used with --kind exec or --exec"},
		{[]string{"work", "--kind", "exec"}, "lockstep: --kind exec needs --command, the command line to run for each job"},
		{[]string{"work", "--kind", "cron"}, `lockstep: unknown --kind "cron": use exec, demo or ledger`},
		{[]string{"work", "--kind", "demo", "--command", "true"}, "lockstep: --command is only used with --kind exec"},
		{[]string{"work", "--kind", "demo", "--queue", "a=0"}, `lockstep: --queue "a=0": the number of workers after = must be between 1 and 10000`},
		{[]string{"work", "--kind", "demo", "--queue", "a", "--queue", "a=2"}, `lockstep: --queue "a" is given twice`},
		{[]string{"work", "--kind", "demo", "--workers", "0"}, "lockstep: --workers must be between 1 and 10000, got 0"},
		{[]string{"work", "--kind", "demo", "--heartbeat", "1m"}, "lockstep: --reap-after (1m0s) must exceed twice --heartbeat (1m0s), or live jobs would be reaped"},
		{[]string{"work", "--kind", "exec", "--command", "true", "--exec-timeout", "-1s"}, "lockstep: --exec-timeout must not be negative, got -1s"},
		{[]string{"work", "--kind", "demo"}, "lockstep: start: schema version mismatch: the schema is at migration 0"},
	} {
		got := l.Fail(tc.args...)
		require.True(t, strings.HasPrefix(got, tc.want), "%v:\n got %s\nwant %s", tc.args, got, tc.want)
	}
}

// TestCLIWorkDemoKinds: --kind demo registers exactly the demo's kinds.
func TestCLIWorkDemoKinds(t *testing.T) {
	ws := lockstep.NewWorkers()
	require.NoError(t, addDemoWorkers(ws))
	got, want := ws.Kinds(), demoWorkers(&slowWorker{}).Kinds()
	slices.Sort(got)
	slices.Sort(want)
	require.Equal(t, want, got)
}

// TestCLIHelpListsCommands: the new commands are in the root's help.
func TestCLIHelpListsCommands(t *testing.T) {
	code, out, errOut := runCLI(t, "--help")
	require.Equal(t, 0, code, errOut)
	for _, cmd := range []string{"enqueue", "runs", "jobs", "cancel", "retry", "stats", "history", "queues", "work"} {
		require.Regexp(t, `(?m)^\s+`+cmd+`\s`, out)
	}
}

// processAlive reports whether pid runs (not gone, not a zombie).
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !os.IsNotExist(err)
	}
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// TestCLIOutputEscapesControlCharacters: text read from the database (an
// error history holding a command's stderr, args, a run's name) reaches
// the terminal with its control characters escaped, never as escape
// sequences; --json keeps it exact.
func TestCLIOutputEscapesControlCharacters(t *testing.T) {
	const red = "\x1b[31m"
	noControls := func(t *testing.T, out string) {
		t.Helper()
		for _, r := range out {
			require.False(t, (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f), "control character %U in:\n%s", r, out)
		}
	}
	j := &lockstep.JobRow{
		ID: 7, Queue: "default", Kind: "exec", Status: lockstep.StatusFailed, Attempts: 2, MaxAttempts: 2,
		Args:      []byte("{\"title\": \"\u009b2J\"}"),
		LastError: "exec: command exited with code 3; stderr:\nboom " + red + "red\x1b[0m\a",
		Errors: []lockstep.AttemptError{
			{Attempt: 1, Error: "first\r\n\tindented " + red + "red\x1b[0m\rover\x00"},
			{Attempt: 2, Error: "exec: command exited with code 3; stderr:\nboom " + red + "red\x1b[0m\a"},
		},
	}
	var table bytes.Buffer
	require.NoError(t, writeJobsTable(&table, []*lockstep.JobRow{j}))
	noControls(t, table.String())
	require.Contains(t, table.String(), `stderr: boom \x1b[31mred\x…`, "escaped, then cut")

	var show bytes.Buffer
	require.NoError(t, writeJobDetail(&show, j, lockstep.QueueLimits{}))
	noControls(t, show.String())
	require.Contains(t, show.String(), "  attempt 1 at -:\n    first\n    \tindented \\x1b[31mred\\x1b[0m\\rover\\x00\n", "newlines and tabs kept, CR escaped")
	require.Contains(t, show.String(), "  attempt 2 at -:\n    exec: command exited with code 3; stderr:\n    boom \\x1b[31mred\\x1b[0m\\x07\n")
	require.Contains(t, show.String(), `"title": "\u009b2J"`)
	require.Regexp(t, `(?m)^last error:\s+exec: command exited with code 3; stderr: boom \\x1b\[31mred\\x1b\[0m\\x07$`, show.String())
	require.Equal(t, "a\\x1bb\\u009b\\xff\\n\\t√", outSafe("a\x1bb\u009b\xff\n\t√", false))
	require.Equal(t, "a\\x1bb\n\t√", outSafe("a\x1bb\n\t√", true))

	// Through the commands: a run's name and args as stored.
	dsnURL := "sqlite:" + filepath.Join(t.TempDir(), "q.db")
	code, _, errOut := runCLI(t, "--dsn", dsnURL, "migrate", "up")
	require.Equal(t, 0, code, errOut)
	// A run name with control characters is refused now; one written by
	// an older version or another tool is shown escaped.
	code, _, errOut = runCLI(t, "--dsn", dsnURL, "enqueue", "exec", "--new-run", "nightly"+red+"\x1b]0;pwned\a", "{}")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "contains a control or invalid character")
	code, out, errOut := runCLI(t, "--dsn", dsnURL, "enqueue", "exec", "--new-run", "nightly", "{\"title\": \"\u009b2J\"}")
	require.Equal(t, 0, code, errOut)
	id := strings.TrimSpace(out)
	drv, err := dsn.Open(context.Background(), dsnURL)
	require.NoError(t, err)
	_, err = drv.DB().Exec("UPDATE lockstep_runs SET name = ?", "nightly"+red+"\x1b]0;pwned\a")
	require.NoError(t, err)
	require.NoError(t, drv.Close())
	code, out, errOut = runCLI(t, "--dsn", dsnURL, "runs")
	require.Equal(t, 0, code, errOut)
	noControls(t, out)
	require.Contains(t, out, `nightly\x1b[31m\x1b]0;pwned\x07`)
	code, out, errOut = runCLI(t, "--dsn", dsnURL, "jobs", "show", id)
	require.Equal(t, 0, code, errOut)
	noControls(t, out)
	require.Contains(t, out, `"title": "\u009b2J"`)
	var runs runsListOut
	code, out, errOut = runCLI(t, "--dsn", dsnURL, "runs", "--json")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &runs))
	require.Equal(t, "nightly"+red+"\x1b]0;pwned\a", runs.Runs[0].Name, "JSON is exact")
	var job jobOut
	code, out, errOut = runCLI(t, "--dsn", dsnURL, "jobs", "show", id, "--json")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &job))
	require.JSONEq(t, "{\"title\": \"\u009b2J\"}", string(job.Args))
}
