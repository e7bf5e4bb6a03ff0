package chaos

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/internal/statusaudit"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// maxProblems bounds the problem list: past it only the count grows.
const maxProblems = 50

// Known is what a run knows of its own accord, not from the queue: the
// jobs it enqueued (and their runs), the runs it cancelled, the processes
// it killed.
type Known struct {
	Jobs          map[int64]int64 // job id → run id (0: none)
	CancelledRuns map[int64]bool
	Killed        map[int]bool // pids sent SIGKILL
	// Deps: each workflow job's dependencies; Workflows: the runs that are
	// workflows, each with the three callbacks (their ids are read from
	// the table: InsertRun does not return them).
	Deps      map[int64][]int64
	Workflows map[int64]bool
}

// Check reads the final rows, the status audit (package statusaudit,
// installed before the jobs ran) and the ledger, and reports every broken
// promise against k in Result.Problems. Run calls it; so do tests that
// kill a process at a chosen moment.
func Check(ctx context.Context, drv driver.Driver, k Known) (*Result, error) {
	res := &Result{Dialect: drv.Dialect(), Jobs: len(k.Jobs), Kills: len(k.Killed)}
	return res, check(ctx, drv, k, res)
}

type jobState struct {
	status   rowtype.JobStatus
	attempts int
	runID    int64
	callback string
}

// checker compares the final rows, the status audit and the ledger with
// what the run knows.
type checker struct {
	res *Result
}

func (c *checker) problem(format string, args ...any) {
	c.res.ProblemCount++
	if len(c.res.Problems) < maxProblems {
		c.res.Problems = append(c.res.Problems, fmt.Sprintf(format, args...))
	}
}

func terminal(s rowtype.JobStatus) bool {
	return s == rowtype.StatusDone || s == rowtype.StatusFailed || s == rowtype.StatusCancelled
}

func readJobs(ctx context.Context, drv driver.Driver) (map[int64]jobState, error) {
	rows, err := drv.DB().QueryContext(ctx, "SELECT id, status, attempts, run_id, callback FROM lockstep_jobs ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("chaos: read jobs: %w", err)
	}
	defer rows.Close()
	out := map[int64]jobState{}
	for rows.Next() {
		var id int64
		var st string
		var j jobState
		var runID sql.NullInt64
		var callback sql.NullString
		if err := rows.Scan(&id, &st, &j.attempts, &runID, &callback); err != nil {
			return nil, fmt.Errorf("chaos: read jobs: %w", err)
		}
		j.status, j.runID, j.callback = rowtype.JobStatus(st), runID.Int64, callback.String
		out[id] = j
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("chaos: read jobs: %w", err)
	}
	return out, nil
}

// check reads the three records and adds what they show to res.
func check(ctx context.Context, drv driver.Driver, k Known, res *Result) error {
	jobs, err := readJobs(ctx, drv)
	if err != nil {
		return err
	}
	audit, _, err := statusaudit.Read(ctx, drv)
	if err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	ledger, n, err := readLedger(ctx, drv)
	if err != nil {
		return err
	}
	res.Executions = n
	c := &checker{res: res}
	// The workflows' callbacks are the run's jobs too.
	known := make(map[int64]int64, len(k.Jobs))
	for id, run := range k.Jobs {
		known[id] = run
	}
	callbacks := map[int64]bool{}
	for id, j := range jobs {
		if j.callback != "" && k.Workflows[j.runID] {
			known[id], callbacks[id] = j.runID, true
		}
	}
	k.Jobs = known
	res.Jobs = len(known)
	for id := range jobs {
		if _, ok := k.Jobs[id]; !ok {
			c.problem("job %d is in the table but was never enqueued by the run", id)
		}
	}
	for id, run := range k.Jobs {
		j, ok := jobs[id]
		if !ok {
			c.problem("job %d (run %d) was enqueued and is gone", id, run)
			continue
		}
		c.job(id, j, k.CancelledRuns[run] || callbacks[id], audit[id], ledger[id], k.Killed)
	}
	c.workflows(jobs, audit, ledger, k, callbacks)
	return nil
}

// job checks one job against the audit and the ledger.
func (c *checker) job(id int64, j jobState, runCancelled bool, trs []statusaudit.Transition, execs []execution, killed map[int]bool) {
	switch j.status {
	case rowtype.StatusDone:
		c.res.Done++
	case rowtype.StatusCancelled:
		c.res.Cancelled++
		if !runCancelled {
			c.problem("job %d is CANCELLED but its run was not cancelled", id)
		}
	default:
		c.problem("job %d ended %s after %d attempts; want DONE (or CANCELLED in a cancelled run)", id, j.status, j.attempts)
	}

	// Every change is one the queue makes, one after the other; only a
	// claim adds an attempt; finished_at is as each change must leave it
	// (statusaudit says which).
	attempts := 0
	for i, t := range trs {
		if i > 0 && t.From != trs[i-1].To {
			c.problem("job %d: audit seq %d changes it from %s, but it was %s", id, t.Seq, t.From, trs[i-1].To)
		}
		if !statusaudit.Allowed(t.From, t.To) {
			c.problem("job %d: audit seq %d is a change %s→%s the queue never makes", id, t.Seq, t.From, t.To)
		}
		// A job is inserted at attempt 0.
		if want := attempts + statusaudit.Attempts(t.From, t.To); t.Attempts != want {
			c.problem("job %d: audit seq %d (%s→%s) leaves it at attempt %d, after attempt %d", id, t.Seq, t.From, t.To, t.Attempts, attempts)
		}
		attempts = t.Attempts
		if p := statusaudit.TimesProblem(t); p != "" {
			c.problem("job %d: audit seq %d: %s", id, t.Seq, p)
		}
	}

	// The final state was written exactly once, and nothing changed after.
	finals := 0
	for _, t := range trs {
		if terminal(t.From) {
			c.problem("job %d: audit seq %d changes it from %s, a final state, to %s", id, t.Seq, t.From, t.To)
		}
		if terminal(t.To) {
			finals++
			if t.To != j.status {
				c.problem("job %d: audit seq %d made it %s but it is %s", id, t.Seq, t.To, j.status)
			}
			if t.To == rowtype.StatusDone && t.Attempts != j.attempts {
				c.problem("job %d: DONE written at attempt %d but the job has %d", id, t.Attempts, j.attempts)
			}
		}
		if t.From == rowtype.StatusRunning && t.To == rowtype.StatusPending && t.Errored {
			c.res.Reaps++
		}
	}
	if finals != 1 {
		c.problem("job %d: its final state was written %d times", id, finals)
	}

	// At most one execution per attempt; every attempt before the last
	// that ran was on a process that was killed.
	byAttempt := map[int]execution{}
	for _, e := range execs {
		if prev, dup := byAttempt[e.attempt]; dup {
			c.problem("job %d: attempt %d executed twice (pids %d and %d)", id, e.attempt, prev.pid, e.pid)
			continue
		}
		byAttempt[e.attempt] = e
		if e.complete {
			c.res.Completions++
		}
		if e.attempt > j.attempts {
			c.problem("job %d: executed at attempt %d but the job has only %d", id, e.attempt, j.attempts)
		}
	}
	if len(execs) > 1 {
		c.res.ReExecuted++
	}
	for _, e := range execs {
		if e.attempt < j.attempts && !killed[e.pid] {
			c.problem("job %d: attempt %d ran in pid %d, which was never killed, yet the job was claimed again (attempt %d)", id, e.attempt, e.pid, j.attempts)
		}
	}
	for _, t := range trs {
		if t.From == rowtype.StatusRunning && t.To == rowtype.StatusPending && t.Errored {
			if e, ok := byAttempt[t.Attempts]; ok && !killed[e.pid] {
				c.problem("job %d: attempt %d was reaped but its pid %d was never killed", id, t.Attempts, e.pid)
			}
		}
	}
	if j.status == rowtype.StatusDone {
		e, ok := byAttempt[j.attempts]
		switch {
		case !ok:
			c.problem("job %d is DONE at attempt %d, which the ledger never saw start", id, j.attempts)
		case !e.complete:
			c.problem("job %d is DONE at attempt %d, whose execution never completed", id, j.attempts)
		}
	}
}
