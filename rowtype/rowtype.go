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
// are done: the claim index's range is PENDING, so it is never scanned.
const (
	StatusWaiting   JobStatus = "WAITING"
	StatusPending   JobStatus = "PENDING"
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
	UpdatedAt  time.Time
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
	RunID    int64
	Status   JobStatus
	Queue    string
	Kind     string
	BeforeID int64 // 0: start at the newest job
	Limit    int   // default 50
	Window   int   // default 10,000
}

// JobPage is one page of a newest-first listing.
type JobPage struct {
	Jobs []*JobRow
	// Next is the BeforeID of the next page; 0 when the listing reached the
	// oldest job.
	Next int64
	// Examined is how many job ids the page's window covered.
	Examined int
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

// ErrRunCancelled is returned when jobs are enqueued into a cancelled run.
var ErrRunCancelled = errors.New("run is cancelled")

// ErrRunClosed is returned when jobs are added to a run created with
// callbacks: its callbacks count the jobs it was created with.
var ErrRunClosed = errors.New("run has callbacks and takes no jobs after its creation")

// ErrNotFound is returned for a job or run id that does not exist.
var ErrNotFound = errors.New("not found")
