package soak

import (
	"fmt"
	"time"

	"github.com/lockstep-queue/lockstep"
)

// flowJob is what the soak knows of a workflow step it created.
type flowJob struct {
	runID     int64
	deps      []int64
	runAnyway bool // the policy that applies to it, run-level default resolved
	fail      int
}

// flowRun is a workflow run the soak created.
type flowRun struct {
	jobs      []int64 // its steps, ascending
	callbacks map[lockstep.CallbackOn]bool
}

// flowExec is one execution of a workflow step or callback, by the soak's
// clock.
type flowExec struct {
	attempt    int
	start, end time.Time
	outcome    string
	// deps is what DependencyOutputs read as the step started (read says
	// whether it did).
	deps     map[int64]lockstep.JobStatus
	read     bool
	callback *lockstep.CallbackArgs[CallbackData]
}

// flowBook is the ledger's record of workflows; guarded by ledger.mu.
type flowBook struct {
	jobs  map[int64]*flowJob
	runs  map[int64]*flowRun
	order []int64 // runs in creation order, for the canceller

	recentJobs []int64 // ring of recent steps, for the canceller
	recentPos  int

	execs    map[int64][]flowExec
	failures map[int64]int // permanent failures per step
	failed   []int64       // steps that failed, not yet offered to the retrier

	retryTried    map[int64]bool
	retried       map[int64]int // retries applied
	runRetryTried map[int64]bool
	retryRefused  int // run cancelled

	closedRefused int // inserts into a run with callbacks, refused

	promotionEvents, callbackEvents int
}

func newFlowBook() flowBook {
	return flowBook{
		jobs: map[int64]*flowJob{}, runs: map[int64]*flowRun{}, recentJobs: make([]int64, 0, recentJobs),
		execs: map[int64][]flowExec{}, failures: map[int64]int{},
		retryTried: map[int64]bool{}, retried: map[int64]int{}, runRetryTried: map[int64]bool{},
	}
}

// flowCreated records a workflow run and its steps; jobs[i] is ids[i]'s.
func (l *ledger) flowCreated(runID int64, ids []int64, jobs []*flowJob, callbacks []lockstep.CallbackOn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := &l.flow
	r := &flowRun{callbacks: map[lockstep.CallbackOn]bool{}}
	for _, on := range callbacks {
		r.callbacks[on] = true
	}
	for i, id := range ids {
		if _, dup := l.jobs[id]; dup {
			l.problemLocked(fmt.Sprintf("enqueue returned job id %d twice", id))
		}
		l.jobs[id] = jobNote{mode: modeFlow, runID: runID}
		f.jobs[id] = jobs[i]
		r.jobs = append(r.jobs, id)
		if len(f.recentJobs) < cap(f.recentJobs) {
			f.recentJobs = append(f.recentJobs, id)
		} else {
			f.recentJobs[f.recentPos] = id
			f.recentPos = (f.recentPos + 1) % len(f.recentJobs)
		}
	}
	f.runs[runID] = r
	f.order = append(f.order, runID)
}

// flowFailNow reports whether a step that fails its first fail executions
// fails this one, counting it.
func (l *ledger) flowFailNow(id int64, fail int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.flow.failures[id] >= fail {
		return false
	}
	l.flow.failures[id]++
	l.flow.failed = append(l.flow.failed, id)
	return true
}

func (l *ledger) flowExec(id int64, e flowExec) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flow.execs[id] = append(l.flow.execs[id], e)
}

// takeFailed hands the retrier the steps that failed since it last asked.
func (l *ledger) takeFailed() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.flow.failed
	l.flow.failed = nil
	return out
}

// retryTried is recorded before the call: a retry that committed but
// reported an error still explains the job leaving FAILED and the run's
// revived jobs.
func (l *ledger) flowRetryTried(id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flow.retryTried[id] = true
	if j := l.flow.jobs[id]; j != nil {
		l.flow.runRetryTried[j.runID] = true
	}
}

func (l *ledger) flowRetried(id int64, applied, refused bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if applied {
		l.flow.retried[id]++
	}
	if refused {
		l.flow.retryRefused++
	}
}

func (l *ledger) flowClosedRefused() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flow.closedRefused++
}

// pickFlowRun returns one of the last window workflow runs, with callbacks
// only if withCallbacks.
func (l *ledger) pickFlowRun(window int, withCallbacks bool, pick func(n int) int) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ids []int64
	for _, id := range l.flow.order[max(0, len(l.flow.order)-window):] {
		if !withCallbacks || len(l.flow.runs[id].callbacks) > 0 {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return 0, false
	}
	return ids[pick(len(ids))], true
}

func (l *ledger) pickFlowJob(pick func(n int) int) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.flow.recentJobs) == 0 {
		return 0, false
	}
	return l.flow.recentJobs[pick(len(l.flow.recentJobs))], true
}

func (l *ledger) onFlowEvent(e lockstep.Event) {
	switch e.Kind {
	case lockstep.EventPromoted, lockstep.EventCallback, lockstep.EventLimited:
	default:
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch e.Kind {
	case lockstep.EventPromoted:
		l.flow.promotionEvents += e.Count
	case lockstep.EventCallback:
		l.flow.callbackEvents += e.Count
	case lockstep.EventLimited:
		l.limitBlockedEvents += e.Count
		l.limitDeferred += e.Deferred
	}
}

func (l *ledger) runWasCancelTried(id int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runCancelTried[id]
}
