package sqlite

import (
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/driver/internal/sqlexec"
)

const now = "strftime('%Y-%m-%d %H:%M:%f', 'now')"

// plus is now plus a parameter in microseconds.
const plus = "strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', ? / 1000000.0))"

// newCatalog declares every statement the queue issues on SQLite. SQLite has
// one writer at a time (BEGIN IMMEDIATE), so there is no lock order to get
// wrong; the statements still find rows the same way as on the servers.
func newCatalog() (*catalog.Catalog, error) {
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
	}
	statusIndexes := []catalog.Index{catalog.JobsClaim, catalog.JobsHeartbeat, catalog.JobsQueueStatus, catalog.JobsUnique, catalog.JobsLimit}
	const jobs = "lockstep_jobs"
	const queues = "lockstep_queues"
	const processes = "lockstep_processes"
	const deps = "lockstep_job_deps"
	// History entries arrive as a one-element JSON array (the shape MySQL
	// and PostgreSQL concatenate); json() keeps the element JSON, not text.
	// pageFilter is the optional status, queue and kind of a job page; an
	// empty parameter matches every row.
	const pageFilter = " AND (? = '' OR status = ?) AND (? = '' OR queue = ?) AND (? = '' OR kind = ?)" +
		// The views: scheduled (PENDING, available later) and retrying
		// (PENDING after a failed attempt), each on when its flag is 1.
		" AND (? = 0 OR (status = 'PENDING' AND available_at > " + now + "))" +
		" AND (? = 0 OR (status = 'PENDING' AND last_error IS NOT NULL))" +
		// The search: a LIKE pattern (with ! escaping) over the args and
		// the metadata of the window's rows, case-insensitive.
		" AND (? = '' OR args LIKE ? ESCAPE '!' OR metadata LIKE ? ESCAPE '!')"
	// matchFilter: see the MySQL catalogue.
	const matchFilter = " AND (? = 0 OR run_id = ?)" +
		" AND (? = 0 OR status = 'FAILED')" +
		" AND (? = 0 OR status IN ('WAITING', 'PENDING', 'BLOCKED', 'RUNNING'))" +
		" AND (? = 0 OR (status IN ('DONE', 'FAILED', 'CANCELLED') AND finished_at IS NOT NULL))" +
		" AND (? = 0 OR finished_at >= ?)"
	const history = "error_history = json_insert(error_history, '$[#]', json(json_extract(?, '$[0]')))"
	// One writer at a time: no row lock to order, so no locking reads.
	spec := catalog.Spec{
		Dialect: "sqlite", IndexNames: indexNames,
		Capabilities: catalog.Capabilities{OneStatementClaim: true},
	}
	return catalog.New(spec, append([]catalog.Statement{
		catalog.Statement{
			Name: catalog.JobInsert, Table: jobs, Rows: true, Returning: true,
			SQL:    "INSERT INTO lockstep_jobs (run_id, queue, kind, args, status, priority, max_attempts, available_at, metadata, limit_key) VALUES {rows} RETURNING id",
			RowSQL: "(?, ?, ?, ?, 'PENDING', ?, ?, COALESCE(?, " + now + "), ?, ?)",
		},
		catalog.Statement{
			// One unique job; a duplicate inserts nothing and returns no row.
			Name: catalog.JobInsertUnique, Table: jobs, Returning: true,
			SQL: "INSERT INTO lockstep_jobs (run_id, queue, kind, args, status, priority, max_attempts, available_at, metadata, limit_key, unique_key, unique_states)" +
				" VALUES (?, ?, ?, ?, 'PENDING', ?, ?, COALESCE(?, " + now + "), ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id",
		},
		catalog.Statement{
			Name: catalog.JobIDByUniqueKey, Table: jobs, Finds: catalog.JobsUnique,
			SQL: "SELECT id FROM lockstep_jobs INDEXED BY lockstep_jobs_unique WHERE unique_key = ? AND unique_key IS NOT NULL AND " + sqlexec.UniqueHeld,
		},
		catalog.Statement{
			Name: catalog.RunLockShared, Table: "lockstep_runs", Finds: catalog.RunsPrimary,
			SQL: "SELECT status, callbacks FROM lockstep_runs WHERE id = ?",
		},
		catalog.Statement{
			Name: catalog.JobClaim, Table: jobs, Finds: catalog.JobsClaim, Changes: statusIndexes, Locks: true, Claim: true,
			// Numbered parameters: the claiming process (?3) is bound after
			// the queue and the limit, as on PostgreSQL.
			SQL: "UPDATE lockstep_jobs SET status = 'RUNNING', attempts = attempts + 1, started_at = " + now + ", heartbeat_at = " + now + ", claimed_by = ?3" +
				" WHERE id IN (SELECT id FROM lockstep_jobs INDEXED BY lockstep_jobs_claim WHERE queue = ?1 AND status = 'PENDING' AND available_at <= " + now +
				" ORDER BY priority, available_at, id LIMIT ?2) RETURNING " + sqlexec.JobColumns,
		},
		catalog.Statement{
			Name: catalog.JobClaimAfter, Table: jobs, Finds: catalog.JobsClaim, Changes: statusIndexes, Locks: true, Claim: true,
			SQL: "UPDATE lockstep_jobs SET status = 'RUNNING', attempts = attempts + 1, started_at = " + now + ", heartbeat_at = " + now + ", claimed_by = ?3" +
				" WHERE id IN (SELECT id FROM lockstep_jobs INDEXED BY lockstep_jobs_claim WHERE queue = ?1 AND status = 'PENDING' AND available_at <= " + now +
				" AND (priority, available_at, id) > (?4, ?5, ?6)" +
				" ORDER BY priority, available_at, id LIMIT ?2) RETURNING " + sqlexec.JobColumns,
		},
		catalog.Statement{
			Name: catalog.JobFinishDone, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: "UPDATE lockstep_jobs SET status = 'DONE', output = ?, finished_at = " + now + ", heartbeat_at = " + now + " WHERE id = ? AND status = 'RUNNING' AND attempts = ?",
		},
		catalog.Statement{
			// The batched DONE of many attempts of one attempt number.
			Name: catalog.JobFinishDoneMany, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true, IDList: true, Returning: true,
			SQL: "UPDATE lockstep_jobs SET status = 'DONE', finished_at = " + now + ", heartbeat_at = " + now + " WHERE attempts = ? AND status = 'RUNNING' AND id IN ({ids}) RETURNING id",
		},
		catalog.Statement{
			Name: catalog.JobFinishFailed, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: "UPDATE lockstep_jobs SET status = 'FAILED', finished_at = " + now + ", heartbeat_at = " + now + ", last_error = ?, " + history + " WHERE id = ? AND status = 'RUNNING' AND attempts = ?",
		},
		catalog.Statement{
			Name: catalog.JobFinishRetry, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: "UPDATE lockstep_jobs SET status = 'PENDING', heartbeat_at = " + now + ", available_at = " + plus + ", last_error = ?, " + history + " WHERE id = ? AND status = 'RUNNING' AND attempts = ?",
		},
		catalog.Statement{
			Name: catalog.JobFinishSnooze, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: "UPDATE lockstep_jobs SET status = 'PENDING', heartbeat_at = " + now + ", available_at = " + plus + ", max_attempts = max_attempts + 1 WHERE id = ? AND status = 'RUNNING' AND attempts = ?",
		},
		catalog.Statement{
			Name: catalog.JobHeartbeat, Table: jobs, Finds: catalog.JobsPrimary, Changes: []catalog.Index{catalog.JobsHeartbeat, catalog.JobsQueueStatus}, Locks: true, IDList: true,
			SQL: "UPDATE lockstep_jobs SET heartbeat_at = " + now + " WHERE id IN ({ids}) AND status = 'RUNNING'",
		},
		catalog.Statement{
			Name: catalog.JobStateMany, Table: jobs, Finds: catalog.JobsPrimary, IDList: true,
			SQL: "SELECT id, status, attempts FROM lockstep_jobs WHERE id IN ({ids})",
		},
		catalog.Statement{
			Name: catalog.JobReapSelect, Table: jobs, Finds: catalog.JobsHeartbeat,
			SQL: "SELECT id, attempts, max_attempts, run_id, dependents, queue, limit_key FROM lockstep_jobs WHERE status = 'RUNNING' AND heartbeat_at < ?" +
				" ORDER BY heartbeat_at, id LIMIT ?",
		},
		catalog.Statement{
			Name: catalog.JobReap, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: "UPDATE lockstep_jobs SET status = CASE WHEN attempts >= max_attempts THEN 'FAILED' ELSE 'PENDING' END, available_at = " + now + ", heartbeat_at = " + now +
				", finished_at = CASE WHEN attempts >= max_attempts THEN " + now + " END, last_error = ?, " + history +
				" WHERE id = ? AND status = 'RUNNING' AND attempts = ? AND heartbeat_at < ?",
		},
		catalog.Statement{
			Name: catalog.JobCancel, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: "UPDATE lockstep_jobs SET finished_at = CASE WHEN status = 'RUNNING' THEN NULL ELSE " + now + " END, status = 'CANCELLED', heartbeat_at = " + now + " WHERE id = ? AND status IN ('WAITING', 'PENDING', 'BLOCKED', 'RUNNING')",
		},
		catalog.Statement{
			Name: catalog.JobCancelMany, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true, IDList: true,
			SQL: "UPDATE lockstep_jobs SET finished_at = CASE WHEN status = 'RUNNING' THEN NULL ELSE " + now + " END, status = 'CANCELLED', heartbeat_at = " + now + " WHERE id IN ({ids}) AND status IN ('WAITING', 'PENDING', 'BLOCKED', 'RUNNING')",
		},
		catalog.Statement{
			Name: catalog.JobIDsLiveByRun, Table: jobs, Finds: catalog.JobsRun,
			SQL: "SELECT id, queue, limit_key FROM lockstep_jobs WHERE run_id = ? AND status IN ('WAITING', 'PENDING', 'BLOCKED', 'RUNNING') ORDER BY id",
		},
		catalog.Statement{
			Name: catalog.JobGet, Table: jobs, Finds: catalog.JobsPrimary,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs WHERE id = ?",
		},
		catalog.Statement{
			Name: catalog.JobList, Table: jobs, Finds: catalog.JobsPrimary,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs WHERE id > ? AND (? = '' OR status = ?) ORDER BY id LIMIT ?",
		},
		catalog.Statement{
			Name: catalog.JobListByRun, Table: jobs, Finds: catalog.JobsRun,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs WHERE run_id = ? AND id > ? AND (? = '' OR status = ?) ORDER BY id LIMIT ?",
		},
		catalog.Statement{
			Name: catalog.RunInsert, Table: "lockstep_runs", Returning: true,
			SQL: "INSERT INTO lockstep_runs (name, status, metadata, callbacks) VALUES (?, 'ACTIVE', ?, ?) RETURNING id",
		},
		catalog.Statement{
			Name: catalog.RunGet, Table: "lockstep_runs", Finds: catalog.RunsPrimary,
			SQL: "SELECT " + sqlexec.RunColumns + " FROM lockstep_runs WHERE id = ?",
		},
		catalog.Statement{
			Name: catalog.RunCounts, Table: jobs, Finds: catalog.JobsRun,
			SQL: "SELECT status, COUNT(*) FROM lockstep_jobs WHERE run_id = ? GROUP BY status",
		},
		catalog.Statement{
			Name: catalog.RunCancel, Table: "lockstep_runs", Finds: catalog.RunsPrimary, Locks: true,
			SQL: "UPDATE lockstep_runs SET status = 'CANCELLED', cancelled_at = COALESCE(cancelled_at, " + now + ") WHERE id = ?",
		},
		catalog.Statement{
			Name: catalog.JobRetry, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: "UPDATE lockstep_jobs SET status = 'PENDING', available_at = " + now + ", heartbeat_at = " + now + ", finished_at = NULL," +
				" max_attempts = MAX(max_attempts, attempts + 1) WHERE id = ? AND status = 'FAILED'",
		},
		// Workflows: see the MySQL catalogue. SQLite has one writer at a
		// time, so the order is kept for the same statements' sake only.
		catalog.Statement{
			Name: catalog.DepInsert, Table: deps, Rows: true,
			SQL:    "INSERT INTO lockstep_job_deps (job_id, depends_on) VALUES {rows}",
			RowSQL: "(?, ?)",
		},
		catalog.Statement{
			Name: catalog.DepDependents, Table: deps, Finds: catalog.DepsUp, IDList: true,
			SQL: "SELECT job_id, depends_on FROM lockstep_job_deps INDEXED BY lockstep_job_deps_up WHERE depends_on IN ({ids})",
		},
		catalog.Statement{
			Name: catalog.DepDependencies, Table: deps, Finds: catalog.DepsPrimary, IDList: true,
			SQL: "SELECT job_id, depends_on FROM lockstep_job_deps WHERE job_id IN ({ids})",
		},
		catalog.Statement{
			Name: catalog.DepDeleteMany, Table: deps, Finds: catalog.DepsPrimary, Changes: []catalog.Index{catalog.DepsUp}, Locks: true, IDList: true,
			SQL: "DELETE FROM lockstep_job_deps WHERE job_id IN ({ids})",
		},
		catalog.Statement{
			Name: catalog.JobInsertFlow, Table: jobs, Rows: true, Returning: true,
			SQL:    "INSERT INTO lockstep_jobs (run_id, queue, kind, args, status, priority, max_attempts, available_at, metadata, waiting_on, dependents, dep_policy, callback, limit_key) VALUES {rows} RETURNING id",
			RowSQL: "(?, ?, ?, ?, ?, ?, ?, COALESCE(?, " + now + "), ?, ?, ?, ?, ?, ?)",
		},
		catalog.Statement{
			Name: catalog.JobLockFlow, Table: jobs, Finds: catalog.JobsPrimary, Locks: true, IDList: true,
			SQL: "SELECT id, status, waiting_on, dep_policy, blocked_by, callback FROM lockstep_jobs WHERE id IN ({ids}) ORDER BY id",
		},
		catalog.Statement{
			Name: catalog.JobSetWaiting, Table: jobs, Finds: catalog.JobsPrimary, Locks: true,
			SQL: "UPDATE lockstep_jobs SET waiting_on = ? WHERE id = ? AND status = 'WAITING'",
		},
		catalog.Statement{
			Name: catalog.JobPromote, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: "UPDATE lockstep_jobs SET status = 'PENDING', waiting_on = 0, available_at = " + now + ", heartbeat_at = " + now + ", args = COALESCE(?, args) WHERE id = ? AND status = 'WAITING'",
		},
		catalog.Statement{
			Name: catalog.JobCancelWaiting, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: "UPDATE lockstep_jobs SET status = 'CANCELLED', finished_at = " + now + ", heartbeat_at = " + now + ", last_error = ?, blocked_by = ? WHERE id = ? AND status = 'WAITING'",
		},
		catalog.Statement{
			Name: catalog.JobRevive, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: "UPDATE lockstep_jobs SET status = ?, waiting_on = ?, available_at = " + now + ", heartbeat_at = " + now + ", finished_at = NULL, last_error = NULL, blocked_by = NULL WHERE id = ? AND status = 'CANCELLED'",
		},
		catalog.Statement{
			Name: catalog.JobOutputsMany, Table: jobs, Finds: catalog.JobsPrimary, IDList: true,
			SQL: "SELECT id, kind, status, output FROM lockstep_jobs WHERE id IN ({ids}) ORDER BY id",
		},
		catalog.Statement{
			Name: catalog.RunLock, Table: "lockstep_runs", Finds: catalog.RunsPrimary,
			SQL: "SELECT status, callbacks FROM lockstep_runs WHERE id = ?",
		},
		catalog.Statement{
			Name: catalog.JobPageFloor, Table: jobs, Finds: catalog.JobsPrimary,
			SQL: "SELECT COUNT(*), COALESCE(MIN(id), 0) FROM (SELECT id FROM lockstep_jobs WHERE id < ? ORDER BY id DESC LIMIT ?) w",
		},
		catalog.Statement{
			Name: catalog.JobPage, Table: jobs, Finds: catalog.JobsPrimary,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs WHERE id < ? AND id >= ?" + pageFilter + " ORDER BY id DESC LIMIT ?",
		},
		// Bulk actions: see the MySQL catalogue.
		catalog.Statement{
			Name: catalog.JobIDBounds, Table: jobs, Finds: catalog.JobsPrimary,
			SQL: "SELECT COALESCE((SELECT id FROM lockstep_jobs ORDER BY id LIMIT 1), 0)," +
				" COALESCE((SELECT id FROM lockstep_jobs ORDER BY id DESC LIMIT 1), 0)",
		},
		catalog.Statement{
			Name: catalog.JobMatch, Table: jobs, Finds: catalog.JobsPrimary,
			SQL: "SELECT id FROM lockstep_jobs WHERE id > ? AND id <= ?" + pageFilter + matchFilter + " ORDER BY id LIMIT ?",
		},
		catalog.Statement{
			Name: catalog.JobMatchCount, Table: jobs, Finds: catalog.JobsPrimary,
			SQL: "SELECT COUNT(*) FROM lockstep_jobs WHERE id > ? AND id <= ?" + pageFilter + matchFilter,
		},
		catalog.Statement{
			Name: catalog.JobBulkRefs, Table: jobs, Finds: catalog.JobsPrimary, IDList: true,
			SQL: "SELECT " + sqlexec.BulkRefColumns + " FROM lockstep_jobs WHERE id IN ({ids})",
		},
		catalog.Statement{
			Name: catalog.JobRetryMany, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true, IDList: true,
			SQL: "UPDATE lockstep_jobs SET status = 'PENDING', available_at = " + now + ", heartbeat_at = " + now + ", finished_at = NULL," +
				" max_attempts = MAX(max_attempts, attempts + 1) WHERE id IN ({ids}) AND status = 'FAILED'",
		},
		catalog.Statement{
			Name: catalog.JobPageFloorByRun, Table: jobs, Finds: catalog.JobsRun,
			SQL: "SELECT COUNT(*), COALESCE(MIN(id), 0) FROM (SELECT id FROM lockstep_jobs INDEXED BY lockstep_jobs_run WHERE run_id = ? AND id < ? ORDER BY id DESC LIMIT ?) w",
		},
		catalog.Statement{
			Name: catalog.JobPageByRun, Table: jobs, Finds: catalog.JobsRun,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs INDEXED BY lockstep_jobs_run WHERE run_id = ? AND id < ? AND id >= ?" + pageFilter + " ORDER BY id DESC LIMIT ?",
		},
		catalog.Statement{
			Name: catalog.RunList, Table: "lockstep_runs", Finds: catalog.RunsPrimary,
			SQL: "SELECT " + sqlexec.RunColumns + " FROM lockstep_runs WHERE id < ? ORDER BY id DESC LIMIT ?",
		},
		catalog.Statement{
			Name: catalog.RunCountsBounded, Table: jobs, Finds: catalog.JobsRun,
			SQL: "SELECT status, COUNT(*) FROM (SELECT status FROM lockstep_jobs INDEXED BY lockstep_jobs_run WHERE run_id = ? ORDER BY id LIMIT ?) w GROUP BY status",
		},
		catalog.Statement{
			// A skip scan by recursion: one index probe per queue, where
			// DISTINCT would read every index entry.
			Name: catalog.QueueList, Table: jobs, Finds: catalog.JobsQueueStatus,
			SQL: "WITH RECURSIVE q(queue) AS (SELECT MIN(queue) FROM lockstep_jobs" +
				" UNION ALL SELECT (SELECT MIN(j.queue) FROM lockstep_jobs j WHERE j.queue > q.queue) FROM q WHERE q.queue IS NOT NULL)" +
				" SELECT queue FROM q WHERE queue IS NOT NULL LIMIT ?",
		},
		catalog.Statement{
			Name: catalog.QueueCount, Table: jobs, Finds: catalog.JobsQueueStatus,
			SQL: "SELECT COUNT(*) FROM (SELECT 1 FROM lockstep_jobs INDEXED BY lockstep_jobs_queue_status WHERE queue = ? AND status = ? LIMIT ?) w",
		},
		catalog.Statement{
			Name: catalog.QueueFinished, Table: jobs, Finds: catalog.JobsQueueStatus,
			SQL: "SELECT COUNT(*) FROM (SELECT 1 FROM lockstep_jobs INDEXED BY lockstep_jobs_queue_status WHERE queue = ? AND status = ?" +
				" AND heartbeat_at >= strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', -? / 1000000.0)) LIMIT ?) w",
		},
		// Retention: the old jobs of one final status in one queue, oldest
		// first; then checked again by primary key and deleted by primary
		// key, in the same write transaction.
		catalog.Statement{
			Name: catalog.JobPruneSelect, Table: jobs, Finds: catalog.JobsQueueStatus,
			SQL: "SELECT id FROM lockstep_jobs INDEXED BY lockstep_jobs_queue_status WHERE queue = ? AND status = ?" +
				" AND heartbeat_at < strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', -? / 1000000.0)) ORDER BY heartbeat_at LIMIT ?",
		},
		catalog.Statement{
			Name: catalog.JobPruneLock, Table: jobs, Finds: catalog.JobsPrimary, IDList: true,
			SQL: "SELECT id FROM lockstep_jobs WHERE status = ?" +
				" AND heartbeat_at < strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', -? / 1000000.0)) AND id IN ({ids}) ORDER BY id",
		},
		catalog.Statement{
			Name: catalog.JobDeleteMany, Table: jobs, Finds: catalog.JobsPrimary, Changes: []catalog.Index{catalog.JobsClaim, catalog.JobsRun, catalog.JobsHeartbeat, catalog.JobsQueueStatus, catalog.JobsUnique}, Locks: true, IDList: true,
			SQL: "DELETE FROM lockstep_jobs WHERE id IN ({ids})",
		},
		// Queue settings: one row per queue, upserted by primary key.
		catalog.Statement{
			Name: catalog.QueueSettingsList, Table: queues,
			SQL: "SELECT name, paused_at, max_workers, updated_at, concurrency, key_concurrency, sequence, rate, rate_period_us, rate_by_key FROM lockstep_queues ORDER BY name",
		},
		catalog.Statement{
			// A queue's settings row by primary key, alone in its
			// transaction: the only row it locks, which a limited claim
			// takes first (or not at all) and no write holds with another.
			Name: catalog.QueueDelete, Table: queues, Finds: catalog.QueuesPrimary, Locks: true,
			SQL: "DELETE FROM lockstep_queues WHERE name = ?",
		},
		catalog.Statement{
			Name: catalog.ProcessInsert, Table: processes,
			SQL: "INSERT INTO lockstep_processes (id, host, pid, version, queues, workers, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, " + now + ", " + now + ")",
		},
		catalog.Statement{
			Name: catalog.ProcessHeartbeat, Table: processes, Finds: catalog.ProcessesPrimary, Locks: true,
			SQL: "UPDATE lockstep_processes SET heartbeat_at = " + now + " WHERE id = ?",
		},
		catalog.Statement{
			Name: catalog.ProcessDelete, Table: processes, Finds: catalog.ProcessesPrimary, Locks: true,
			SQL: "DELETE FROM lockstep_processes WHERE id = ?",
		},
		catalog.Statement{
			Name: catalog.ProcessStale, Table: processes, Finds: catalog.ProcessesPrimary,
			SQL: "SELECT id FROM lockstep_processes WHERE heartbeat_at < strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', -? / 1000000.0)) ORDER BY id LIMIT ?",
		},
		catalog.Statement{
			Name: catalog.ProcessPrune, Table: processes, Finds: catalog.ProcessesPrimary, Locks: true,
			SQL: "DELETE FROM lockstep_processes WHERE id = ? AND heartbeat_at < strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', -? / 1000000.0))",
		},
		catalog.Statement{
			Name: catalog.ProcessList, Table: processes, Finds: catalog.ProcessesPrimary,
			SQL: "SELECT id, host, pid, version, queues, workers, started_at, heartbeat_at, " + now + " FROM lockstep_processes ORDER BY id LIMIT ?",
		},
		catalog.Statement{
			// A process's RUNNING jobs: the heartbeat index's RUNNING range
			// filtered by claimed_by, bounded by LIMIT.
			Name: catalog.JobRunningByProcess, Table: jobs, Finds: catalog.JobsHeartbeat,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs INDEXED BY lockstep_jobs_heartbeat WHERE status = 'RUNNING' AND claimed_by = ? ORDER BY heartbeat_at, id LIMIT ?",
		},
		catalog.Statement{
			Name: catalog.QueuePause, Table: queues, Locks: true,
			SQL: "INSERT INTO lockstep_queues (name, paused_at, updated_at) VALUES (?, " + now + ", " + now + ")" +
				" ON CONFLICT (name) DO UPDATE SET paused_at = COALESCE(paused_at, " + now + "), updated_at = " + now,
		},
		catalog.Statement{
			Name: catalog.QueueResume, Table: queues, Locks: true,
			SQL: "INSERT INTO lockstep_queues (name, paused_at, updated_at) VALUES (?, NULL, " + now + ")" +
				" ON CONFLICT (name) DO UPDATE SET paused_at = NULL, updated_at = " + now,
		},
		catalog.Statement{
			Name: catalog.QueueSetMaxWorkers, Table: queues, Locks: true,
			SQL: "INSERT INTO lockstep_queues (name, max_workers, updated_at) VALUES (?, ?, " + now + ")" +
				" ON CONFLICT (name) DO UPDATE SET max_workers = excluded.max_workers, updated_at = " + now,
		},
		catalog.Statement{
			Name: catalog.QueueOldest, Table: jobs, Finds: catalog.JobsClaim,
			SQL: "SELECT MIN(available_at), " + now + ", COUNT(*) FROM (SELECT available_at FROM lockstep_jobs INDEXED BY lockstep_jobs_claim" +
				" WHERE queue = ? AND status = 'PENDING' AND available_at <= " + now + " ORDER BY priority, available_at, id LIMIT ?) w",
		},
		catalog.Statement{
			Name: catalog.MigrationCreateTable, Table: "lockstep_migrations",
			SQL: "CREATE TABLE IF NOT EXISTS lockstep_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
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
			Name: catalog.ServerVersion, SQL: "SELECT sqlite_version()",
		},
	}, append(limitStatements(statusIndexes), historyStatements()...)...)...)
}

// Catalog returns the statement catalogue the driver uses, without a
// connection: for documentation and offline audits.
func Catalog() *catalog.Catalog { return catalog.Must(newCatalog()) }
