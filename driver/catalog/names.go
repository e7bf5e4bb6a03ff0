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
	DepInsert, DepDependents, DepDependencies, DepDeleteMany,
	JobInsertFlow, JobLockFlow, JobSetWaiting, JobPromote, JobCancelWaiting, JobRevive, JobOutputsMany, RunLock,
	QueueList, QueueCount, QueueFinished, QueueOldest, QueueSettingsList, QueuePause, QueueResume, QueueSetMaxWorkers,
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
