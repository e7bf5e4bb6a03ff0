// Package driver is the seam between the lockstep client and a database. A
// driver executes statements from its dialect's catalogue only; the client
// never writes SQL.
package driver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io/fs"
	"time"

	"github.com/lockstep-queue/lockstep/driver/catalog"
)

// JobStatus is the state of a job row.
type JobStatus string

// The job statuses. A job is claimed from PENDING into RUNNING and finishes
// in DONE, FAILED or CANCELLED; a failed attempt with attempts left goes back
// to PENDING.
const (
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

// JobInsertParams is one job to insert.
type JobInsertParams struct {
	RunID       int64 // 0: no run
	Queue       string
	Kind        string
	Args        []byte
	Priority    int
	MaxAttempts int
	// ScheduledAt is the "not before" time; zero means the database's now.
	ScheduledAt time.Time
	// Metadata is JSON or nil.
	Metadata []byte
	// UniqueKey, when set, makes the insert unique: it goes through
	// JobInsertUnique, one job at a time. UniqueStates is the set of
	// statuses in which the key is held (UniqueStateBit of each).
	UniqueKey    string
	UniqueStates int
}

// UniqueStateBit is a status's bit in a job's unique_states: the unique
// index holds a job's key while status's bit is set in it.
func UniqueStateBit(s JobStatus) int {
	switch s {
	case StatusPending:
		return 1
	case StatusRunning:
		return 2
	case StatusDone:
		return 4
	case StatusFailed:
		return 8
	case StatusCancelled:
		return 16
	}
	return 0
}

// UniqueInsertResult is the outcome of a unique insert.
type UniqueInsertResult struct {
	// ID is the inserted job, or the one holding the key. It is 0 when
	// the holder is not visible to the caller's transaction (a snapshot
	// older than the holder's commit): read it with JobIDByUniqueKey from
	// outside that transaction.
	ID int64
	// Duplicate is true when another job held the key and nothing was
	// inserted.
	Duplicate bool
}

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

// RunInsertParams creates a run.
type RunInsertParams struct {
	Name     string
	Metadata []byte // JSON or nil
}

// JobClaimParams claims up to Max jobs of one queue.
type JobClaimParams struct {
	Queue string
	Max   int
}

// JobFinishParams writes a worker's result. The update is fenced on the
// attempt the worker claimed: if the job was reaped, reclaimed or cancelled
// meanwhile, nothing is written.
type JobFinishParams struct {
	ID      int64
	Attempt int
	// Status is DONE, FAILED or PENDING (retry or snooze).
	Status JobStatus
	// RetryAfter delays a PENDING job; the database's now plus this.
	RetryAfter time.Duration
	// Snooze puts the job back without consuming an attempt.
	Snooze bool
	// Error is recorded in last_error and the history when non-empty.
	Error string
	// Output is the worker's recorded output (JSON), written with DONE.
	Output []byte
}

// JobRef names one attempt of one job.
type JobRef struct {
	ID      int64
	Attempt int
}

// JobReapParams returns RUNNING jobs whose heartbeat is older than
// StaleAfter.
type JobReapParams struct {
	StaleAfter time.Duration
	Max        int
}

// JobPruneParams selects the jobs retention deletes: those of one queue in
// one final status whose last change (heartbeat_at, set on every status
// change) is older than OlderThan by the database's clock, at most Max.
type JobPruneParams struct {
	Queue     string
	Status    JobStatus // DONE, CANCELLED or FAILED
	OlderThan time.Duration
	Max       int
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

// Executor runs catalogue statements on a pool or inside one transaction.
// Each method is one unit of work: on a pool it opens (and commits) its own
// short READ COMMITTED transaction when it needs more than one statement; on
// a transaction it runs inside it and leaves commit to the owner.
type Executor interface {
	JobInsertMany(ctx context.Context, jobs []JobInsertParams) ([]int64, error)
	// JobInsertIntoRun locks the run row (the run before its jobs), refuses a
	// cancelled run with ErrRunCancelled, and inserts the jobs.
	JobInsertIntoRun(ctx context.Context, runID int64, jobs []JobInsertParams) ([]int64, error)
	// JobInsertUnique inserts one job with a unique key (into the run
	// runID, locked first as JobInsertIntoRun does, when not 0), or, when
	// another job holds the key, inserts nothing and returns that job.
	// Two inserts of one key at once: one wins, the other waits for it and
	// returns it as the duplicate.
	JobInsertUnique(ctx context.Context, runID int64, job JobInsertParams) (UniqueInsertResult, error)
	// JobIDByUniqueKey returns the job holding a unique key, 0 if none.
	JobIDByUniqueKey(ctx context.Context, key string) (int64, error)
	JobClaim(ctx context.Context, p *JobClaimParams) ([]*JobRow, error)
	// JobFinish reports false when the fence did not match (nothing written).
	JobFinish(ctx context.Context, p *JobFinishParams) (bool, error)
	// JobCompleteMany writes DONE for many attempts in one transaction,
	// each fenced as JobFinish fences it, locking rows by primary key in
	// ascending id order; it returns the attempts it wrote.
	JobCompleteMany(ctx context.Context, jobs []JobRef) ([]JobRef, error)
	// JobHeartbeat refreshes the heartbeat of the given attempts and returns
	// those that are no longer RUNNING at that attempt (cancelled or reaped).
	JobHeartbeat(ctx context.Context, jobs []JobRef) (lost []JobRef, err error)
	JobReap(ctx context.Context, p *JobReapParams) ([]ReapResult, error)
	// JobPrune deletes up to p.Max old jobs of one queue and final status,
	// by primary key in ascending id order, and returns their ids
	// (ascending). It never deletes a PENDING or RUNNING job, nor one that
	// changed since it was selected.
	JobPrune(ctx context.Context, p *JobPruneParams) ([]int64, error)
	// JobCancel cancels one PENDING or RUNNING job; false if it was neither.
	JobCancel(ctx context.Context, id int64) (bool, error)
	// JobRetry puts a FAILED job back to PENDING, available now, with one
	// more attempt if it had none left; false if it was not FAILED. A job
	// of a cancelled run is refused with ErrRunCancelled.
	JobRetry(ctx context.Context, id int64) (bool, error)
	JobGet(ctx context.Context, id int64) (*JobRow, error)
	JobPage(ctx context.Context, p *JobPageParams) (*JobPage, error)
	JobList(ctx context.Context, p *JobListParams) ([]*JobRow, error)
	RunInsert(ctx context.Context, p *RunInsertParams) (*RunRow, error)
	RunGet(ctx context.Context, id int64) (*RunRow, error)
	RunCounts(ctx context.Context, id int64) (RunCounts, error)
	RunCountsBounded(ctx context.Context, p *RunCountsBoundedParams) (*BoundedRunCounts, error)
	RunList(ctx context.Context, p *RunListParams) ([]*RunRow, error)
	QueueList(ctx context.Context, p *QueueListParams) ([]string, error)
	QueueStats(ctx context.Context, p *QueueStatsParams) (*QueueStats, error)
	// QueueSettings lists every queue that has settings.
	QueueSettings(ctx context.Context) ([]QueueSettings, error)
	// QueuePause pauses (paused true) or resumes a queue.
	QueuePause(ctx context.Context, queue string, paused bool) error
	// QueueSetMaxWorkers sets a queue's per-process worker cap; 0 clears it.
	QueueSetMaxWorkers(ctx context.Context, queue string, n int) error
	// RunCancel marks the run CANCELLED, then cancels its PENDING and RUNNING
	// jobs by primary key in ascending id order.
	RunCancel(ctx context.Context, id int64) (*RunCancelResult, error)
}

// Tx is an Executor inside a transaction the driver opened.
type Tx interface {
	Executor
	Commit() error
	Rollback() error
}

// Driver is one database behind the queue.
type Driver interface {
	// Dialect is "mysql", "postgres" or "sqlite".
	Dialect() string
	Catalog() *catalog.Catalog
	// Migrations holds NNNN_name.up.sql and NNNN_name.down.sql files.
	Migrations() fs.FS
	// DB is the pool as a database/sql handle, for migrations and RetryTx.
	DB() *sql.DB
	Executor() Executor
	// Begin opens a READ COMMITTED transaction (BEGIN IMMEDIATE on SQLite).
	Begin(ctx context.Context) (Tx, error)
	// BeginSQL opens the same kind of transaction as a *sql.Tx, for user code.
	BeginSQL(ctx context.Context) (*sql.Tx, error)
	// UnwrapTx returns an Executor that runs inside a transaction the caller
	// owns (*sql.Tx, or pgx.Tx for the postgres driver).
	UnwrapTx(tx any) (Executor, error)
	// ClassifyError reports the kind of a database error, by code.
	ClassifyError(err error) ErrorKind
	// Version is the server's version string, checked at client start.
	Version(ctx context.Context) (string, error)
	Close() error
}

// ErrRunCancelled is returned when jobs are enqueued into a cancelled run.
var ErrRunCancelled = errors.New("run is cancelled")

// ErrNotFound is returned for a job or run id that does not exist.
var ErrNotFound = errors.New("not found")
