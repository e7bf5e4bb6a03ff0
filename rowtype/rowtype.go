// Package rowtype is lockstep's data model: the rows the queue stores (jobs
// and runs), their statuses, the parameters and results of the reads the
// client offers, and the kinds of database error it tells apart. It imports
// nothing of lockstep's, so the client, the driver seam, the dashboard and
// the CLI can all share it without importing one another.
package rowtype

import (
	"encoding/json"
	"errors"
	"time"
)

// JobStatus is the state of a job row.
type JobStatus string

// The job statuses. A job is claimed from PENDING into RUNNING and finishes
// in DONE, FAILED or CANCELLED; a failed attempt with attempts left goes back
// to PENDING. A job of a workflow waits in WAITING until its dependencies
// are done: the claim index's range is PENDING, so it is never scanned. A
// job of a limited queue that a claim found over its key's limit, or behind
// the earlier jobs of its sequence, is BLOCKED until a job of its key
// leaves RUNNING; it is out of the claim index's range in the same way.
const (
	StatusWaiting   JobStatus = "WAITING"
	StatusPending   JobStatus = "PENDING"
	StatusBlocked   JobStatus = "BLOCKED"
	StatusRunning   JobStatus = "RUNNING"
	StatusDone      JobStatus = "DONE"
	StatusFailed    JobStatus = "FAILED"
	StatusCancelled JobStatus = "CANCELLED"
)

// RunStatus is the state of a run row. Completion is derived from the run's
// jobs rather than stored, so that finishing a job never writes the run row
// (which would lock a run after its job and break the one lock order).
type RunStatus string

// The run statuses.
const (
	RunActive    RunStatus = "ACTIVE"
	RunCancelled RunStatus = "CANCELLED"
)

// RunState is what a run is, for people: the one word the CLI, the
// dashboard, the demo and the API all show. It is read from the stored
// status and the run's job counts (RunStateOf), never stored.
type RunState string

// The run states.
const (
	// RunStateActive: some job has not ended yet (WAITING, PENDING,
	// BLOCKED or RUNNING), or the run has no job yet.
	RunStateActive RunState = "ACTIVE"
	// RunStateDone: every job has ended and none FAILED.
	RunStateDone RunState = "DONE"
	// RunStateFailed: every job has ended and at least one FAILED.
	RunStateFailed RunState = "FAILED"
	// RunStateCancelled: the run was cancelled while some job was live or
	// before it had any; its jobs that had not ended were cancelled.
	RunStateCancelled RunState = "CANCELLED"
)

// RunStateOf is the state of a run stored with status whose jobs count
// counts; capped counts (a bound, not a total) leave a run ACTIVE, since
// the jobs not counted may be live.
func RunStateOf(status RunStatus, counts RunCounts, capped bool) RunState {
	if status == RunCancelled {
		return RunStateCancelled
	}
	total, live := 0, 0
	for st, n := range counts {
		total += n
		switch st {
		case StatusWaiting, StatusPending, StatusBlocked, StatusRunning:
			live += n
		}
	}
	switch {
	case capped || live > 0 || total == 0:
		return RunStateActive
	case counts[StatusFailed] > 0:
		return RunStateFailed
	}
	return RunStateDone
}

// JobRow is a job as stored.
type JobRow struct {
	ID          int64
	RunID       int64 // 0 when the job belongs to no run
	Queue       string
	Kind        string
	Args        json.RawMessage
	Status      JobStatus
	Priority    int
	AvailableAt time.Time
	Attempts    int
	MaxAttempts int
	StartedAt   time.Time // zero until first claimed
	HeartbeatAt time.Time
	FinishedAt  time.Time
	LastError   string
	Errors      []AttemptError
	CreatedAt   time.Time
	// LimitKey is the key a queue's per-key limits, sequence and per-key
	// rate count the job under; empty for none.
	LimitKey string
	// UniqueKey is the job's unique key (hex), empty for a job enqueued
	// without UniqueOpts.
	UniqueKey string
	// Metadata is what the enqueuer attached (JSON), nil if nothing.
	Metadata json.RawMessage
	// Output is what the worker recorded on success (JSON), nil if nothing.
	Output json.RawMessage
	// WaitingOn is the number of dependencies a WAITING job still waits
	// for; 0 for every other job.
	WaitingOn int
	// Dependents is the number of jobs (callbacks included) that depend on
	// this one: its final status is written together with theirs.
	Dependents int
	// Callback is the condition a run's callback job fires on (success,
	// failure or complete), empty for every other job.
	Callback string
	// ClaimedBy is the process (ProcessRow.ID) that claimed the job's
	// current attempt; empty when no registered process claimed it.
	ClaimedBy string
}

// Final reports whether a status is one a job ends in.
func (s JobStatus) Final() bool {
	return s == StatusDone || s == StatusFailed || s == StatusCancelled
}

// DependencyOutput is one dependency of a job as its dependent reads it.
type DependencyOutput struct {
	ID     int64
	Kind   string
	Status JobStatus
	// Output is what the dependency's worker recorded (JSON), nil if
	// nothing.
	Output json.RawMessage
}

// CallbackArgs are the args a run's callback job runs with: the condition
// it fired on, the run's job counts when it fired (callbacks not counted),
// and the data it was created with.
type CallbackArgs struct {
	RunID  int64             `json:"run_id"`
	On     string            `json:"on"`
	Counts map[JobStatus]int `json:"counts"`
	Data   json.RawMessage   `json:"data,omitempty"`
}

// AttemptError is one entry of a job's error history.
type AttemptError struct {
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	Error   string    `json:"error"`
}

// RunRow is a run as stored.
type RunRow struct {
	ID          int64
	Name        string
	Status      RunStatus
	Metadata    json.RawMessage
	CreatedAt   time.Time
	CancelledAt time.Time
}

// RunCounts is the number of a run's jobs in each status.
type RunCounts map[JobStatus]int

// QueueSettings are a queue's shared, persisted settings.
type QueueSettings struct {
	Queue string
	// Paused is when the queue was paused; zero if it is not.
	Paused time.Time
	// MaxWorkers caps each process's workers for the queue; 0: as
	// configured.
	MaxWorkers int
	// Limits are the queue's limits, shared by every process.
	Limits    QueueLimits
	UpdatedAt time.Time
}

// QueueLimits are the limits a queue's jobs run under across every process.
// A zero field sets no limit.
type QueueLimits struct {
	// Concurrency is the most jobs of the queue RUNNING at once.
	Concurrency int
	// KeyConcurrency is the most jobs with one LimitKey RUNNING at once.
	KeyConcurrency int
	// Sequence runs the jobs of each LimitKey one at a time in id (insert)
	// order; what a FAILED job does to the rest of its sequence is its
	// value.
	Sequence SequencePolicy
	// Rate is the most jobs started per RatePeriod, in any window of that
	// length, for the whole queue, or per LimitKey with RateByKey. Jobs
	// over it are deferred (their available_at moved to when a start frees
	// up), never polled for.
	Rate       int
	RatePeriod time.Duration
	RateByKey  bool
}

// Any is whether the queue has any limit.
func (l QueueLimits) Any() bool {
	return l.Concurrency > 0 || l.Keyed() || l.Rate > 0
}

// Keyed is whether a limit counts by LimitKey.
func (l QueueLimits) Keyed() bool {
	return l.KeyConcurrency > 0 || l.Sequence != SequenceNone || (l.Rate > 0 && l.RateByKey)
}

// SequencePolicy is whether a queue runs its keys' jobs as sequences, and
// what a FAILED job does to the jobs after it. The values are stored.
type SequencePolicy int

// The sequence policies.
const (
	// SequenceNone: no sequences.
	SequenceNone SequencePolicy = 0
	// SequenceRelease: a FAILED job lets the next job of its sequence run.
	SequenceRelease SequencePolicy = 1
	// SequenceHold: a FAILED job holds its sequence until it is retried
	// (and then ends DONE, or fails again and holds it again) or the queue
	// is set to SequenceRelease.
	SequenceHold SequencePolicy = 2
)

// String is the policy's name as the CLI and the dashboard show it.
func (p SequencePolicy) String() string {
	switch p {
	case SequenceRelease:
		return "release"
	case SequenceHold:
		return "hold"
	}
	return "none"
}

// ReapResult is a reaped job and where it went.
type ReapResult struct {
	ID      int64
	Attempt int
	Status  JobStatus // PENDING or FAILED
}

// RunCancelResult is what a run cancel changed.
type RunCancelResult struct {
	Run *RunRow
	// Cancelled are the ids, ascending, of the jobs that were PENDING or
	// RUNNING when read and were then cancelled unless they finished first.
	Cancelled []int64
}

// JobListParams filters a job listing.
type JobListParams struct {
	RunID   int64
	Status  JobStatus
	AfterID int64
	Limit   int
}

// JobPageParams lists jobs newest first. A page examines at most Window
// job ids below BeforeID (through the primary key, or the run index when
// RunID is set), so a filter that matches few rows costs at most Window
// rows, never the whole table.
type JobPageParams struct {
	RunID  int64
	Status JobStatus
	Queue  string
	Kind   string
	// View narrows the page to one of the operators' views of PENDING:
	// ViewScheduled (available later) or ViewRetrying (after a failed
	// attempt, waiting for the next). Empty: no view.
	View JobView
	// Search keeps the jobs whose args or metadata contain this text
	// (case-insensitive; at most MaxSearchLen bytes). Like every filter it
	// reads the page's window of ids: a page may hold none and still have
	// a next one. Where the optional text index exists ('lockstep migrate
	// text-index up'), a search with a word of three characters or more
	// that the window does not fill goes on through it (JobPage.Indexed).
	Search   string
	BeforeID int64 // 0: start at the newest job
	Limit    int   // default 50
	Window   int   // default 10,000
}

// MaxSearchLen bounds JobPageParams.Search.
const MaxSearchLen = 200

// JobView is a view of PENDING jobs an operator looks for.
type JobView string

// The views.
const (
	// ViewScheduled: PENDING jobs whose available_at is ahead (a delayed
	// insert, a retry's backoff, a snooze, a rate limit's deferral).
	ViewScheduled JobView = "scheduled"
	// ViewRetrying: PENDING jobs with a failed attempt behind them (their
	// last_error set), waiting for the next.
	ViewRetrying JobView = "retrying"
)

// JobPage is one page of a newest-first listing.
type JobPage struct {
	Jobs []*JobRow
	// Next is the BeforeID of the next page; 0 when the listing reached the
	// oldest job.
	Next int64
	// Examined is how many job ids the page's window covered.
	Examined int
	// Indexed is true when a search that the window did not fill went
	// on through the optional text index, over every job below the
	// window: Next then continues that search, and 0 means no job below
	// matched. (On MySQL and MariaDB the index finds words by their
	// beginning: a match inside a word is found in a page's window only.)
	Indexed bool
}

// RunListParams lists runs newest first.
type RunListParams struct {
	BeforeID int64 // 0: start at the newest run
	Limit    int   // default 50
}

// RunCountsBoundedParams counts the jobs of one run by status, reading at
// most Limit of them (the oldest first).
type RunCountsBoundedParams struct {
	RunID int64
	Limit int // default 100,000
}

// BoundedRunCounts are a run's counts; Capped means the run has more than
// Limit jobs and the counts cover the first Limit.
type BoundedRunCounts struct {
	Counts RunCounts
	Capped bool
}

// BoundedCount is a count that stops at a limit, so counting costs at most
// that many index entries. Capped means there are at least N.
type BoundedCount struct {
	N      int64
	Capped bool
}

// QueueListParams lists the queues that have jobs.
type QueueListParams struct {
	Limit int // default 1,000
}

// QueueStatsParams reads one queue's numbers, each a bounded index range.
type QueueStatsParams struct {
	Queue string
	// CountLimit bounds each count. Default 100,000.
	CountLimit int
	// Window is how far back Finished looks. Default 1 minute.
	Window time.Duration
}

// QueueStats are one queue's numbers.
type QueueStats struct {
	Queue string
	// Counts has every status.
	Counts map[JobStatus]BoundedCount
	// Finished counts DONE and FAILED jobs that reached that status within
	// Window.
	Finished map[JobStatus]BoundedCount
	Window   time.Duration
	// Ready counts the PENDING jobs available now (available_at passed):
	// those a worker may claim. The rest of PENDING is scheduled (a
	// delayed insert, a retry's backoff, a snooze, a rate limit's
	// deferral); see Scheduled.
	Ready BoundedCount
	// OldestAvailableAt is the earliest available_at among the available
	// PENDING jobs (the first CountLimit in claim order); zero when none is
	// available.
	OldestAvailableAt time.Time
	// OldestCapped means more than CountLimit jobs are available, and one
	// beyond them (of a later priority) may have waited longer: the age is
	// a lower bound.
	OldestCapped bool
	// Now is the database's clock when the stats were read.
	Now time.Time
}

// Scheduled counts the PENDING jobs available later: PENDING less Ready.
// ok is false when both counts are capped, and the split is unknown; a
// capped result is a lower bound.
func (s *QueueStats) Scheduled() (c BoundedCount, ok bool) {
	pending := s.Counts[StatusPending]
	switch {
	case pending.Capped && s.Ready.Capped:
		return BoundedCount{}, false
	case pending.Capped:
		return BoundedCount{N: pending.N - s.Ready.N, Capped: true}, true
	}
	// Read one after the other, the two counts may disagree by a job
	// that became available (or was claimed) between them.
	return BoundedCount{N: max(pending.N-s.Ready.N, 0)}, true
}

// ErrRunCancelled is returned when jobs are enqueued into a cancelled run.
var ErrRunCancelled = errors.New("run is cancelled")

// ErrRunFinished is returned when a run whose jobs have all ended (DONE,
// FAILED or CANCELLED) is cancelled: a cancel would rewrite its history
// and cancel nothing.
var ErrRunFinished = errors.New("run has finished: every job has ended, nothing to cancel")

// ErrRunClosed is returned when jobs are added to a run created with
// callbacks: its callbacks count the jobs it was created with.
var ErrRunClosed = errors.New("run has callbacks and takes no jobs after its creation")

// ErrNotFound is returned for a job or run id that does not exist.
var ErrNotFound = errors.New("not found")
