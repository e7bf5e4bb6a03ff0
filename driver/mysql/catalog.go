package mysql

import (
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/driver/internal/sqlexec"
)

// now is the database's clock in UTC whatever the session's time_zone, so a
// pool the user configured differently still compares like with like.
const now = "UTC_TIMESTAMP(6)"

// pkOnlyDelete is retention's delete: by primary key alone, after the rows
// were locked by primary key and checked.
const pkOnlyDelete = "DELETE FROM lockstep_jobs WHERE id IN ({ids})"

// depsDelete is retention's delete of the edges into pruned jobs: by the
// primary key's leading column alone, which the other index of the edges,
// (depends_on, job_id), cannot serve.
const depsDelete = "DELETE FROM lockstep_job_deps WHERE job_id IN ({ids})"

// queueDelete removes a queue's settings row by its whole primary key,
// which leaves no other index to choose (and single-table DELETE takes no
// hint).
const queueDelete = "DELETE FROM lockstep_queues WHERE name = ?"

// processDelete and processPrune remove a process's row by its whole
// primary key, which leaves no other index to choose (and single-table
// DELETE takes no hint); the prune only if its heartbeat is still old.
const (
	processDelete = "DELETE FROM lockstep_processes WHERE id = ?"
	processPrune  = "DELETE FROM lockstep_processes WHERE id = ? AND heartbeat_at < " + now + " - INTERVAL ? MICROSECOND"
)

// newCatalog declares every statement the queue issues on MySQL/MariaDB.
// returning is false on MySQL 8, which has no INSERT ... RETURNING;
// certify is true on a Galera node (catalog.Capabilities.CertifyLocks).
func newCatalog(flavor string, returning, certify bool) (*catalog.Catalog, error) {
	indexNames := map[catalog.Index]string{
		catalog.RunsPrimary:        "PRIMARY",
		catalog.JobsPrimary:        "PRIMARY",
		catalog.JobsClaim:          "lockstep_jobs_claim",
		catalog.JobsRun:            "lockstep_jobs_run",
		catalog.JobsHeartbeat:      "lockstep_jobs_heartbeat",
		catalog.JobsQueueStatus:    "lockstep_jobs_queue_status",
		catalog.JobsUnique:         "lockstep_jobs_unique",
		catalog.DepsPrimary:        "PRIMARY",
		catalog.DepsUp:             "lockstep_job_deps_up",
		catalog.JobsLimit:          "lockstep_jobs_limit",
		catalog.QueuesPrimary:      "PRIMARY",
		catalog.LimitKeysPrimary:   "PRIMARY",
		catalog.LimitStartsPrimary: "PRIMARY",
		catalog.ProcessesPrimary:   "PRIMARY",
		catalog.HistoryPrimary:     "PRIMARY",
		catalog.JobsText:           "lockstep_jobs_text",
	}
	// statusIndexes are the indexes whose entries change with a job's status.
	statusIndexes := []catalog.Index{catalog.JobsClaim, catalog.JobsHeartbeat, catalog.JobsQueueStatus, catalog.JobsUnique, catalog.JobsLimit}
	ret := ""
	if returning {
		ret = " RETURNING id"
	}
	const jobs = "lockstep_jobs"
	const queues = "lockstep_queues"
	const processes = "lockstep_processes"
	const deps = "lockstep_job_deps"
	const byPK = "UPDATE lockstep_jobs FORCE INDEX (PRIMARY) SET "
	history := "error_history = JSON_MERGE_PRESERVE(error_history, ?)"
	// pageFilter is the optional status, queue and kind of a job page; an
	// empty parameter matches every row.
	const pageFilter = " AND (? = '' OR status = ?) AND (? = '' OR queue = ?) AND (? = '' OR kind = ?)" +
		// The views: scheduled (PENDING, available later) and retrying
		// (PENDING after a failed attempt), each on when its flag is 1.
		" AND (? = 0 OR (status = 'PENDING' AND available_at > " + now + "))" +
		" AND (? = 0 OR (status = 'PENDING' AND last_error IS NOT NULL))" +
		// The search: a lower-case LIKE pattern (with ! escaping) over the
		// args and the metadata of the window's rows, which are stored
		// with a binary collation: lowered here, case-insensitive.
		" AND (? = '' OR LOWER(args) LIKE ? ESCAPE '!' OR LOWER(metadata) LIKE ? ESCAPE '!')"
	// matchFilter narrows a bulk action's windows further: a run, the
	// statuses the action applies to (retry: FAILED; cancel: the live
	// ones; delete: the final ones, not a job cancelled while its worker
	// still runs it), and a finish time.
	const matchFilter = " AND (? = 0 OR run_id = ?)" +
		" AND (? = 0 OR status = 'FAILED')" +
		" AND (? = 0 OR status IN ('WAITING', 'PENDING', 'BLOCKED', 'RUNNING'))" +
		" AND (? = 0 OR (status IN ('DONE', 'FAILED', 'CANCELLED') AND finished_at IS NOT NULL))" +
		" AND (? = 0 OR finished_at >= ?)"
	spec := catalog.Spec{
		Dialect: flavor, IndexNames: indexNames,
		// No UPDATE ... RETURNING: the claim is a locking read, then an
		// update by primary key; and the batched DONE cannot say which rows
		// it changed, so a partial one is redone under job.lock_many.
		Capabilities: catalog.Capabilities{LockMany: true, StatusIndex: true, TextIndex: true, CertifyLocks: certify},
	}
	var extra []catalog.Statement
	extra = append(extra, limitStatements(statusIndexes)...)
	extra = append(extra, historyStatements()...)
	extra = append(extra, searchStatements(pageFilter)...)
	if certify {
		extra = append(extra, certifyStatements()...)
	}
	return catalog.New(spec, append([]catalog.Statement{
		catalog.Statement{
			Name: catalog.JobInsert, Table: jobs, Rows: true, Returning: returning,
			SQL:    "INSERT INTO lockstep_jobs (run_id, queue, kind, args, status, priority, max_attempts, available_at, metadata, limit_key, error_history, created_at) VALUES {rows}" + ret,
			RowSQL: "(?, ?, ?, ?, 'PENDING', ?, ?, COALESCE(?, " + now + "), ?, ?, '[]', " + now + ")",
		},
		catalog.Statement{
			// One unique job. A duplicate fails with 1062 (statement rolled
			// back, transaction kept) and the executor reads the holder.
			// Not INSERT ... ON DUPLICATE KEY UPDATE: that would lock the
			// holder's unique-index record and then its PRIMARY record,
			// the reverse of every status change's order.
			Name: catalog.JobInsertUnique, Table: jobs,
			SQL: "INSERT INTO lockstep_jobs (run_id, queue, kind, args, status, priority, max_attempts, available_at, metadata, limit_key, unique_key, unique_states, error_history, created_at)" +
				" VALUES (?, ?, ?, ?, 'PENDING', ?, ?, COALESCE(?, " + now + "), ?, ?, ?, ?, '[]', " + now + ")",
		},
		catalog.Statement{
			// The job holding a key: a consistent read of the unique index.
			Name: catalog.JobIDByUniqueKey, Table: jobs, Finds: catalog.JobsUnique,
			SQL: "SELECT id FROM lockstep_jobs FORCE INDEX (lockstep_jobs_unique) WHERE unique_active = ?",
		},
		catalog.Statement{
			Name: catalog.RunLockShared, Table: "lockstep_runs", Finds: catalog.RunsPrimary, Locks: true,
			SQL: "SELECT status, callbacks FROM lockstep_runs FORCE INDEX (PRIMARY) WHERE id = ? LOCK IN SHARE MODE",
		},
		catalog.Statement{
			Name: catalog.JobClaimSelect, Table: jobs, Finds: catalog.JobsClaim, Locks: true, Claim: true,
			SQL: "SELECT " + sqlexec.JobColumns + ", " + now + " FROM lockstep_jobs FORCE INDEX (lockstep_jobs_claim)" +
				" WHERE queue = ? AND status = 'PENDING' AND available_at <= " + now +
				" ORDER BY priority, available_at, id LIMIT ? FOR UPDATE SKIP LOCKED",
		},
		catalog.Statement{
			// job.claim_select from a key on. The key is spelt out column by
			// column: MySQL and MariaDB read a row comparison (a, b, c) > (…)
			// as a filter over the whole (queue, status) range, where this
			// form is a range of the claim index that starts at the key.
			Name: catalog.JobClaimSelectAfter, Table: jobs, Finds: catalog.JobsClaim, Locks: true, Claim: true,
			SQL: "SELECT " + sqlexec.JobColumns + ", " + now + " FROM lockstep_jobs FORCE INDEX (lockstep_jobs_claim)" +
				" WHERE queue = ? AND status = 'PENDING' AND available_at <= " + now +
				" AND (priority > ? OR (priority = ? AND (available_at > ? OR (available_at = ? AND id > ?))))" +
				" ORDER BY priority, available_at, id LIMIT ? FOR UPDATE SKIP LOCKED",
		},
		catalog.Statement{
			Name: catalog.JobClaimUpdate, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true, IDList: true,
			SQL: byPK + "status = 'RUNNING', attempts = attempts + 1, started_at = ?, heartbeat_at = ?, claimed_by = ? WHERE id IN ({ids}) AND status = 'PENDING'",
		},
		catalog.Statement{
			Name: catalog.JobFinishDone, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: byPK + "status = 'DONE', output = ?, finished_at = " + now + ", heartbeat_at = " + now + " WHERE id = ? AND status = 'RUNNING' AND attempts = ?",
		},
		catalog.Statement{
			// The batched DONE of many attempts, all of one attempt number;
			// a batch that mixes attempt numbers takes job.lock_many first.
			Name: catalog.JobFinishDoneMany, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true, IDList: true,
			SQL: byPK + "status = 'DONE', finished_at = " + now + ", heartbeat_at = " + now + " WHERE attempts = ? AND status = 'RUNNING' AND id IN ({ids})",
		},
		catalog.Statement{
			// Locks rows by primary key in ascending id order, before
			// writes that visit them in more than one statement.
			Name: catalog.JobLockMany, Table: jobs, Finds: catalog.JobsPrimary, Locks: true, IDList: true,
			SQL: "SELECT id FROM lockstep_jobs FORCE INDEX (PRIMARY) WHERE id IN ({ids}) ORDER BY id FOR UPDATE",
		},
		catalog.Statement{
			Name: catalog.JobFinishFailed, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: byPK + "status = 'FAILED', finished_at = " + now + ", heartbeat_at = " + now + ", last_error = ?, " + history + " WHERE id = ? AND status = 'RUNNING' AND attempts = ?",
		},
		catalog.Statement{
			Name: catalog.JobFinishRetry, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: byPK + "status = 'PENDING', heartbeat_at = " + now + ", available_at = " + now + " + INTERVAL ? MICROSECOND, last_error = ?, " + history + " WHERE id = ? AND status = 'RUNNING' AND attempts = ?",
		},
		catalog.Statement{
			Name: catalog.JobFinishSnooze, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: byPK + "status = 'PENDING', heartbeat_at = " + now + ", available_at = " + now + " + INTERVAL ? MICROSECOND, max_attempts = max_attempts + 1 WHERE id = ? AND status = 'RUNNING' AND attempts = ?",
		},
		catalog.Statement{
			Name: catalog.JobHeartbeat, Table: jobs, Finds: catalog.JobsPrimary, Changes: []catalog.Index{catalog.JobsHeartbeat, catalog.JobsQueueStatus}, Locks: true, IDList: true,
			SQL: byPK + "heartbeat_at = " + now + " WHERE id IN ({ids}) AND status = 'RUNNING'",
		},
		catalog.Statement{
			Name: catalog.JobStateMany, Table: jobs, Finds: catalog.JobsPrimary, IDList: true,
			SQL: "SELECT id, status, attempts FROM lockstep_jobs FORCE INDEX (PRIMARY) WHERE id IN ({ids})",
		},
		catalog.Statement{
			Name: catalog.JobReapSelect, Table: jobs, Finds: catalog.JobsHeartbeat,
			SQL: "SELECT id, attempts, max_attempts, run_id, dependents, queue, limit_key FROM lockstep_jobs FORCE INDEX (lockstep_jobs_heartbeat)" +
				" WHERE status = 'RUNNING' AND heartbeat_at < ? ORDER BY heartbeat_at, id LIMIT ?",
		},
		catalog.Statement{
			Name: catalog.JobReap, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: byPK + "status = IF(attempts >= max_attempts, 'FAILED', 'PENDING'), available_at = " + now +
				", finished_at = IF(attempts >= max_attempts, " + now + ", NULL), heartbeat_at = " + now + ", last_error = ?, " + history +
				" WHERE id = ? AND status = 'RUNNING' AND attempts = ? AND heartbeat_at < ?",
		},
		catalog.Statement{
			Name: catalog.JobCancel, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: byPK + "finished_at = CASE WHEN status = 'RUNNING' THEN NULL ELSE " + now + " END, status = 'CANCELLED', heartbeat_at = " + now + " WHERE id = ? AND status IN ('WAITING', 'PENDING', 'BLOCKED', 'RUNNING')",
		},
		catalog.Statement{
			Name: catalog.JobCancelMany, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true, IDList: true,
			SQL: byPK + "finished_at = CASE WHEN status = 'RUNNING' THEN NULL ELSE " + now + " END, status = 'CANCELLED', heartbeat_at = " + now + " WHERE id IN ({ids}) AND status IN ('WAITING', 'PENDING', 'BLOCKED', 'RUNNING')",
		},
		catalog.Statement{
			Name: catalog.JobIDsLiveByRun, Table: jobs, Finds: catalog.JobsRun,
			SQL: "SELECT id, queue, limit_key FROM lockstep_jobs FORCE INDEX (lockstep_jobs_run) WHERE run_id = ? AND status IN ('WAITING', 'PENDING', 'BLOCKED', 'RUNNING') ORDER BY id",
		},
		catalog.Statement{
			Name: catalog.JobGet, Table: jobs, Finds: catalog.JobsPrimary,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs WHERE id = ?",
		},
		catalog.Statement{
			Name: catalog.JobList, Table: jobs, Finds: catalog.JobsPrimary,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs FORCE INDEX (PRIMARY) WHERE id > ? AND (? = '' OR status = ?) ORDER BY id LIMIT ?",
		},
		catalog.Statement{
			Name: catalog.JobListByRun, Table: jobs, Finds: catalog.JobsRun,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs FORCE INDEX (lockstep_jobs_run) WHERE run_id = ? AND id > ? AND (? = '' OR status = ?) ORDER BY id LIMIT ?",
		},
		catalog.Statement{
			Name: catalog.RunInsert, Table: "lockstep_runs", Returning: returning,
			SQL: "INSERT INTO lockstep_runs (name, status, metadata, callbacks, created_at) VALUES (?, 'ACTIVE', ?, ?, " + now + ")" + ret,
		},
		catalog.Statement{
			Name: catalog.RunGet, Table: "lockstep_runs", Finds: catalog.RunsPrimary,
			SQL: "SELECT " + sqlexec.RunColumns + " FROM lockstep_runs WHERE id = ?",
		},
		catalog.Statement{
			Name: catalog.RunCounts, Table: jobs, Finds: catalog.JobsRun,
			SQL: "SELECT status, COUNT(*) FROM lockstep_jobs FORCE INDEX (lockstep_jobs_run) WHERE run_id = ? GROUP BY status",
		},
		catalog.Statement{
			Name: catalog.RunCancel, Table: "lockstep_runs", Finds: catalog.RunsPrimary, Locks: true,
			SQL: "UPDATE lockstep_runs FORCE INDEX (PRIMARY) SET status = 'CANCELLED', cancelled_at = COALESCE(cancelled_at, " + now + ") WHERE id = ?",
		},
		catalog.Statement{
			Name: catalog.JobRetry, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: byPK + "status = 'PENDING', available_at = " + now + ", heartbeat_at = " + now + ", finished_at = NULL," +
				" max_attempts = GREATEST(max_attempts, attempts + 1) WHERE id = ? AND status = 'FAILED'",
		},
		// Workflows. The edges are written with their jobs and read without
		// locks; the jobs they name are then locked by primary key in
		// ascending id order (job.lock_flow), after the run row — and a
		// dependent's id is always above its dependencies' — and written one
		// by one by primary key, each re-checking the status it expects.
		catalog.Statement{
			Name: catalog.DepInsert, Table: deps, Rows: true,
			SQL:    "INSERT INTO lockstep_job_deps (job_id, depends_on) VALUES {rows}",
			RowSQL: "(?, ?)",
		},
		catalog.Statement{
			Name: catalog.DepDependents, Table: deps, Finds: catalog.DepsUp, IDList: true,
			SQL: "SELECT job_id, depends_on FROM lockstep_job_deps FORCE INDEX (lockstep_job_deps_up) WHERE depends_on IN ({ids})",
		},
		catalog.Statement{
			Name: catalog.DepDependencies, Table: deps, Finds: catalog.DepsPrimary, IDList: true,
			SQL: "SELECT job_id, depends_on FROM lockstep_job_deps FORCE INDEX (PRIMARY) WHERE job_id IN ({ids})",
		},
		catalog.Statement{
			// Retention's: the edges into pruned jobs, by the primary key's
			// prefix, after the jobs themselves.
			Name: catalog.DepDeleteMany, Table: deps, Finds: catalog.DepsPrimary, Changes: []catalog.Index{catalog.DepsUp}, Locks: true, IDList: true,
			SQL: depsDelete,
		},
		catalog.Statement{
			// A workflow's jobs, inserted as they start: WAITING with their
			// count of dependencies, or PENDING; with their count of
			// dependents, policy and callback condition.
			Name: catalog.JobInsertFlow, Table: jobs, Rows: true, Returning: returning,
			SQL: "INSERT INTO lockstep_jobs (run_id, queue, kind, args, status, priority, max_attempts, available_at, metadata," +
				" waiting_on, dependents, dep_policy, callback, limit_key, error_history, created_at) VALUES {rows}" + ret,
			RowSQL: "(?, ?, ?, ?, ?, ?, ?, COALESCE(?, " + now + "), ?, ?, ?, ?, ?, ?, '[]', " + now + ")",
		},
		catalog.Statement{
			Name: catalog.JobLockFlow, Table: jobs, Finds: catalog.JobsPrimary, Locks: true, IDList: true,
			SQL: "SELECT id, status, waiting_on, dep_policy, blocked_by, callback FROM lockstep_jobs FORCE INDEX (PRIMARY) WHERE id IN ({ids}) ORDER BY id FOR UPDATE",
		},
		catalog.Statement{
			Name: catalog.JobSetWaiting, Table: jobs, Finds: catalog.JobsPrimary, Locks: true,
			SQL: byPK + "waiting_on = ? WHERE id = ? AND status = 'WAITING'",
		},
		catalog.Statement{
			// A callback's args carry the run's counts; other jobs keep theirs.
			Name: catalog.JobPromote, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: byPK + "status = 'PENDING', waiting_on = 0, available_at = " + now + ", heartbeat_at = " + now + ", args = COALESCE(?, args) WHERE id = ? AND status = 'WAITING'",
		},
		catalog.Statement{
			Name: catalog.JobCancelWaiting, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: byPK + "status = 'CANCELLED', finished_at = " + now + ", heartbeat_at = " + now + ", last_error = ?, blocked_by = ? WHERE id = ? AND status = 'WAITING'",
		},
		catalog.Statement{
			Name: catalog.JobRevive, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: byPK + "status = ?, waiting_on = ?, available_at = " + now + ", heartbeat_at = " + now + ", finished_at = NULL, last_error = NULL, blocked_by = NULL WHERE id = ? AND status = 'CANCELLED'",
		},
		catalog.Statement{
			Name: catalog.JobOutputsMany, Table: jobs, Finds: catalog.JobsPrimary, IDList: true,
			SQL: "SELECT id, kind, status, output FROM lockstep_jobs FORCE INDEX (PRIMARY) WHERE id IN ({ids}) ORDER BY id",
		},
		catalog.Statement{
			// The run row in exclusive mode: a retry that brings back the
			// jobs its failure cancelled recounts their dependencies with
			// no finish of the run in flight (each holds the row shared).
			Name: catalog.RunLock, Table: "lockstep_runs", Finds: catalog.RunsPrimary, Locks: true,
			SQL: "SELECT status, callbacks FROM lockstep_runs FORCE INDEX (PRIMARY) WHERE id = ? FOR UPDATE",
		},
		catalog.Statement{
			Name: catalog.JobPageFloor, Table: jobs, Finds: catalog.JobsPrimary,
			SQL: "SELECT COUNT(*), COALESCE(MIN(id), 0) FROM (SELECT id FROM lockstep_jobs FORCE INDEX (PRIMARY) WHERE id < ? ORDER BY id DESC LIMIT ?) w",
		},
		catalog.Statement{
			Name: catalog.JobPage, Table: jobs, Finds: catalog.JobsPrimary,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs FORCE INDEX (PRIMARY) WHERE id < ? AND id >= ?" + pageFilter + " ORDER BY id DESC LIMIT ?",
		},
		// Bulk actions: windows of the primary key read without locks,
		// then each batch written by primary key (job.retry_many,
		// job.cancel_many, retention's job.prune_lock and deletes).
		catalog.Statement{
			Name: catalog.JobIDBounds, Table: jobs, Finds: catalog.JobsPrimary,
			// Each end read from the primary key (MIN/MAX would be
			// answered before the plan, leaving none to check).
			SQL: "SELECT COALESCE((SELECT id FROM lockstep_jobs FORCE INDEX (PRIMARY) ORDER BY id LIMIT 1), 0)," +
				" COALESCE((SELECT id FROM lockstep_jobs FORCE INDEX (PRIMARY) ORDER BY id DESC LIMIT 1), 0)",
		},
		catalog.Statement{
			Name: catalog.JobMatch, Table: jobs, Finds: catalog.JobsPrimary,
			SQL: "SELECT id FROM lockstep_jobs FORCE INDEX (PRIMARY) WHERE id > ? AND id <= ?" + pageFilter + matchFilter + " ORDER BY id LIMIT ?",
		},
		catalog.Statement{
			Name: catalog.JobMatchCount, Table: jobs, Finds: catalog.JobsPrimary,
			SQL: "SELECT COUNT(*) FROM lockstep_jobs FORCE INDEX (PRIMARY) WHERE id > ? AND id <= ?" + pageFilter + matchFilter,
		},
		catalog.Statement{
			Name: catalog.JobMatchCountStatus, Table: jobs, Finds: catalog.JobsHeartbeat,
			SQL: "SELECT COUNT(*) FROM lockstep_jobs FORCE INDEX (lockstep_jobs_heartbeat) WHERE id > ? AND id <= ?" + pageFilter + matchFilter + " AND status = ?",
		},
		catalog.Statement{
			Name: catalog.JobBulkRefs, Table: jobs, Finds: catalog.JobsPrimary, IDList: true,
			SQL: "SELECT " + sqlexec.BulkRefColumns + " FROM lockstep_jobs FORCE INDEX (PRIMARY) WHERE id IN ({ids})",
		},
		catalog.Statement{
			Name: catalog.JobRetryMany, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true, IDList: true,
			SQL: byPK + "status = 'PENDING', available_at = " + now + ", heartbeat_at = " + now + ", finished_at = NULL," +
				" max_attempts = GREATEST(max_attempts, attempts + 1) WHERE id IN ({ids}) AND status = 'FAILED'",
		},
		catalog.Statement{
			Name: catalog.JobPageFloorByRun, Table: jobs, Finds: catalog.JobsRun,
			SQL: "SELECT COUNT(*), COALESCE(MIN(id), 0) FROM (SELECT id FROM lockstep_jobs FORCE INDEX (lockstep_jobs_run) WHERE run_id = ? AND id < ? ORDER BY id DESC LIMIT ?) w",
		},
		catalog.Statement{
			Name: catalog.JobPageByRun, Table: jobs, Finds: catalog.JobsRun,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs FORCE INDEX (lockstep_jobs_run) WHERE run_id = ? AND id < ? AND id >= ?" + pageFilter + " ORDER BY id DESC LIMIT ?",
		},
		catalog.Statement{
			Name: catalog.RunList, Table: "lockstep_runs", Finds: catalog.RunsPrimary,
			SQL: "SELECT " + sqlexec.RunColumns + " FROM lockstep_runs FORCE INDEX (PRIMARY) WHERE id < ? ORDER BY id DESC LIMIT ?",
		},
		catalog.Statement{
			Name: catalog.RunCountsBounded, Table: jobs, Finds: catalog.JobsRun,
			SQL: "SELECT status, COUNT(*) FROM (SELECT status FROM lockstep_jobs FORCE INDEX (lockstep_jobs_run) WHERE run_id = ? ORDER BY id LIMIT ?) w GROUP BY status",
		},
		catalog.Statement{
			// A loose index scan: one index dive per queue.
			Name: catalog.QueueList, Table: jobs, Finds: catalog.JobsQueueStatus,
			SQL: "SELECT queue FROM lockstep_jobs FORCE INDEX (lockstep_jobs_queue_status) GROUP BY queue ORDER BY queue LIMIT ?",
		},
		catalog.Statement{
			Name: catalog.QueueCount, Table: jobs, Finds: catalog.JobsQueueStatus,
			SQL: "SELECT COUNT(*) FROM (SELECT 1 FROM lockstep_jobs FORCE INDEX (lockstep_jobs_queue_status) WHERE queue = ? AND status = ? LIMIT ?) w",
		},
		catalog.Statement{
			Name: catalog.QueueFinished, Table: jobs, Finds: catalog.JobsQueueStatus,
			SQL: "SELECT COUNT(*) FROM (SELECT 1 FROM lockstep_jobs FORCE INDEX (lockstep_jobs_queue_status)" +
				" WHERE queue = ? AND status = ? AND heartbeat_at >= " + now + " - INTERVAL ? MICROSECOND LIMIT ?) w",
		},
		// Retention: the old jobs of one final status in one queue, oldest
		// first, read without locks; then locked by primary key in id
		// order, checked again, and deleted by primary key.
		catalog.Statement{
			Name: catalog.JobPruneSelect, Table: jobs, Finds: catalog.JobsQueueStatus,
			SQL: "SELECT id FROM lockstep_jobs FORCE INDEX (lockstep_jobs_queue_status)" +
				" WHERE queue = ? AND status = ? AND heartbeat_at < " + now + " - INTERVAL ? MICROSECOND ORDER BY heartbeat_at LIMIT ?",
		},
		catalog.Statement{
			Name: catalog.JobPruneLock, Table: jobs, Finds: catalog.JobsPrimary, Locks: true, IDList: true,
			SQL: "SELECT id FROM lockstep_jobs FORCE INDEX (PRIMARY) WHERE status = ? AND heartbeat_at < " + now +
				" - INTERVAL ? MICROSECOND AND id IN ({ids}) ORDER BY id FOR UPDATE",
		},
		catalog.Statement{
			// The primary key alone in the WHERE: no secondary index can
			// serve it. (Single-table DELETE takes no index hint; the
			// multi-table form that does is planned as a full scan on a
			// near-empty table.)
			Name: catalog.JobDeleteMany, Table: jobs, Finds: catalog.JobsPrimary, Changes: []catalog.Index{catalog.JobsClaim, catalog.JobsRun, catalog.JobsHeartbeat, catalog.JobsQueueStatus, catalog.JobsUnique}, Locks: true, IDList: true,
			SQL: pkOnlyDelete,
		},
		catalog.Statement{
			Name: catalog.QueueOldest, Table: jobs, Finds: catalog.JobsClaim,
			SQL: "SELECT MIN(available_at), " + now + ", COUNT(*) FROM (SELECT available_at FROM lockstep_jobs FORCE INDEX (lockstep_jobs_claim)" +
				" WHERE queue = ? AND status = 'PENDING' AND available_at <= " + now + " ORDER BY priority, available_at, id LIMIT ?) w",
		},
		// Queue settings: one row per queue, upserted by primary key in
		// a statement of its own, never in a transaction with a job or run.
		catalog.Statement{
			Name: catalog.QueueSettingsList, Table: queues,
			SQL: "SELECT name, paused_at, max_workers, updated_at, concurrency, key_concurrency, sequence, rate, rate_period_us, rate_by_key FROM lockstep_queues ORDER BY name",
		},
		catalog.Statement{
			// A queue's settings row by primary key, alone in its
			// transaction: the only row it locks, which a limited claim
			// takes first (or not at all) and no write holds with another.
			Name: catalog.QueueDelete, Table: queues, Finds: catalog.QueuesPrimary, Locks: true,
			SQL: queueDelete,
		},
		catalog.Statement{
			// A client registers itself: a new row, alone in its
			// transaction.
			Name: catalog.ProcessInsert, Table: processes,
			SQL: "INSERT INTO lockstep_processes (id, host, pid, version, queues, workers, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, " + now + ", " + now + ")",
		},
		catalog.Statement{
			// The process's own row by primary key, alone in its
			// transaction, on the job heartbeat's cadence but never in the
			// same transaction as a job row.
			Name: catalog.ProcessHeartbeat, Table: processes, Finds: catalog.ProcessesPrimary, Locks: true,
			SQL: "UPDATE lockstep_processes FORCE INDEX (PRIMARY) SET heartbeat_at = " + now + " WHERE id = ?",
		},
		catalog.Statement{
			// A clean stop removes the process's row by primary key.
			Name: catalog.ProcessDelete, Table: processes, Finds: catalog.ProcessesPrimary, Locks: true,
			SQL: processDelete,
		},
		catalog.Statement{
			// The processes long gone: a consistent read of the small
			// table in id order, bounded; each is then deleted by
			// process.prune.
			Name: catalog.ProcessStale, Table: processes, Finds: catalog.ProcessesPrimary,
			SQL: "SELECT id FROM lockstep_processes FORCE INDEX (PRIMARY) WHERE heartbeat_at < " + now + " - INTERVAL ? MICROSECOND ORDER BY id LIMIT ?",
		},
		catalog.Statement{
			// One long-gone process's row by primary key, if its heartbeat
			// is still old, alone in its transaction.
			Name: catalog.ProcessPrune, Table: processes, Finds: catalog.ProcessesPrimary, Locks: true,
			SQL: processPrune,
		},
		catalog.Statement{
			// The processes page and `lockstep processes`: the small table
			// in id order, with the database's clock to age heartbeats by.
			Name: catalog.ProcessList, Table: processes, Finds: catalog.ProcessesPrimary,
			SQL: "SELECT id, host, pid, version, queues, workers, started_at, heartbeat_at, " + now + " FROM lockstep_processes FORCE INDEX (PRIMARY) ORDER BY id LIMIT ?",
		},
		catalog.Statement{
			// A process's RUNNING jobs, without locks: no index on
			// claimed_by (the claim would have to change its entries); the
			// heartbeat index's RUNNING range — every job some worker runs,
			// a few per worker — filtered by claimed_by, bounded by LIMIT.
			Name: catalog.JobRunningByProcess, Table: jobs, Finds: catalog.JobsHeartbeat,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs FORCE INDEX (lockstep_jobs_heartbeat)" +
				" WHERE status = 'RUNNING' AND claimed_by = ? ORDER BY heartbeat_at, id LIMIT ?",
		},
		catalog.Statement{
			Name: catalog.QueuePause, Table: queues, Locks: true,
			SQL: "INSERT INTO lockstep_queues (name, paused_at, updated_at) VALUES (?, " + now + ", " + now + ")" +
				" ON DUPLICATE KEY UPDATE paused_at = COALESCE(paused_at, " + now + "), updated_at = " + now,
		},
		catalog.Statement{
			Name: catalog.QueueResume, Table: queues, Locks: true,
			SQL: "INSERT INTO lockstep_queues (name, paused_at, updated_at) VALUES (?, NULL, " + now + ")" +
				" ON DUPLICATE KEY UPDATE paused_at = NULL, updated_at = " + now,
		},
		catalog.Statement{
			Name: catalog.QueueSetMaxWorkers, Table: queues, Locks: true,
			SQL: "INSERT INTO lockstep_queues (name, max_workers, updated_at) VALUES (?, ?, " + now + ")" +
				" ON DUPLICATE KEY UPDATE max_workers = VALUES(max_workers), updated_at = " + now,
		},
		catalog.Statement{
			Name: catalog.MigrationCreateTable, Table: "lockstep_migrations",
			SQL: "CREATE TABLE IF NOT EXISTS lockstep_migrations (version INT NOT NULL PRIMARY KEY, name VARCHAR(255) NOT NULL, applied_at DATETIME(6) NOT NULL) ENGINE=InnoDB",
		},
		catalog.Statement{
			Name: catalog.MigrationList, Table: "lockstep_migrations",
			SQL: "SELECT version, name, applied_at FROM lockstep_migrations ORDER BY version",
		},
		catalog.Statement{
			Name: catalog.MigrationInsert, Table: "lockstep_migrations",
			SQL: "INSERT INTO lockstep_migrations (version, name, applied_at) VALUES (?, ?, " + now + ")",
		},
		catalog.Statement{
			Name: catalog.MigrationDelete, Table: "lockstep_migrations",
			SQL: "DELETE FROM lockstep_migrations WHERE version = ?",
		},
		catalog.Statement{
			Name: catalog.ServerVersion, SQL: "SELECT VERSION()",
		},
	}, extra...)...)
}

// Catalog returns the statement catalogue the driver uses on MariaDB
// (mariadb true) or MySQL 8, without a connection: for documentation and
// offline audits of the lock order.
func Catalog(mariadb bool) *catalog.Catalog {
	if mariadb {
		return catalog.Must(newCatalog("mariadb", true, false))
	}
	return catalog.Must(newCatalog("mysql", false, false))
}

// GaleraCatalog returns the catalogue the driver uses on a MariaDB Galera
// node: MariaDB's, with every lock that guards a decision certified
// (catalog.Capabilities.CertifyLocks).
func GaleraCatalog() *catalog.Catalog {
	return catalog.Must(newCatalog("mariadb", true, true))
}
