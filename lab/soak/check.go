package soak

import (
	"fmt"
	"strings"

	"github.com/lockstep-queue/lockstep/internal/statusaudit"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// reapMarker starts the last_error the reaper writes (driver/internal/
// sqlexec JobReap: "heartbeat lost: no heartbeat for over …"), which tells a
// reap from a worker's failure in the audit.
const reapMarker = "heartbeat lost"

// step is what one audited transition was.
type step int

const (
	stepIllegal step = iota
	stepClaim
	stepDone
	stepRetry
	stepSnooze
	stepReap
	stepFailed
	stepReapFailed
	stepCancel
	stepWait     // a workflow step set WAITING by its own insert
	stepPromote  // WAITING → PENDING: its last dependency ended
	stepRetryJob // FAILED → PENDING: RetryJob
	stepRevive   // CANCELLED → WAITING or PENDING: a retry brought it back
	stepBlock    // PENDING → BLOCKED: a claim found its key at its limit, or its sequence busy
	stepUnblock  // BLOCKED → PENDING: a release found its key with room
)

func (k step) String() string {
	return [...]string{"an illegal change", "claim", "done", "retry", "snooze", "reap", "failed", "reap to FAILED", "cancel",
		"wait", "promotion", "RetryJob", "revival", "block", "release"}[k]
}

func stepOf(t transition) step {
	reaped := t.Errored && strings.HasPrefix(t.LastError, reapMarker)
	switch {
	case t.From == rowtype.StatusPending && t.To == rowtype.StatusRunning:
		return stepClaim
	case (t.From == rowtype.StatusPending || t.From == rowtype.StatusRunning || t.From == rowtype.StatusWaiting || t.From == rowtype.StatusBlocked) &&
		t.To == rowtype.StatusCancelled:
		return stepCancel
	case t.From == rowtype.StatusPending && t.To == rowtype.StatusBlocked:
		return stepBlock
	case t.From == rowtype.StatusBlocked && t.To == rowtype.StatusPending:
		return stepUnblock
	case t.From == rowtype.StatusPending && t.To == rowtype.StatusWaiting && t.Attempts == 0:
		return stepWait
	case t.From == rowtype.StatusWaiting && t.To == rowtype.StatusPending:
		return stepPromote
	case t.From == rowtype.StatusFailed && t.To == rowtype.StatusPending:
		return stepRetryJob
	case t.From == rowtype.StatusCancelled && (t.To == rowtype.StatusWaiting || t.To == rowtype.StatusPending):
		return stepRevive
	case t.From != rowtype.StatusRunning:
		return stepIllegal
	case t.To == rowtype.StatusDone:
		return stepDone
	case t.To == rowtype.StatusPending && t.Snoozed:
		return stepSnooze
	case t.To == rowtype.StatusPending && reaped:
		return stepReap
	case t.To == rowtype.StatusPending && t.Errored:
		return stepRetry
	case t.To == rowtype.StatusFailed && reaped:
		return stepReapFailed
	case t.To == rowtype.StatusFailed && t.Errored:
		return stepFailed
	}
	return stepIllegal
}

func terminal(s rowtype.JobStatus) bool {
	return s == rowtype.StatusDone || s == rowtype.StatusFailed || s == rowtype.StatusCancelled
}

// checker holds what the walk over the audit learns, for the cross-checks.
type checker struct {
	res     *Result
	l       *ledger
	claimed map[ref]bool
	ended   map[ref]step // how each claimed attempt stopped running
}

// check compares the ledger, the audit and the final rows and fills res.
// The load is over: the ledger's lock is held only for form's sake.
func (s *soak) check(res *Result, jobs []*rowtype.JobRow, audit map[int64][]transition, before, after deadlockReading) {
	l := s.ledger
	l.mu.Lock()
	defer l.mu.Unlock()
	c := &checker{res: res, l: l, claimed: map[ref]bool{}, ended: map[ref]step{}}

	callbacks := c.adoptCallbacks(jobs)
	audit = c.insertedWaiting(audit, callbacks)
	final := make(map[int64]*rowtype.JobRow, len(jobs))
	for _, j := range jobs {
		final[j.ID] = j
		switch j.Status {
		case rowtype.StatusDone:
			res.Done++
		case rowtype.StatusFailed:
			res.Failed++
		case rowtype.StatusCancelled:
			res.Cancelled++
		default:
			res.Lost++
			c.problem("job %d is still %s after the drain", j.ID, j.Status)
		}
		if _, ok := l.jobs[j.ID]; !ok {
			c.problem("job %d is in the table, but the soak never enqueued it", j.ID)
		}
		// The last claim of every job was a registered process of the
		// soak's (the dead worker's direct claims name none: NULL).
		if _, ok := l.processes[j.ClaimedBy]; j.ClaimedBy != "" && !ok {
			c.problem("job %d's claimed_by %q names no process the soak's clients registered", j.ID, j.ClaimedBy)
		}
		c.walk(j, audit[j.ID])
		c.final(j, audit[j.ID])
	}
	for id := range l.jobs {
		if final[id] == nil {
			res.Lost++
			c.problem("job %d was enqueued and is gone", id)
		}
	}
	for id := range audit {
		if final[id] == nil {
			c.problem("the audit has changes of job %d, which is not in the table", id)
		}
	}
	c.crossCheck()
	c.historyCheck(s.history, final)
	c.flows(final, audit, callbacks)
	res.Limited = c.limitChecks(s, final, audit)

	res.JobsEnqueued = len(l.jobs)
	res.RunsCreated, res.RunsCancelled, res.EnqueueRefused = len(l.runs), l.runsCancelled, l.enqueueRefused
	res.RunCancelsRefused = l.runCancelsRefused
	res.SettingsRemovals = l.settingsRemovals
	res.BulkBatches, res.BulkPreviews = l.bulkBatches, l.bulkPreviews
	res.Searches, res.SearchesIndexed = l.searches, l.searchesIndexed
	res.Processes, res.ClaimsNamed = len(l.processes), l.claimsNamed
	res.ClaimsAfterKey = l.claimsAfterKey
	res.JobCancelsRequested, res.JobCancelsApplied = len(l.jobCancelTried), len(l.jobCancelApplied)
	res.Executions = l.execCount
	if secs := (res.Load + res.Drain).Seconds(); secs > 0 {
		res.ExecutionsPerSecond = float64(l.execCount) / secs
	}
	res.DeadClaims, res.StaleFinishes, res.StaleFinishesRefused = len(l.deadClaims), l.staleAttempted, l.staleRefused
	res.DeadlockCounter = after.source
	if before.counted && after.counted {
		d := after.value - before.value
		res.Deadlocks = &d
		if d > 0 {
			c.problem("the server counted %d deadlocks during the soak (%s)", d, after.source)
		}
	}
	for _, e := range s.logs.errors() {
		c.problem("%s", e)
	}
	res.RetriedErrors = retriedErrorsLocked(l)
	res.Problems, res.ProblemCount = l.problems, l.problemCount
}

func (c *checker) problem(format string, args ...any) {
	c.l.problemLocked(fmt.Sprintf(format, args...))
}

// walk follows one job's audited changes from PENDING: each must start
// where the last ended, a claim must add exactly one attempt and nothing
// else may change it, and a terminal status is entered once and never left
// — but by the soak's RetryJob of a FAILED workflow step, or the revival
// of a step that failure had cancelled, after the soak retried a step of
// its run.
func (c *checker) walk(j *rowtype.JobRow, trs []transition) {
	state, attempts, terminals, leaves, left := rowtype.StatusPending, 0, 0, 0, false
	for _, t := range trs {
		if t.From != state {
			c.problem("job %d: audit seq %d changes it from %s, but it was %s", j.ID, t.Seq, t.From, state)
		}
		k := stepOf(t)
		switch {
		case k == stepRetryJob && c.l.flow.retryTried[j.ID]:
			leaves++
		case k == stepRevive && c.l.flow.runRetryTried[c.l.jobs[j.ID].runID] && c.l.jobs[j.ID].runID != 0:
			leaves++
		case k == stepRetryJob || k == stepRevive:
			c.problem("job %d: audit seq %d is a %s (%s→%s), but the soak retried neither it nor a job of its run", j.ID, t.Seq, k, t.From, t.To)
			left = true
		case terminal(t.From):
			left = true
		}
		if t.Seq > 0 { // not the insert of a WAITING job (insertedWaiting)
			if p := statusaudit.TimesProblem(t); p != "" {
				c.problem("job %d: audit seq %d: %s", j.ID, t.Seq, p)
			}
		}
		switch k {
		case stepIllegal:
			c.problem("job %d: audit seq %d is an illegal change %s→%s (errored %t, snoozed %t, last error %q)",
				j.ID, t.Seq, t.From, t.To, t.Errored, t.Snoozed, t.LastError)
		case stepClaim:
			if t.Attempts != attempts+1 {
				c.problem("job %d: claimed at attempt %d after attempt %d", j.ID, t.Attempts, attempts)
			}
			c.claimed[ref{j.ID, t.Attempts}] = true
			c.res.Claims++
		default:
			if t.Attempts != attempts {
				c.problem("job %d: %s changed attempts from %d to %d", j.ID, k, attempts, t.Attempts)
			}
			if t.From == rowtype.StatusRunning {
				c.ended[ref{j.ID, t.Attempts}] = k
			}
		}
		c.count(k, t)
		state, attempts = t.To, t.Attempts
		if terminal(t.To) {
			terminals++
		}
	}
	if terminals > 1+leaves || left {
		c.res.DoubleFinished++
		c.problem("job %d entered a terminal status %d times (left one: %t)", j.ID, terminals, left)
	}
	if state != j.Status || attempts != j.Attempts {
		c.problem("job %d is %s at attempt %d, but its audit ends at %s, attempt %d", j.ID, j.Status, j.Attempts, state, attempts)
	}
}

func (c *checker) count(k step, t transition) {
	switch k {
	case stepRetry:
		c.res.Retries++
	case stepSnooze:
		c.res.Snoozes++
	case stepReap:
		c.res.Reaps++
	case stepReapFailed:
		c.res.Reaps++
		c.res.ReapsToFailed++
	case stepCancel:
		switch t.From {
		case rowtype.StatusRunning:
			c.res.CancelledRunning++
		case rowtype.StatusBlocked:
			c.res.BlockedCancelled++
		}
	case stepBlock:
		c.res.Blocks++
	case stepUnblock:
		c.res.Unblocks++
	}
}

// final checks a job's last status against what explains it, and its
// finished_at: set on every final job but one cancelled while RUNNING,
// which keeps its slot until its worker returns (job.release sets it). A
// dead worker never returns; a pool's worker does, and its return must
// have recorded it (and, in a limited queue, freed the slot).
func (c *checker) final(j *rowtype.JobRow, trs []transition) {
	if j.Status.Final() && j.FinishedAt.IsZero() {
		var cancel transition
		for _, t := range trs {
			if t.To == j.Status {
				cancel = t
			}
		}
		r := ref{j.ID, j.Attempts}
		switch {
		case j.Status != rowtype.StatusCancelled || cancel.From != rowtype.StatusRunning:
			c.problem("job %d is %s (from %s), but its finished_at is not set", j.ID, j.Status, cancel.From)
		case c.l.deadClaims[r]:
			// Its worker died: the slot is free once its heartbeat is stale.
		default:
			c.problem("job %d was cancelled while RUNNING in queue %s and its worker returned (ledger: %+v), but finished_at is unset: its slot was never released",
				j.ID, j.Queue, c.l.execs[r])
		}
	}
	note := c.l.jobs[j.ID]
	switch j.Status {
	case rowtype.StatusDone:
		if e, ok := c.l.execs[ref{j.ID, j.Attempts}]; !ok || e.outcome != outcomeOK {
			c.problem("job %d is DONE at attempt %d, but no worker succeeded at that attempt (ledger: %+v)", j.ID, j.Attempts, e)
		}
	case rowtype.StatusFailed:
		failedStep := note.mode == modeFlow && c.l.flow.jobs[j.ID].fail > 0 && c.l.execs[ref{j.ID, j.Attempts}].outcome == outcomeError
		if note.mode != ModeFailAlways && !failedStep && c.ended[ref{j.ID, j.Attempts}] != stepReapFailed {
			c.problem("job %d (%s) FAILED at attempt %d: %s", j.ID, note.mode, j.Attempts, j.LastError)
		}
	case rowtype.StatusCancelled:
		// A workflow's own cancels (a failed dependency, a callback whose
		// condition cannot hold) are checked in flows.
		if !c.l.jobCancelTried[j.ID] && !(note.runID != 0 && c.l.runCancelTried[note.runID]) && note.mode != modeFlow && note.mode != modeCallback {
			c.problem("job %d is CANCELLED, but the soak cancelled neither it nor its run %d", j.ID, note.runID)
		}
	}
	if c.l.jobCancelApplied[j.ID] && j.Status != rowtype.StatusCancelled {
		c.problem("job %d: CancelJob reported it cancelled, but it ended %s", j.ID, j.Status)
	}
}

// crossCheck matches the executions and the dead worker's claims against
// the claims the audit saw, both ways.
func (c *checker) crossCheck() {
	for r := range c.l.deadClaims {
		if !c.claimed[r] {
			c.problem("the dead worker claimed job %d attempt %d, which the audit never saw claimed", r.id, r.attempt)
			continue
		}
		switch k, ok := c.ended[r]; {
		case !ok:
			c.problem("job %d attempt %d, abandoned by the dead worker, never stopped running", r.id, r.attempt)
		case k == stepReap || k == stepReapFailed || k == stepCancel:
		default:
			c.problem("job %d attempt %d, abandoned by the dead worker, ended by %s instead of a reap or cancel", r.id, r.attempt, k)
		}
	}
	for r, e := range c.l.execs {
		if c.l.deadClaims[r] {
			c.problem("pool %d ran job %d attempt %d, which the dead worker had claimed", e.pool, r.id, r.attempt)
		}
		if !c.claimed[r] {
			c.problem("pool %d ran job %d attempt %d, which the audit never saw claimed", e.pool, r.id, r.attempt)
		}
	}
	// A claim nobody had committed without the claimer knowing: its job
	// runs again only after a reap.
	for r := range c.claimed {
		if _, ran := c.l.execs[r]; !ran && !c.l.deadClaims[r] {
			c.problem("job %d attempt %d was claimed, but no worker ran it and the dead worker did not claim it", r.id, r.attempt)
		}
	}
	for r, k := range c.ended {
		if (k == stepReap || k == stepReapFailed) && !c.l.deadClaims[r] {
			c.res.LiveReaps++
		}
	}
}
