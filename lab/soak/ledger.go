package soak

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/lockstep-queue/lockstep/rowtype"
)

// ref names one attempt of one job.
type ref struct {
	id      int64
	attempt int
}

// jobNote is what the soak knows about a job it enqueued.
type jobNote struct {
	mode  Mode
	runID int64
}

// execNote is one execution a worker performed: by which pool, what its
// worker returned, and when it began and ended by the soak's clock (one
// process, one clock: the limited queues' overlaps are measured on it).
type execNote struct {
	pool       int
	outcome    string
	start, end time.Time
}

// Execution outcomes, as the worker returned them (whether the fenced
// finish then wrote them is the database's business, checked separately).
const (
	outcomeOK          = "ok"
	outcomeError       = "error"
	outcomeSnooze      = "snooze"
	outcomeInterrupted = "interrupted" // the job's context was cancelled
)

// recentJobs is how many of the latest enqueued ids the canceller picks
// from: few enough that many are still pending or running.
const recentJobs = 150

// maxProblems bounds the problem list: past it only the count grows.
const maxProblems = 50

// ledger is the soak's in-memory record, kept independently of the queue:
// what it enqueued and cancelled, what the workers executed, what the dead
// worker claimed. Every method is safe for concurrent use.
type ledger struct {
	mu sync.Mutex

	jobs      map[int64]jobNote
	recent    []int64 // ring of recently enqueued ids, for the canceller
	recentPos int

	execs     map[ref]execNote
	executed  map[int64]bool // the job has had an execution (fail-once)
	snoozed   map[int64]bool // the job has snoozed (snooze-once)
	execCount int

	runs           []int64
	lastCancelled  []int64 // the latest runs cancelled, newest last
	runCancelTried map[int64]bool
	// runCancelsRefused counts cancels of runs that had finished.
	runCancelsRefused int
	// settingsRemovals counts queue settings rows the settings actor
	// removed.
	settingsRemovals int
	// bulkBatches counts the bulk actions' batches the actors wrote
	// (cancels of recent jobs, retries of FAILED workflow steps), and
	// bulkPreviews the previews counted.
	bulkBatches, bulkPreviews int
	// searches counts the actors' job searches, searchesIndexed those
	// that went on through the text index.
	searches, searchesIndexed int
	// processes are the process ids the pools' clients registered at each
	// Start, with the pool; processOf is each pool's current one.
	processes map[string]int
	processOf map[int]string
	// claimsNamed counts executions whose job's claimed_by named the
	// executing pool's registered process.
	claimsNamed int
	// claimsAfterKey counts the dead worker's claims that started after
	// the last key of its previous claim (job.claim_after).
	claimsAfterKey int
	runCancelDone  map[int64]time.Time
	runsCancelled  int
	enqueueRefused int // into a run already cancelled

	jobCancelTried   map[int64]bool
	jobCancelApplied map[int64]bool

	deadClaims     map[ref]bool
	staleAttempted int
	staleRefused   int

	retried map[retryKey]int

	flow flowBook // workflows (flow_ledger.go)

	// limitBlockedEvents and limitDeferred: what the clients' EventLimited
	// reported (jobs blocked, jobs deferred by a rate limit).
	limitBlockedEvents, limitDeferred int

	// historyEvents: per queue, the written finishes the pools reported
	// (history.go), which their history flushes must add up to.
	historyEvents map[string]rowtype.HistoryRow

	problems     []string
	problemCount int
}

type retryKey struct{ code, kind, op string }

func newLedger() *ledger {
	return &ledger{
		jobs: map[int64]jobNote{}, recent: make([]int64, 0, recentJobs),
		execs: map[ref]execNote{}, executed: map[int64]bool{}, snoozed: map[int64]bool{},
		runCancelTried: map[int64]bool{}, runCancelDone: map[int64]time.Time{},
		jobCancelTried: map[int64]bool{}, jobCancelApplied: map[int64]bool{},
		deadClaims: map[ref]bool{}, retried: map[retryKey]int{},
		flow: newFlowBook(), historyEvents: map[string]rowtype.HistoryRow{},
	}
}

func (l *ledger) problem(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.problemLocked(fmt.Sprintf(format, args...))
}

func (l *ledger) problemLocked(msg string) {
	l.problemCount++
	if len(l.problems) < maxProblems {
		l.problems = append(l.problems, msg)
	}
}

func (l *ledger) enqueued(ids []int64, modes []Mode, runID int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, id := range ids {
		if _, dup := l.jobs[id]; dup {
			l.problemLocked(fmt.Sprintf("enqueue returned job id %d twice", id))
		}
		l.jobs[id] = jobNote{mode: modes[i], runID: runID}
		if len(l.recent) < cap(l.recent) {
			l.recent = append(l.recent, id)
		} else {
			l.recent[l.recentPos] = id
			l.recentPos = (l.recentPos + 1) % len(l.recent)
		}
	}
}

// pickRecent returns one of the recently enqueued ids, chosen by pick(n).
func (l *ledger) pickRecent(pick func(n int) int) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.recent) == 0 {
		return 0, false
	}
	return l.recent[pick(len(l.recent))], true
}

func (l *ledger) runCreated(id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, id)
}

// pickRun returns one of the last window runs, only those not yet
// cancelled unless withCancelled, which also aims at a run cancelled
// lately one time in four: enqueues racing a cancel are what the run lock
// is for.
func (l *ledger) pickRun(window int, withCancelled bool, pick func(n int) int) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if withCancelled && len(l.lastCancelled) > 0 && pick(4) == 0 {
		return l.lastCancelled[pick(len(l.lastCancelled))], true
	}
	start := max(0, len(l.runs)-window)
	var live []int64
	for _, id := range l.runs[start:] {
		if withCancelled || !l.runCancelTried[id] {
			live = append(live, id)
		}
	}
	if len(live) == 0 {
		return 0, false
	}
	return live[pick(len(live))], true
}

// cancelRunTried is recorded before the call, so a cancel that committed
// but reported an error still explains its jobs' CANCELLED status.
func (l *ledger) cancelRunTried(id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runCancelTried[id] = true
}

func (l *ledger) bulkDone(batches int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bulkBatches += batches
}

func (l *ledger) searched(indexed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.searches++
	if indexed {
		l.searchesIndexed++
	}
}

func (l *ledger) bulkPreviewed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bulkPreviews++
}

// registered records the process a pool's client registered at Start.
func (l *ledger) registered(pool int, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.processes == nil {
		l.processes, l.processOf = map[string]int{}, map[int]string{}
	}
	if id == "" {
		l.problemLocked(fmt.Sprintf("pool %d's client started without a process id", pool))
		return
	}
	if prev, dup := l.processes[id]; dup {
		l.problemLocked(fmt.Sprintf("process id %s registered twice (pools %d and %d)", id, prev, pool))
	}
	l.processes[id], l.processOf[pool] = pool, id
}

// claimedBy checks, as a pool's worker starts a job, that the claim named
// the pool's process registered at the time.
func (l *ledger) claimedBy(id int64, attempt, pool int, by string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if want := l.processOf[pool]; by != want {
		l.problemLocked(fmt.Sprintf("job %d attempt %d runs in pool %d (process %q) but its claimed_by is %q", id, attempt, pool, want, by))
		return
	}
	l.claimsNamed++
}

func (l *ledger) settingsRemoved() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.settingsRemovals++
}

// cancelRunRefused records a cancel refused because every job of the run
// had ended (lockstep.ErrRunFinished): it was rolled back, so the run was
// never cancelled and none of its jobs is CANCELLED by it.
func (l *ledger) cancelRunRefused(id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, done := l.runCancelDone[id]; !done {
		delete(l.runCancelTried, id)
	}
	l.runCancelsRefused++
}

func (l *ledger) cancelRunDone(id int64, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runCancelDone[id] = at
	l.runsCancelled++
	l.lastCancelled = append(l.lastCancelled, id)
	if len(l.lastCancelled) > 5 {
		l.lastCancelled = l.lastCancelled[1:]
	}
}

// enqueuedIntoRun checks a successful enqueue into a run against the run's
// cancel: an insert that began after the cancel had committed must have
// been refused.
func (l *ledger) enqueuedIntoRun(runID int64, began time.Time, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if at, ok := l.runCancelDone[runID]; ok && began.After(at) {
		l.problemLocked(fmt.Sprintf("%d jobs slipped into run %d after its cancel had committed", n, runID))
	}
}

func (l *ledger) refusedIntoRun(runID int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.enqueueRefused++
	if !l.runCancelTried[runID] {
		l.problemLocked(fmt.Sprintf("enqueue into run %d refused as cancelled, but the soak never cancelled it", runID))
	}
}

func (l *ledger) cancelJobTried(id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.jobCancelTried[id] = true
}

func (l *ledger) cancelJobApplied(id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.jobCancelApplied[id] = true
}

// beginExec records an execution and reports whether it is the job's first.
func (l *ledger) beginExec(id int64, attempt, pool int) (first bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := ref{id, attempt}
	if prev, dup := l.execs[r]; dup {
		l.problemLocked(fmt.Sprintf("job %d attempt %d executed twice (pools %d and %d)", id, attempt, prev.pool, pool))
	}
	l.execs[r] = execNote{pool: pool, start: time.Now()}
	l.execCount++
	first = !l.executed[id]
	l.executed[id] = true
	return first
}

func (l *ledger) endExec(id int64, attempt int, outcome string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := ref{id, attempt}
	n := l.execs[r]
	n.outcome, n.end = outcome, time.Now()
	l.execs[r] = n
}

// takeSnooze reports whether the job should snooze now: the first time only.
func (l *ledger) takeSnooze(id int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.snoozed[id] {
		return false
	}
	l.snoozed[id] = true
	return true
}

func (l *ledger) deadClaimed(jobs []*rowtype.JobRow) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, j := range jobs {
		l.deadClaims[ref{j.ID, j.Attempts}] = true
	}
}

// staleFinish records a dead worker's late finish; wrote must be false.
func (l *ledger) staleFinish(r ref, status rowtype.JobStatus, wrote bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.staleAttempted++
	if wrote {
		l.problemLocked(fmt.Sprintf("stale finish of job %d attempt %d as %s was written after the attempt had been reaped, reclaimed or cancelled", r.id, r.attempt, status))
		return
	}
	l.staleRefused++
}

// onRetry counts a retried database error by its code, never its message.
func (l *ledger) onRetry(op string, err error) {
	key := retryKey{code: "?", kind: "unclassified", op: op}
	var dbe *rowtype.DBError
	if errors.As(err, &dbe) {
		key.code, key.kind = dbe.Code, dbe.Kind.String()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.retried[key]++
}

// retriedErrorsLocked returns the retried errors, most frequent first;
// the caller holds l.mu.
func retriedErrorsLocked(l *ledger) []RetriedError {
	out := make([]RetriedError, 0, len(l.retried))
	for k, n := range l.retried {
		out = append(out, RetriedError{Code: k.code, Kind: k.kind, Op: k.op, Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Code+out[i].Op < out[j].Code+out[j].Op
	})
	return out
}

func (l *ledger) executions() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.execCount
}

// claimedAfterKey records a claim after a key that committed.
func (l *ledger) claimedAfterKey() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.claimsAfterKey++
}
