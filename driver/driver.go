// Package driver is the seam between the lockstep client and a database. A
// driver executes statements from its dialect's catalogue only; the client
// never writes SQL.
package driver

import (
	"context"
	"database/sql"
	"io/fs"
	"time"

	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/rowtype"
)

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
	// DependsOn are the positions, in the same insert, of the jobs this one
	// depends on; each must come before it (the client orders a workflow
	// so), which makes a dependent's id larger than its dependencies'.
	DependsOn []int
	// DepPolicy is what a failed or cancelled dependency does to the job.
	DepPolicy DepPolicy
	// Callback is the condition a run's callback job fires on; empty for
	// other jobs.
	Callback string
	// Dependents is how many jobs of the same insert depend on this one;
	// the executor counts it from the others' DependsOn.
	Dependents int
}

// DepPolicy is what a job does when a dependency of it ends FAILED or
// CANCELLED.
type DepPolicy int

// The dependency policies; the values are stored.
const (
	// DepCancel cancels the job, and so its own dependents in turn.
	DepCancel DepPolicy = 0
	// DepRun counts the dependency as satisfied: the job runs once every
	// dependency has ended, whatever its status.
	DepRun DepPolicy = 1
	// DepFire makes the job PENDING at a dependency's failure (FAILED), and
	// cancels it once every dependency has ended without one: a run's
	// failure callback.
	DepFire DepPolicy = 2
)

// UniqueStateBit is a status's bit in a job's unique_states: the unique
// index holds a job's key while status's bit is set in it.
func UniqueStateBit(s rowtype.JobStatus) int {
	switch s {
	case rowtype.StatusPending:
		return 1
	case rowtype.StatusRunning:
		return 2
	case rowtype.StatusDone:
		return 4
	case rowtype.StatusFailed:
		return 8
	case rowtype.StatusCancelled:
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

// RunInsertParams creates a run.
type RunInsertParams struct {
	Name     string
	Metadata []byte // JSON or nil
	// Callbacks is the number of callback jobs the run is created with; a
	// run with callbacks takes no jobs after its creation.
	Callbacks int
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
	Status rowtype.JobStatus
	// RetryAfter delays a PENDING job; the database's now plus this.
	RetryAfter time.Duration
	// Snooze puts the job back without consuming an attempt.
	Snooze bool
	// Error is recorded in last_error and the history when non-empty.
	Error string
	// Output is the worker's recorded output (JSON), written with DONE.
	Output []byte
	// RunID and Dependents are the claimed row's: a job with dependents
	// writes its final status together with theirs, after its run row.
	RunID      int64
	Dependents int
	// Flow, when set, receives what the write did to the job's dependents.
	Flow *FlowCounts
}

// FlowCounts is what ending a job did to the jobs that depend on it.
type FlowCounts struct {
	// Promoted dependents became PENDING; Cancelled ones were cancelled by
	// the failure; Callbacks of the run fired (they are among Promoted).
	Promoted, Cancelled, Callbacks int
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
	Status    rowtype.JobStatus // DONE, CANCELLED or FAILED
	OlderThan time.Duration
	Max       int
}

// Executor runs catalogue statements on a pool or inside one transaction.
// Each method is one unit of work: on a pool it opens (and commits) its own
// short READ COMMITTED transaction when it needs more than one statement; on
// a transaction it runs inside it and leaves commit to the owner.
type Executor interface {
	JobInsertMany(ctx context.Context, jobs []JobInsertParams) ([]int64, error)
	// JobInsertIntoRun locks the run row (the run before its jobs), refuses a
	// cancelled run with rowtype.ErrRunCancelled, and inserts the jobs.
	JobInsertIntoRun(ctx context.Context, runID int64, jobs []JobInsertParams) ([]int64, error)
	// JobInsertUnique inserts one job with a unique key (into the run
	// runID, locked first as JobInsertIntoRun does, when not 0), or, when
	// another job holds the key, inserts nothing and returns that job.
	// Two inserts of one key at once: one wins, the other waits for it and
	// returns it as the duplicate.
	JobInsertUnique(ctx context.Context, runID int64, job JobInsertParams) (UniqueInsertResult, error)
	// JobIDByUniqueKey returns the job holding a unique key, 0 if none.
	JobIDByUniqueKey(ctx context.Context, key string) (int64, error)
	JobClaim(ctx context.Context, p *JobClaimParams) ([]*rowtype.JobRow, error)
	// JobFinish reports false when the fence did not match (nothing written).
	JobFinish(ctx context.Context, p *JobFinishParams) (bool, error)
	// JobCompleteMany writes DONE for many attempts in one transaction,
	// each fenced as JobFinish fences it, locking rows by primary key in
	// ascending id order; it returns the attempts it wrote.
	JobCompleteMany(ctx context.Context, jobs []JobRef) ([]JobRef, error)
	// JobHeartbeat refreshes the heartbeat of the given attempts and returns
	// those that are no longer RUNNING at that attempt (cancelled or reaped).
	JobHeartbeat(ctx context.Context, jobs []JobRef) (lost []JobRef, err error)
	JobReap(ctx context.Context, p *JobReapParams) ([]rowtype.ReapResult, error)
	// JobPrune deletes up to p.Max old jobs of one queue and final status,
	// by primary key in ascending id order, and returns their ids
	// (ascending). It never deletes a PENDING or RUNNING job, nor one that
	// changed since it was selected.
	JobPrune(ctx context.Context, p *JobPruneParams) ([]int64, error)
	// JobCancel cancels one WAITING, PENDING or RUNNING job; false if it
	// was none of them. The job's dependents learn it in the same
	// transaction.
	JobCancel(ctx context.Context, id int64) (bool, error)
	// JobDependencyOutputs reads the jobs a job depends on, with their
	// status and recorded output, at most limit of them, by id.
	JobDependencyOutputs(ctx context.Context, id int64, limit int) ([]rowtype.DependencyOutput, error)
	// JobDependencies reads, without locks, the jobs each of ids depends
	// on (job id → dependency ids, ascending; jobs without any are absent):
	// the edges of a workflow's graph.
	JobDependencies(ctx context.Context, ids []int64) (map[int64][]int64, error)
	// JobRetry puts a FAILED job back to PENDING, available now, with one
	// more attempt if it had none left; false if it was not FAILED. A job
	// of a cancelled run is refused with rowtype.ErrRunCancelled.
	JobRetry(ctx context.Context, id int64) (bool, error)
	JobGet(ctx context.Context, id int64) (*rowtype.JobRow, error)
	JobPage(ctx context.Context, p *rowtype.JobPageParams) (*rowtype.JobPage, error)
	JobList(ctx context.Context, p *rowtype.JobListParams) ([]*rowtype.JobRow, error)
	RunInsert(ctx context.Context, p *RunInsertParams) (*rowtype.RunRow, error)
	RunGet(ctx context.Context, id int64) (*rowtype.RunRow, error)
	RunCounts(ctx context.Context, id int64) (rowtype.RunCounts, error)
	RunCountsBounded(ctx context.Context, p *rowtype.RunCountsBoundedParams) (*rowtype.BoundedRunCounts, error)
	RunList(ctx context.Context, p *rowtype.RunListParams) ([]*rowtype.RunRow, error)
	QueueList(ctx context.Context, p *rowtype.QueueListParams) ([]string, error)
	QueueStats(ctx context.Context, p *rowtype.QueueStatsParams) (*rowtype.QueueStats, error)
	// QueueSettings lists every queue that has settings.
	QueueSettings(ctx context.Context) ([]rowtype.QueueSettings, error)
	// QueuePause pauses (paused true) or resumes a queue.
	QueuePause(ctx context.Context, queue string, paused bool) error
	// QueueSetMaxWorkers sets a queue's per-process worker cap; 0 clears it.
	QueueSetMaxWorkers(ctx context.Context, queue string, n int) error
	// RunCancel marks the run CANCELLED, then cancels its WAITING, PENDING
	// and RUNNING jobs by primary key in ascending id order.
	RunCancel(ctx context.Context, id int64) (*rowtype.RunCancelResult, error)
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
	ClassifyError(err error) rowtype.ErrorKind
	// Version is the server's version string, checked at client start.
	Version(ctx context.Context) (string, error)
	Close() error
}
