package sqlite

import (
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/driver/internal/sqlexec"
)

// limitStatements are the statements of limited queues. SQLite has one
// writer at a time, so the "locks" are plain reads inside the writer's
// transaction: every key row a claim reads is its own until it commits.
func limitStatements(statusIndexes []catalog.Index) []catalog.Statement {
	const jobs = "lockstep_jobs"
	const queues = "lockstep_queues"
	const keys = "lockstep_limit_keys"
	const starts = "lockstep_limit_starts"
	const ago = "strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', -? / 1000000.0))"
	const limits = "SELECT concurrency, key_concurrency, sequence, rate, rate_period_us, rate_by_key, " + now + " FROM lockstep_queues WHERE name = ?"
	return []catalog.Statement{
		{Name: catalog.QueueLimits, Table: queues, Finds: catalog.QueuesPrimary, SQL: limits},
		{Name: catalog.QueueLockLimits, Table: queues, Finds: catalog.QueuesPrimary, Locks: true, SQL: limits},
		{
			Name: catalog.QueueSetLimits, Table: queues, Locks: true,
			SQL: "INSERT INTO lockstep_queues (name, concurrency, key_concurrency, sequence, rate, rate_period_us, rate_by_key, updated_at)" +
				" VALUES (?, ?, ?, ?, ?, ?, ?, " + now + ") ON CONFLICT (name) DO UPDATE SET concurrency = excluded.concurrency," +
				" key_concurrency = excluded.key_concurrency, sequence = excluded.sequence, rate = excluded.rate," +
				" rate_period_us = excluded.rate_period_us, rate_by_key = excluded.rate_by_key, updated_at = " + now,
		},
		{
			Name: catalog.QueueOccupied, Table: jobs, Finds: catalog.JobsQueueStatus,
			SQL: "SELECT COUNT(*) FROM lockstep_jobs INDEXED BY lockstep_jobs_queue_status WHERE queue = ?" +
				" AND (status = 'RUNNING' OR (status = 'CANCELLED' AND heartbeat_at > " + ago + " AND finished_at IS NULL))",
		},
		{
			Name: catalog.LimitCancelling, Table: jobs, Finds: catalog.JobsQueueStatus,
			SQL: "SELECT limit_key FROM lockstep_jobs INDEXED BY lockstep_jobs_queue_status WHERE queue = ? AND status = 'CANCELLED'" +
				" AND heartbeat_at > " + ago + " AND finished_at IS NULL AND limit_key IS NOT NULL",
		},
		{
			Name: catalog.JobClaimCandidates, Table: jobs, Finds: catalog.JobsClaim, Locks: true, Claim: true,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs INDEXED BY lockstep_jobs_claim WHERE queue = ? AND status = 'PENDING' AND available_at <= " + now +
				" ORDER BY priority, available_at, id LIMIT ?",
		},
		{
			Name: catalog.JobClaimIDs, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true, IDList: true,
			SQL: "UPDATE lockstep_jobs SET status = 'RUNNING', attempts = attempts + 1, started_at = ?, heartbeat_at = ?, claimed_by = ? WHERE id IN ({ids}) AND status = 'PENDING'",
		},
		{
			Name: catalog.JobBlock, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true, IDList: true,
			SQL: "UPDATE lockstep_jobs SET status = 'BLOCKED', heartbeat_at = ? WHERE id IN ({ids}) AND status = 'PENDING'",
		},
		{
			Name: catalog.JobDefer, Table: jobs, Finds: catalog.JobsPrimary, Changes: []catalog.Index{catalog.JobsClaim}, Locks: true, IDList: true,
			SQL: "UPDATE lockstep_jobs SET available_at = ? WHERE id IN ({ids}) AND status = 'PENDING'",
		},
		{
			Name: catalog.JobUnblock, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true, IDList: true,
			SQL: "UPDATE lockstep_jobs SET status = 'PENDING', heartbeat_at = " + now + " WHERE id IN ({ids}) AND status = 'BLOCKED'",
		},
		{
			Name: catalog.JobRelease, Table: jobs, Finds: catalog.JobsPrimary, Locks: true,
			SQL: "UPDATE lockstep_jobs SET finished_at = " + now + " WHERE id = ? AND attempts = ? AND status = 'CANCELLED' AND finished_at IS NULL",
		},
		{
			Name: catalog.LimitLockKeys, Table: keys, Finds: catalog.LimitKeysPrimary, Locks: true, KeyList: true,
			SQL: "SELECT limit_key FROM lockstep_limit_keys WHERE queue = ? AND limit_key IN ({keys}) ORDER BY limit_key",
		},
		{
			Name: catalog.LimitLockKey, Table: keys, Finds: catalog.LimitKeysPrimary, Locks: true,
			SQL: "SELECT limit_key FROM lockstep_limit_keys WHERE queue = ? AND limit_key = ?",
		},
		{
			Name: catalog.LimitInsertKeys, Table: keys,
			SQL: "INSERT OR IGNORE INTO lockstep_limit_keys (queue, limit_key) VALUES (?, ?)",
		},
		{
			Name: catalog.LimitKeys, Table: keys, Finds: catalog.LimitKeysPrimary, KeyList: true,
			SQL: "SELECT limit_key FROM lockstep_limit_keys WHERE queue = ? AND limit_key IN ({keys})",
		},
		{
			Name: catalog.LimitBlockedIn, Table: jobs, Finds: catalog.JobsLimit, KeyList: true,
			SQL: "SELECT DISTINCT limit_key FROM lockstep_jobs INDEXED BY lockstep_jobs_limit WHERE queue = ? AND status = 'BLOCKED' AND limit_key IN ({keys})",
		},
		{
			Name: catalog.LimitKeyRunning, Table: jobs, Finds: catalog.JobsLimit, KeyList: true,
			SQL: "SELECT limit_key, COUNT(*) FROM lockstep_jobs INDEXED BY lockstep_jobs_limit WHERE queue = ? AND status = 'RUNNING' AND limit_key IN ({keys}) GROUP BY limit_key",
		},
		{
			Name: catalog.LimitSequenceHead, Table: jobs, Finds: catalog.JobsLimit, KeyList: true,
			SQL: "SELECT limit_key, MIN(id) FROM lockstep_jobs INDEXED BY lockstep_jobs_limit WHERE queue = ?" +
				" AND (status IN ('WAITING', 'PENDING', 'BLOCKED', 'RUNNING') OR (status = 'FAILED' AND ? = 1))" +
				" AND limit_key IN ({keys}) GROUP BY limit_key",
		},
		{
			Name: catalog.LimitBlockedIDs, Table: jobs, Finds: catalog.JobsLimit,
			SQL: "SELECT id FROM lockstep_jobs INDEXED BY lockstep_jobs_limit WHERE queue = ? AND limit_key = ? AND status = 'BLOCKED' ORDER BY id LIMIT ?",
		},
		{
			Name: catalog.LimitBlockedKeys, Table: jobs, Finds: catalog.JobsQueueStatus,
			SQL: "SELECT limit_key, heartbeat_at FROM lockstep_jobs INDEXED BY lockstep_jobs_queue_status WHERE queue = ? AND status = 'BLOCKED' AND heartbeat_at >= ? ORDER BY heartbeat_at LIMIT ?",
		},
		{
			Name: catalog.RateWindow, Table: starts, Finds: catalog.LimitStartsPrimary, KeyList: true,
			SQL: "SELECT limit_key, COUNT(*), MIN(started_at) FROM lockstep_limit_starts WHERE queue = ? AND started_at > ? AND limit_key IN ({keys}) GROUP BY limit_key",
		},
		{
			Name: catalog.RateInsert, Table: starts, Rows: true,
			SQL:    "INSERT INTO lockstep_limit_starts (queue, limit_key, started_at, job_id) VALUES {rows}",
			RowSQL: "(?, ?, ?, ?)",
		},
		{
			Name: catalog.RatePrune, Table: starts, Finds: catalog.LimitStartsPrimary, Locks: true, KeyList: true,
			SQL: "DELETE FROM lockstep_limit_starts WHERE queue = ? AND started_at <= ? AND limit_key IN ({keys})",
		},
		{
			// The database's clock as the statement runs, not as the
			// transaction began: a rate window is counted, and its starts
			// written, at a time read after the locks that guard it.
			Name: catalog.LimitClock, SQL: "SELECT " + now,
		},
	}
}
