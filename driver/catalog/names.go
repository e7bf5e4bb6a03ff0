package catalog

import (
	"fmt"
	"slices"
	"strings"
)

// Name identifies a statement across dialects. The strings are part of the
// project's vocabulary: the statement trace reports them, the lock-order
// page and the plan guard list them, tests pause an operation on them. So
// they are written here once, and code names a statement by its constant.
type Name string

// The statements of the queue, in the order an enqueued job meets them.
const (
	// Enqueue.
	JobInsert        Name = "job.insert"
	JobInsertUnique  Name = "job.insert_unique"
	JobIDByUniqueKey Name = "job.id_by_unique_key"
	JobNotify        Name = "job.notify"
	JobListen        Name = "job.listen"
	RunLockShared    Name = "run.lock_shared"

	// Claim: one statement, or a locking read and an update by primary key.
	JobClaim       Name = "job.claim"
	JobClaimSelect Name = "job.claim_select"
	JobClaimUpdate Name = "job.claim_update"
	// The claim of a saturated queue, from where the previous claim ended:
	// the same statements with the claim index's range starting after a
	// key, so that the entries of rows claimed before (which a snapshot
	// held elsewhere keeps in the index) are not scanned again.
	JobClaimAfter       Name = "job.claim_after"
	JobClaimSelectAfter Name = "job.claim_select_after"

	// Locking reads by primary key in ascending id order.
	JobLockIDs  Name = "job.lock_ids"
	JobLockMany Name = "job.lock_many"

	// A worker's result, and its heartbeat.
	JobFinishDone     Name = "job.finish_done"
	JobFinishDoneMany Name = "job.finish_done_many"
	JobFinishFailed   Name = "job.finish_failed"
	JobFinishRetry    Name = "job.finish_retry"
	JobFinishSnooze   Name = "job.finish_snooze"
	JobHeartbeat      Name = "job.heartbeat"
	JobStateMany      Name = "job.state_many"

	// Maintenance: the reaper and retention.
	JobReapSelect  Name = "job.reap_select"
	JobReap        Name = "job.reap"
	JobPruneSelect Name = "job.prune_select"
	JobPruneLock   Name = "job.prune_lock"
	JobDeleteMany  Name = "job.delete_many"

	// Cancelling a job, or a run and its live jobs.
	JobCancel       Name = "job.cancel"
	JobCancelMany   Name = "job.cancel_many"
	JobIDsLiveByRun Name = "job.ids_live_by_run"
	RunCancel       Name = "run.cancel"

	// Runs.
	RunInsert        Name = "run.insert"
	RunGet           Name = "run.get"
	RunCounts        Name = "run.counts"
	RunCountsBounded Name = "run.counts_bounded"
	RunList          Name = "run.list"

	// Reads of jobs, and the retry of a FAILED one.
	JobGet            Name = "job.get"
	JobList           Name = "job.list"
	JobListByRun      Name = "job.list_by_run"
	JobRetry          Name = "job.retry"
	JobPageFloor      Name = "job.page_floor"
	JobPage           Name = "job.page"
	JobPageFloorByRun Name = "job.page_floor_by_run"
	JobPageByRun      Name = "job.page_by_run"

	// Bulk actions: the matching ids read without locks in windows of the
	// primary key; then, batch by batch, the jobs' run and key read without
	// locks, the runs locked (shared, ascending) before their jobs, and the
	// jobs written by primary key in ascending id order, status re-checked.
	JobIDBounds   Name = "job.id_bounds"
	JobMatch      Name = "job.match"
	JobMatchCount Name = "job.match_count"
	// JobMatchCountStatus counts one status's matches through the
	// status-led index (capability StatusIndex): the preview of an action
	// over the statuses a table holds few of (FAILED, the live ones).
	JobMatchCountStatus Name = "job.match_count_status"
	JobBulkRefs         Name = "job.bulk_refs"
	JobRetryMany        Name = "job.retry_many"

	// The search through the optional text index (capability TextIndex,
	// created by 'lockstep migrate text-index up'): TextIndexExists asks
	// the server's own catalogue whether it is there; JobSearch finds the
	// newest matching jobs below an id through it, without locks.
	TextIndexExists Name = "job.text_index_exists"
	JobSearch       Name = "job.search"

	// Workflows: a job's dependencies and the run's callbacks. The edges are
	// inserted with the jobs and read without locks; the jobs they name are
	// locked by primary key in ascending id order, after the run row.
	DepInsert        Name = "dep.insert"
	DepDependents    Name = "dep.dependents"
	DepDependencies  Name = "dep.dependencies"
	DepDeleteMany    Name = "dep.delete_many"
	JobInsertFlow    Name = "job.insert_flow"
	JobLockFlow      Name = "job.lock_flow"
	JobSetWaiting    Name = "job.set_waiting"
	JobPromote       Name = "job.promote"
	JobCancelWaiting Name = "job.cancel_waiting"
	JobRevive        Name = "job.revive"
	JobOutputsMany   Name = "job.outputs_many"
	RunLock          Name = "run.lock"

	// Queues: the counts of the stats, and the settings rows.
	QueueList          Name = "queue.list"
	QueueCount         Name = "queue.count"
	QueueFinished      Name = "queue.finished"
	QueueOldest        Name = "queue.oldest"
	QueueSettingsList  Name = "queue.settings_list"
	QueuePause         Name = "queue.pause"
	QueueResume        Name = "queue.resume"
	QueueSetMaxWorkers Name = "queue.set_max_workers"
	// QueueDelete removes a queue's settings row (`queues remove`).
	QueueDelete Name = "queue.delete"

	// Limits: a queue's limits and the claim, release and sweep of a
	// limited queue's jobs (sqlexec/limits.go).
	QueueLimits        Name = "queue.limits"
	QueueLockLimits    Name = "queue.lock_limits"
	QueueSetLimits     Name = "queue.set_limits"
	QueueOccupied      Name = "queue.occupied"
	LimitCancelling    Name = "limit.cancelling"
	JobClaimCandidates Name = "job.claim_candidates"
	JobClaimIDs        Name = "job.claim_ids"
	JobBlock           Name = "job.block"
	JobDefer           Name = "job.defer"
	JobUnblock         Name = "job.unblock"
	JobRelease         Name = "job.release"
	LimitLockKeys      Name = "limit.lock_keys"
	LimitLockKey       Name = "limit.lock_key"
	LimitInsertKeys    Name = "limit.insert_keys"
	LimitKeys          Name = "limit.keys"
	LimitBlockedIn     Name = "limit.blocked_in"
	LimitKeyRunning    Name = "limit.key_running"
	LimitSequenceHead  Name = "limit.sequence_head"
	LimitBlockedIDs    Name = "limit.blocked_ids"
	LimitBlockedKeys   Name = "limit.blocked_keys"
	RateWindow         Name = "rate.window"
	RateInsert         Name = "rate.insert"
	RatePrune          Name = "rate.prune"
	LimitClock         Name = "limit.clock"

	// Certification (Capabilities.CertifyLocks, Galera): a write of the
	// rows a locking read just locked, so that the lock reaches the
	// transaction's write set, which is all another node's certification
	// compares. Each follows its lock: run.lock, queue.lock_limits,
	// limit.lock_keys and limit.lock_key.
	RunCertify       Name = "run.certify"
	QueueCertify     Name = "queue.certify"
	LimitCertifyKeys Name = "limit.certify_keys"

	// Processes: a client's row of lockstep_processes, written alone in a
	// transaction of its own by primary key, never with a job row; the
	// reads of the processes page and the CLI (sqlexec/processes.go).
	ProcessInsert    Name = "process.insert"
	ProcessHeartbeat Name = "process.heartbeat"
	ProcessDelete    Name = "process.delete"
	// ProcessStale lists processes whose heartbeat is older than a bound;
	// ProcessPrune deletes one of them by primary key if it still is.
	ProcessStale Name = "process.stale"
	ProcessPrune Name = "process.prune"
	ProcessList  Name = "process.list"
	// JobRunningByProcess: a process's RUNNING jobs (claimed_by), those a
	// dead process leaves for the reaper.
	JobRunningByProcess Name = "job.running_by_process"
	// History: the per-minute rollup of finished jobs (sqlexec/history.go).
	// HistoryAdd upserts one row, adding its counts, in the flush's
	// transaction, rows in primary-key order; HistoryRange reads a time
	// range; HistoryPruneBound finds where a bounded batch of old rows
	// ends, and HistoryPrune deletes the rows before it.
	HistoryAdd        Name = "history.add"
	HistoryRange      Name = "history.range"
	HistoryPruneBound Name = "history.prune_bound"
	HistoryPrune      Name = "history.prune"

	// Schema bookkeeping (migrate) and the server's version.
	MigrationCreateTable Name = "migration.create_table"
	MigrationList        Name = "migration.list"
	MigrationInsert      Name = "migration.insert"
	MigrationDelete      Name = "migration.delete"
	ServerVersion        Name = "server.version"
)

// required are the statements every dialect declares: the shared executor,
// migrate and the driver issue them whatever the database, so a catalogue
// without one is refused when it is built rather than found out by the
// first call that needs it.
var required = []Name{
	JobInsert, JobInsertUnique, JobIDByUniqueKey, RunLockShared,
	JobFinishDone, JobFinishDoneMany, JobFinishFailed, JobFinishRetry, JobFinishSnooze, JobHeartbeat, JobStateMany,
	JobReapSelect, JobReap, JobPruneSelect, JobPruneLock, JobDeleteMany,
	JobCancel, JobCancelMany, JobIDsLiveByRun, RunCancel,
	RunInsert, RunGet, RunCounts, RunCountsBounded, RunList,
	JobGet, JobList, JobListByRun, JobRetry, JobPageFloor, JobPage, JobPageFloorByRun, JobPageByRun,
	JobIDBounds, JobMatch, JobMatchCount, JobBulkRefs, JobRetryMany,
	DepInsert, DepDependents, DepDependencies, DepDeleteMany,
	JobInsertFlow, JobLockFlow, JobSetWaiting, JobPromote, JobCancelWaiting, JobRevive, JobOutputsMany, RunLock,
	QueueList, QueueCount, QueueFinished, QueueOldest, QueueSettingsList, QueuePause, QueueResume, QueueSetMaxWorkers, QueueDelete,
	QueueLimits, QueueLockLimits, QueueSetLimits, QueueOccupied, LimitCancelling, JobClaimCandidates, JobClaimIDs,
	JobBlock, JobDefer, JobUnblock, JobRelease, LimitLockKeys, LimitLockKey, LimitInsertKeys, LimitKeys, LimitBlockedIn, LimitKeyRunning,
	LimitSequenceHead, LimitBlockedIDs, LimitBlockedKeys, RateWindow, RateInsert, RatePrune, LimitClock,
	ProcessInsert, ProcessHeartbeat, ProcessDelete, ProcessStale, ProcessPrune, ProcessList, JobRunningByProcess,
	HistoryAdd, HistoryRange, HistoryPruneBound, HistoryPrune,
	MigrationCreateTable, MigrationList, MigrationInsert, MigrationDelete, ServerVersion,
}

// checkNames refuses a set of statements that lacks a required one, names
// one the queue does not know, or disagrees with the dialect's
// capabilities: a misspelt name would otherwise sit unused in the
// catalogue (and on the lock-order page) while the statement it meant to be
// is missing.
func checkNames(dialect string, caps Capabilities, declared map[Name]Statement) error {
	var missing, unknown []string
	for _, n := range required {
		if _, ok := declared[n]; !ok {
			missing = append(missing, string(n))
		}
	}
	optional := caps.optional()
	for n := range declared {
		isOptional := slices.ContainsFunc(optional, func(b bound) bool { return b.name == n })
		if !slices.Contains(required, n) && !isOptional {
			unknown = append(unknown, string(n))
		}
	}
	var problems []string
	if len(missing) > 0 {
		problems = append(problems, "missing required statements: "+strings.Join(missing, ", "))
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		problems = append(problems, "unknown statements: "+strings.Join(unknown, ", "))
	}
	problems = append(problems, caps.check(declared)...)
	if len(problems) > 0 {
		return fmt.Errorf("catalog %s: %s", dialect, strings.Join(problems, "; "))
	}
	return nil
}
