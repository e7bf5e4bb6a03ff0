// Package driver is the seam between the lockstep client and a database. A
// driver executes statements from its dialect's catalogue only; the client
// never writes SQL.
package driver

import (
	"cmp"
	"context"
	"database/sql"
	"io/fs"
	"slices"
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
	// LimitKey is the key the queue's per-key limits count the job under;
	// empty for none.
	LimitKey string
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
	// Limits are the queue's limits as the client last read them: they
	// choose whether a limited claim locks the queue's row first. The
	// claim reads the queue's current limits itself and goes by those.
	Limits rowtype.QueueLimits
	// Grace is how long a job cancelled while it ran keeps its slot when
	// its worker never says it stopped: the reap limit.
	Grace time.Duration
	// ProcessID is the claiming process's registered id, written to the
	// claimed jobs' claimed_by; empty (NULL) for a caller that registered
	// no process (a lab tool calling the executor directly).
	ProcessID string
	// After, when set, claims only jobs that sort after it in the claim
	// order (JobClaim only; a limited claim ignores it): the claim
	// index's range starts there instead of at the queue's head.
	After *ClaimKey
}

// ClaimKey is a job's place in its queue's claim order: priority, then
// available_at, then id, the claim index's columns after the queue.
type ClaimKey struct {
	Priority    int
	AvailableAt time.Time
	ID          int64
}

// KeyOf is j's place in the claim order.
func KeyOf(j *rowtype.JobRow) ClaimKey {
	return ClaimKey{Priority: j.Priority, AvailableAt: j.AvailableAt, ID: j.ID}
}

// LastKey is the place in the claim order of the last of jobs (at least
// one): where a claim after them starts.
func LastKey(jobs []*rowtype.JobRow) ClaimKey {
	return KeyOf(slices.MaxFunc(jobs, func(a, b *rowtype.JobRow) int { return KeyOf(a).Compare(KeyOf(b)) }))
}

// Compare orders two keys as the claim does: -1, 0 or +1.
func (k ClaimKey) Compare(o ClaimKey) int {
	switch {
	case k.Priority != o.Priority:
		return cmp.Compare(k.Priority, o.Priority)
	case !k.AvailableAt.Equal(o.AvailableAt):
		return k.AvailableAt.Compare(o.AvailableAt)
	}
	return cmp.Compare(k.ID, o.ID)
}

// ReleaseError is the failure of the release that follows a write which
// moved jobs with a key out of RUNNING: the write itself committed (its
// result stands); the key's BLOCKED jobs wait for the next release or
// the sweep.
type ReleaseError struct{ Err error }

func (e *ReleaseError) Error() string {
	return "written, but releasing blocked jobs failed: " + e.Err.Error()
}

func (e *ReleaseError) Unwrap() error { return e.Err }

// LimitedClaim is what a claim of a limited queue did.
type LimitedClaim struct {
	// Jobs are the jobs claimed, RUNNING, in ascending id order.
	Jobs []*rowtype.JobRow
	// Limits are the queue's limits the claim went by, and Now the
	// database's clock it read them at.
	Limits rowtype.QueueLimits
	Now    time.Time
	// Full: the queue's concurrency limit left no slot.
	Full bool
	// Blocked jobs were moved to BLOCKED (their key was at its limit, or
	// earlier jobs of their sequence were live); Deferred ones had their
	// available_at moved by a per-key rate limit.
	Blocked, Deferred int
	// RetryAt, when set, is when the queue's own rate limit frees a start:
	// claiming before then would start nothing.
	RetryAt time.Time
	// Skipped jobs were left PENDING because another claim held their key,
	// or their key had no row yet (created after the claim): claim again.
	Skipped int
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
	// Queue and LimitKey are the claimed row's: a job with a key releases
	// what its key holds back once the write has committed.
	Queue, LimitKey string
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
	// Queue and LimitKey are the claimed row's, when the caller has them:
	// a job with a key that leaves RUNNING releases what its key holds
	// back (BLOCKED jobs) after the write commits.
	Queue, LimitKey string
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
	// JobIDBounds returns the lowest and highest job id (0, 0: no job).
	JobIDBounds(ctx context.Context) (lo, hi int64, err error)
	// JobMatch reads, without locks, one window of the ids a bulk action
	// selects, ascending; JobMatchCount counts one window.
	JobMatch(ctx context.Context, p *rowtype.JobMatchParams) (*rowtype.JobMatch, error)
	JobMatchCount(ctx context.Context, p *rowtype.JobMatchParams) (int64, error)
	// JobBulk applies a bulk action to one batch of jobs, in the lock
	// order: runs (shared, ascending) before jobs, jobs by primary key in
	// ascending id order, each status re-checked; a job with dependents in
	// a run takes JobRetry's or JobCancel's path, a delete retention's.
	JobBulk(ctx context.Context, action rowtype.BulkAction, ids []int64) (*rowtype.BulkResult, error)
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
	// QueueDelete removes a queue's settings row (pause, max workers,
	// limits), reporting whether there was one.
	QueueDelete(ctx context.Context, queue string) (bool, error)
	// QueueSetLimits sets a queue's limits; a zero QueueLimits clears them.
	QueueSetLimits(ctx context.Context, queue string, l rowtype.QueueLimits) error
	// JobClaimLimited claims up to Max jobs of a queue with limits (its
	// concurrency, per-key limits, sequences and rate), blocking or
	// deferring the jobs over them; see LimitedClaim. A claim that
	// committed but whose work after the commit failed (the rows of keys
	// met for the first time, a release) returns its LimitedClaim with a
	// *ReleaseError: its jobs are RUNNING and must be run.
	JobClaimLimited(ctx context.Context, p *JobClaimParams) (*LimitedClaim, error)
	// JobRelease frees the slot of a job cancelled while it ran, once its
	// worker has stopped, and releases what its key holds back.
	JobRelease(ctx context.Context, ref JobRef) error
	// LimitSweep releases, a page at a time, the BLOCKED jobs of a queue
	// whose keys have room: the safety net under the release each finish
	// does after its commit (a process that died between the two).
	LimitSweep(ctx context.Context, queue string) (int, error)
	// ProcessInsert registers a process: one new row of lockstep_processes,
	// alone in its transaction.
	ProcessInsert(ctx context.Context, p *rowtype.ProcessRow) error
	// ProcessHeartbeat refreshes a process's heartbeat_at to the
	// database's now: one row by primary key, alone in its transaction. It
	// reports false when the row is gone (pruned while the process was
	// away), for the caller to insert it again.
	ProcessHeartbeat(ctx context.Context, id string) (bool, error)
	// ProcessDelete removes a process's row by primary key (a clean stop).
	ProcessDelete(ctx context.Context, id string) (bool, error)
	// ProcessPrune deletes up to max rows of processes whose heartbeat is
	// older than olderThan by the database's clock, one row by primary key
	// at a time, and returns their ids.
	ProcessPrune(ctx context.Context, olderThan time.Duration, max int) ([]string, error)
	// ProcessList reads every registered process, ordered by id, with the
	// database's clock at the read.
	ProcessList(ctx context.Context) (*rowtype.ProcessList, error)
	// JobRunningByProcess reads up to max RUNNING jobs claimed by a
	// process, oldest heartbeat first, without locks.
	JobRunningByProcess(ctx context.Context, id string, max int) ([]*rowtype.JobRow, error)
	// HistoryAdd adds the counts of each row to the history rollup's row
	// of the same (bucket, queue, kind), in one transaction of its own,
	// the rows written in ascending primary-key order.
	HistoryAdd(ctx context.Context, rows []rowtype.HistoryRow) error
	// HistoryRange reads the rollup's rows of a time range, in primary-key
	// order (bucket, queue, kind), without locks. Minutes without a row
	// counted nothing.
	HistoryRange(ctx context.Context, p *rowtype.HistoryParams) ([]rowtype.HistoryRow, error)
	// HistoryPrune deletes about max of the oldest rows of minutes before
	// before (whole minutes, by primary-key range), reporting how many.
	HistoryPrune(ctx context.Context, before time.Time, max int) (int64, error)
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
