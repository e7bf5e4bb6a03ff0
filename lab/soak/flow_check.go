package soak

import (
	"encoding/json"
	"sort"
	"strconv"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// The workflow checks. Two clocks say when a step could start: the audit's
// sequence, drawn inside the transaction of each status change (so a
// change that caused another — a dependency's DONE and its dependent's
// promotion, in one transaction or two — has the smaller number), and the
// soak's own record of when each execution started and ended.

// adoptCallbacks finds the callbacks of the soak's workflow runs among the
// rows (InsertRun does not return their ids) and records them as the
// soak's: run → condition → callback job.
func (c *checker) adoptCallbacks(jobs []*rowtype.JobRow) map[int64]map[lockstep.CallbackOn]int64 {
	out := map[int64]map[lockstep.CallbackOn]int64{}
	for _, j := range jobs {
		r := c.l.flow.runs[j.RunID]
		if j.Callback == "" || r == nil {
			continue
		}
		on := lockstep.CallbackOn(j.Callback)
		if out[j.RunID] == nil {
			out[j.RunID] = map[lockstep.CallbackOn]int64{}
		}
		if prev, dup := out[j.RunID][on]; dup || !r.callbacks[on] {
			c.problem("run %d has a %s callback %d (another: %d) it was not created with", j.RunID, on, j.ID, prev)
		}
		out[j.RunID][on] = j.ID
		c.l.jobs[j.ID] = jobNote{mode: modeCallback, runID: j.RunID}
	}
	for runID, r := range c.l.flow.runs {
		for on := range r.callbacks {
			if _, ok := out[runID][on]; !ok {
				c.problem("run %d was created with a %s callback, which is not in the table", runID, on)
			}
		}
	}
	return out
}

// insertedWaiting records, for the walk, that a workflow step with
// dependencies and every callback started WAITING: job.insert_flow inserts
// them so, and the audit sees only changes. The insert is put first, at
// sequence 0, as the PENDING → WAITING it amounts to.
func (c *checker) insertedWaiting(audit map[int64][]transition, callbacks map[int64]map[lockstep.CallbackOn]int64) map[int64][]transition {
	out := make(map[int64][]transition, len(audit))
	for id, trs := range audit {
		out[id] = trs
	}
	waiting := func(id int64) {
		out[id] = append([]transition{{JobID: id, Seq: 0, From: rowtype.StatusPending, To: rowtype.StatusWaiting}}, out[id]...)
	}
	for id, note := range c.l.flow.jobs {
		if len(note.deps) > 0 {
			waiting(id)
		}
	}
	for _, byOn := range callbacks {
		for _, id := range byOn {
			waiting(id)
		}
	}
	return out
}

// history answers what status a job had at an audit sequence number.
type history map[int64][]transition

// at is the job's status just before seq.
func (h history) at(id, seq int64) rowtype.JobStatus {
	trs := h[id]
	i := sort.Search(len(trs), func(i int) bool { return trs[i].Seq >= seq })
	if i == 0 {
		return rowtype.StatusPending
	}
	return trs[i-1].To
}

func (h history) everFailed(id int64) bool {
	for _, t := range h[id] {
		if t.To == rowtype.StatusFailed {
			return true
		}
	}
	return false
}

// promotions are the changes that made a job claimable after waiting: a
// promotion, or a revival straight to PENDING.
func (h history) promotions(id int64) []transition {
	var out []transition
	for _, t := range h[id] {
		if k := stepOf(t); k == stepPromote || (k == stepRevive && t.To == rowtype.StatusPending) {
			out = append(out, t)
		}
	}
	return out
}

// flows checks every workflow step and callback, after the walk.
func (c *checker) flows(final map[int64]*rowtype.JobRow, audit map[int64][]transition, callbacks map[int64]map[lockstep.CallbackOn]int64) {
	f, res := &c.l.flow, c.res
	h := history(audit)
	res.Workflows = len(f.runs)
	res.WorkflowJobs = len(f.jobs)
	for runID := range f.runs {
		if c.l.runCancelTried[runID] {
			res.WorkflowRunsCancelled++
		}
	}
	res.WorkflowRetries = 0
	for _, n := range f.retried {
		res.WorkflowRetries += n
	}
	res.WorkflowRetriesRefused, res.RunClosedRefusals = f.retryRefused, f.closedRefused
	res.PromotionEvents, res.CallbackEvents = f.promotionEvents, f.callbackEvents
	for _, trs := range audit {
		for _, t := range trs {
			switch stepOf(t) {
			case stepPromote:
				res.Promotions++
			case stepRevive:
				res.Revivals++
			}
		}
	}
	for id, note := range f.jobs {
		c.step(id, note, final[id], h)
	}
	for runID, r := range f.runs {
		for on, id := range callbacks[runID] {
			res.CallbackJobs++
			c.callback(runID, r, on, id, final[id], h)
		}
	}
}

// step checks one workflow step.
func (c *checker) step(id int64, note *flowJob, j *rowtype.JobRow, h history) {
	f := &c.l.flow
	if j == nil {
		return // reported as lost by check
	}
	want := rowtype.StatusDone // what each dependency must be for it to run
	if note.runAnyway {
		want = ""
	}
	// No promotion while a dependency had not ended as the policy needs.
	for _, p := range h.promotions(id) {
		for _, d := range note.deps {
			if st := h.at(d, p.Seq); !allows(want, st) {
				c.problem("workflow job %d became PENDING (audit seq %d) while its dependency %d was %s (policy: %s)", id, p.Seq, d, st, policyName(note.runAnyway))
			}
		}
	}
	// No execution began before each dependency's successful execution had
	// ended (cancel policy), by the soak's clock; and the dependencies the
	// step read as it started were DONE.
	for _, e := range f.execs[id] {
		if note.runAnyway {
			continue
		}
		for _, d := range note.deps {
			if !c.endedOKBefore(d, e) {
				c.problem("workflow job %d attempt %d started at %s, before any execution of its dependency %d had succeeded", id, e.attempt, e.start.Format("15:04:05.000000"), d)
			}
		}
		if !e.read {
			continue
		}
		if len(e.deps) != len(note.deps) {
			c.problem("workflow job %d attempt %d read %d dependencies, but has %d", id, e.attempt, len(e.deps), len(note.deps))
		}
		for _, d := range note.deps {
			if st := e.deps[d]; st != rowtype.StatusDone {
				c.problem("workflow job %d attempt %d started while DependencyOutputs read its dependency %d as %q", id, e.attempt, d, st)
			}
		}
	}
	byTheSoak := c.l.jobCancelTried[id] || c.l.runCancelTried[note.runID]
	switch j.Status {
	case rowtype.StatusWaiting:
		c.problem("workflow job %d is still WAITING after the drain (waiting_on %d): %s", id, j.WaitingOn, c.depsText(note.deps, h))
	case rowtype.StatusCancelled:
		if byTheSoak {
			break
		}
		c.res.CancelledByDependency++
		if note.runAnyway {
			c.problem("workflow job %d runs whatever its dependencies did, yet it was CANCELLED (%s) though the soak cancelled neither it nor its run", id, j.LastError)
			break
		}
		blocked := false
		for _, d := range note.deps {
			blocked = blocked || h.last(d) == rowtype.StatusFailed || h.last(d) == rowtype.StatusCancelled
		}
		if !blocked {
			c.problem("workflow job %d is CANCELLED (%q), but none of its dependencies ended FAILED or CANCELLED: %s", id, j.LastError, c.depsText(note.deps, h))
		}
	}
}

// callback checks one callback of a run: fired at most once; exactly once
// when its condition held at the end, never otherwise (in a run the soak
// did not cancel); its args name its run and condition, and its counts
// satisfy the condition.
func (c *checker) callback(runID int64, r *flowRun, on lockstep.CallbackOn, id int64, j *rowtype.JobRow, h history) {
	fired := h.promotions(id)
	if len(fired) > 0 {
		c.res.CallbacksFired++
	}
	if len(fired) > 1 {
		c.problem("the %s callback %d of run %d fired %d times", on, id, runID, len(fired))
	}
	// When it fired, its condition held over the run's steps.
	for _, p := range fired {
		done, final, failed := 0, 0, 0
		for _, s := range r.jobs {
			st := h.at(s, p.Seq)
			if st == rowtype.StatusDone {
				done++
			}
			if st.Final() {
				final++
			}
			if st == rowtype.StatusFailed {
				failed++
			}
		}
		if !holds(on, len(r.jobs), done, final, failed) {
			c.problem("the %s callback %d of run %d fired (audit seq %d) with %d of %d steps DONE, %d final, %d FAILED", on, id, runID, p.Seq, done, len(r.jobs), final, failed)
		}
	}
	for _, e := range c.l.flow.execs[id] {
		a := e.callback
		switch {
		case a == nil:
			c.problem("callback %d ran without callback args", id)
			continue
		case a.RunID != runID || a.On != on || a.Data.On != on:
			c.problem("the %s callback %d of run %d received run %d, condition %s, data %+v", on, id, runID, a.RunID, a.On, a.Data)
		}
		n, final := 0, 0
		for st, k := range a.Counts {
			n += k
			if st.Final() {
				final += k
			}
		}
		if n != len(r.jobs) || !holds(on, len(r.jobs), a.Counts[rowtype.StatusDone], final, a.Counts[rowtype.StatusFailed]) {
			b, _ := json.Marshal(a.Counts)
			c.problem("the %s callback %d of run %d (%d steps) received counts %s", on, id, runID, len(r.jobs), b)
		}
		if on == lockstep.CallbackOnSuccess && e.outcome == outcomeOK {
			for _, s := range r.jobs {
				if !c.endedOKBefore(s, e) {
					c.problem("the success callback %d of run %d started before step %d had succeeded", id, runID, s)
				}
			}
		}
	}
	if c.l.runCancelTried[runID] || j == nil {
		return
	}
	allDone, anyFailed := true, false
	for _, s := range r.jobs {
		allDone = allDone && h.last(s) == rowtype.StatusDone
		anyFailed = anyFailed || h.everFailed(s)
	}
	want := map[lockstep.CallbackOn]bool{lockstep.CallbackOnSuccess: allDone, lockstep.CallbackOnFailure: anyFailed, lockstep.CallbackOnComplete: true}[on]
	switch {
	case want && (len(fired) != 1 || j.Status != rowtype.StatusDone):
		c.problem("the %s callback %d of run %d should have fired once (all DONE %t, a step FAILED %t), but fired %d times and is %s (%q)",
			on, id, runID, allDone, anyFailed, len(fired), j.Status, j.LastError)
	case !want && (len(fired) != 0 || j.Status != rowtype.StatusCancelled):
		c.problem("the %s callback %d of run %d should not have fired (all DONE %t, a step FAILED %t), but fired %d times and is %s",
			on, id, runID, allDone, anyFailed, len(fired), j.Status)
	}
}

// holds says whether a callback's condition holds over n steps.
func holds(on lockstep.CallbackOn, n, done, final, failed int) bool {
	switch on {
	case lockstep.CallbackOnSuccess:
		return done == n
	case lockstep.CallbackOnFailure:
		return failed > 0
	case lockstep.CallbackOnComplete:
		return final == n
	}
	return false
}

// allows says whether a dependency in status st lets its dependent run:
// want DONE (the cancel policy), or "" for any final status.
func allows(want, st rowtype.JobStatus) bool {
	if want == "" {
		return st.Final()
	}
	return st == want
}

func policyName(runAnyway bool) string {
	if runAnyway {
		return "run anyway"
	}
	return "cancel"
}

// last is the job's status at the end of the audit.
func (h history) last(id int64) rowtype.JobStatus {
	trs := h[id]
	if len(trs) == 0 {
		return rowtype.StatusPending
	}
	return trs[len(trs)-1].To
}

// endedOKBefore reports whether the step d had an execution that succeeded
// and ended before e started, by the soak's clock.
func (c *checker) endedOKBefore(d int64, e flowExec) bool {
	for _, de := range c.l.flow.execs[d] {
		if de.outcome == outcomeOK && !de.end.After(e.start) {
			return true
		}
	}
	return false
}

func (c *checker) depsText(deps []int64, h history) string {
	out := "dependencies"
	for _, d := range deps {
		out += " " + strconv.FormatInt(d, 10) + "=" + string(h.last(d))
	}
	return out
}
