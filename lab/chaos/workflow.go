package chaos

import (
	"fmt"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/statusaudit"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// workflowRun makes jobs a workflow — a root, a fan-out of the jobs
// between, a fan-in, and a last job after it (a chain when there are fewer
// than four) — and returns the run's options: the three callbacks. The
// jobs never fail, so in a run that is not cancelled every job must end
// DONE, the success and complete callbacks fire exactly once and the
// failure callback is cancelled, however many processes are killed.
func workflowRun(jobs []lockstep.InsertManyParams) *lockstep.RunOpts {
	n := len(jobs)
	for i := range jobs {
		jobs[i].Key = fmt.Sprintf("j%d", i)
	}
	key := func(i int) string { return jobs[i].Key }
	if n < 4 {
		for i := 1; i < n; i++ {
			jobs[i].DependsOn = []string{key(i - 1)}
		}
	} else {
		var mids []string
		for i := 1; i <= n-3; i++ {
			jobs[i].DependsOn = []string{key(0)}
			mids = append(mids, key(i))
		}
		jobs[n-2].DependsOn = mids
		jobs[n-1].DependsOn = []string{key(n - 2)}
	}
	opts := &lockstep.RunOpts{}
	for _, on := range []lockstep.CallbackOn{lockstep.CallbackOnSuccess, lockstep.CallbackOnFailure, lockstep.CallbackOnComplete} {
		opts.Callbacks = append(opts.Callbacks, lockstep.RunCallback{On: on, Args: LedgerCallback{On: on}, Opts: &lockstep.InsertOpts{MaxAttempts: 1000}})
	}
	return opts
}

// workflows checks the workflow runs: no job was promoted before each of
// its dependencies was DONE (by the audit's sequence, drawn inside each
// status change's transaction) and none started before each dependency's
// last execution had ended (by the ledger); each callback fired at most
// once, and in a run not cancelled the success and complete callbacks
// exactly once and the failure callback never.
func (c *checker) workflows(jobs map[int64]jobState, audit map[int64][]statusaudit.Transition, ledger map[int64][]execution, k Known, callbacks map[int64]bool) {
	steps := map[int64][]int64{} // run → its jobs, callbacks not included
	for id, run := range k.Jobs {
		if k.Workflows[run] && !callbacks[id] {
			steps[run] = append(steps[run], id)
		}
	}
	at := func(id, seq int64) rowtype.JobStatus {
		st := rowtype.StatusPending
		for _, t := range audit[id] {
			if t.Seq >= seq {
				break
			}
			st = t.To
		}
		return st
	}
	promotions := func(id int64) []statusaudit.Transition {
		var out []statusaudit.Transition
		for _, t := range audit[id] {
			if t.From == rowtype.StatusWaiting && t.To == rowtype.StatusPending {
				out = append(out, t)
			}
		}
		return out
	}
	for id := range k.Jobs {
		c.res.Promotions += len(promotions(id))
	}
	// lastEnd is when a DONE job's final execution recorded its end.
	lastEnd := func(id int64) (execution, bool) {
		for _, e := range ledger[id] {
			if e.attempt == jobs[id].attempts && e.complete {
				return e, true
			}
		}
		return execution{}, false
	}
	ordered := func(id int64, deps []int64) {
		for _, p := range promotions(id) {
			for _, d := range deps {
				if st := at(d, p.Seq); st != rowtype.StatusDone {
					c.problem("job %d became PENDING (audit seq %d) while its dependency %d was %s", id, p.Seq, d, st)
				}
			}
		}
		for _, e := range ledger[id] {
			for _, d := range deps {
				de, ok := lastEnd(d)
				switch {
				case !ok:
					c.problem("job %d attempt %d ran (pid %d), but its dependency %d has no completed execution at its final attempt (%s)", id, e.attempt, e.pid, d, jobs[d].status)
				case e.started.Before(de.ended):
					c.problem("job %d attempt %d started at %s, before its dependency %d ended at %s", id, e.attempt, e.started.Format("15:04:05.000000"), d, de.ended.Format("15:04:05.000000"))
				}
			}
		}
	}
	for id, deps := range k.Deps {
		ordered(id, deps)
	}
	for id := range callbacks {
		j := jobs[id]
		c.res.Callbacks++
		on := lockstep.CallbackOn(j.callback)
		fired := promotions(id)
		if len(fired) > 0 {
			c.res.CallbacksFired++
		}
		if len(fired) > 1 {
			c.problem("the %s callback %d of run %d fired %d times", on, id, j.runID, len(fired))
		}
		if on != lockstep.CallbackOnFailure {
			// Success and completion: every job DONE (none can fail here).
			ordered(id, steps[j.runID])
		}
		if k.CancelledRuns[j.runID] {
			continue
		}
		want := on != lockstep.CallbackOnFailure
		switch {
		case want && (len(fired) != 1 || j.status != rowtype.StatusDone):
			c.problem("the %s callback %d of run %d fired %d times and is %s; want once, DONE", on, id, j.runID, len(fired), j.status)
		case !want && (len(fired) != 0 || j.status != rowtype.StatusCancelled):
			c.problem("the failure callback %d of run %d, where no job failed, fired %d times and is %s; want CANCELLED", id, j.runID, len(fired), j.status)
		}
	}
}
