package mysql

import (
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/driver/internal/sqlexec"
)

// startsPrune deletes a rate window's old starts through the primary key,
// one key's range at a time: a full scan would lock the starts another
// claim, on another key, has just inserted, and wait for it while it waits
// here (lab/lockorder's TestRatePruneFullScan). A single-table DELETE takes
// no index hint, and both servers plan this one as a full scan on some
// data (the plan guard found it), so each is told in its own words: Oracle
// MySQL by the optimizer hint INDEX (8.0.20 and later), MariaDB by the
// multi-table form with FORCE INDEX inside its executable comment /*M! */,
// which MySQL reads as a comment.
const startsPrune = "DELETE /*+ INDEX(lockstep_limit_starts PRIMARY) */ /*M! lockstep_limit_starts */ FROM lockstep_limit_starts /*M! FORCE INDEX (PRIMARY) */" +
	" WHERE queue = ? AND started_at <= ? AND limit_key IN ({keys})"

// StartsPruneHints are the comments startsPrune carries, exactly: the only
// comments in any statement of the catalogue.
var StartsPruneHints = []string{"/*+ INDEX(lockstep_limit_starts PRIMARY) */", "/*M! lockstep_limit_starts */", "/*M! FORCE INDEX (PRIMARY) */"}

// limitStatements are the statements of limited queues (sqlexec/limits.go).
// Their order: a globally limited queue's settings row first (waiting),
// then the claim's jobs (SKIP LOCKED), then its keys' rows (SKIP LOCKED,
// ascending), then writes to the jobs it locked. A release locks one key's
// row (waiting) and then that key's BLOCKED jobs by primary key. Nothing
// that holds a job row ever waits for a key's or a queue's row.
func limitStatements(statusIndexes []catalog.Index) []catalog.Statement {
	const jobs = "lockstep_jobs"
	const queues = "lockstep_queues"
	const keys = "lockstep_limit_keys"
	const starts = "lockstep_limit_starts"
	const byPK = "UPDATE lockstep_jobs FORCE INDEX (PRIMARY) SET "
	const limits = "SELECT concurrency, key_concurrency, sequence, rate, rate_period_us, rate_by_key, " + now +
		" FROM lockstep_queues FORCE INDEX (PRIMARY) WHERE name = ?"
	changes := statusIndexes
	return []catalog.Statement{
		{
			Name: catalog.QueueLimits, Table: queues, Finds: catalog.QueuesPrimary,
			SQL: limits,
		},
		{
			// The first lock of a claim in a queue with a global limit: the
			// queue's claims take their decisions one at a time.
			Name: catalog.QueueLockLimits, Table: queues, Finds: catalog.QueuesPrimary, Locks: true,
			SQL: limits + " FOR UPDATE",
		},
		{
			Name: catalog.QueueSetLimits, Table: queues, Locks: true,
			SQL: "INSERT INTO lockstep_queues (name, concurrency, key_concurrency, sequence, rate, rate_period_us, rate_by_key, updated_at)" +
				" VALUES (?, ?, ?, ?, ?, ?, ?, " + now + ") ON DUPLICATE KEY UPDATE concurrency = VALUES(concurrency)," +
				" key_concurrency = VALUES(key_concurrency), sequence = VALUES(sequence), rate = VALUES(rate)," +
				" rate_period_us = VALUES(rate_period_us), rate_by_key = VALUES(rate_by_key), updated_at = " + now,
		},
		{
			// The slots a queue's jobs hold: RUNNING, and CANCELLED while
			// RUNNING whose worker has not stopped (finished_at unset) and
			// whose heartbeat is younger than the reap limit. Two ranges of
			// (queue, status, heartbeat_at); no lock.
			Name: catalog.QueueOccupied, Table: jobs, Finds: catalog.JobsQueueStatus,
			SQL: "SELECT COUNT(*) FROM lockstep_jobs FORCE INDEX (lockstep_jobs_queue_status) WHERE queue = ?" +
				" AND (status = 'RUNNING' OR (status = 'CANCELLED' AND heartbeat_at > " + now + " - INTERVAL ? MICROSECOND AND finished_at IS NULL))",
		},
		{
			Name: catalog.LimitCancelling, Table: jobs, Finds: catalog.JobsQueueStatus,
			SQL: "SELECT limit_key FROM lockstep_jobs FORCE INDEX (lockstep_jobs_queue_status) WHERE queue = ? AND status = 'CANCELLED'" +
				" AND heartbeat_at > " + now + " - INTERVAL ? MICROSECOND AND finished_at IS NULL AND limit_key IS NOT NULL",
		},
		{
			Name: catalog.JobClaimCandidates, Table: jobs, Finds: catalog.JobsClaim, Locks: true, Claim: true,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs FORCE INDEX (lockstep_jobs_claim)" +
				" WHERE queue = ? AND status = 'PENDING' AND available_at <= " + now +
				" ORDER BY priority, available_at, id LIMIT ? FOR UPDATE SKIP LOCKED",
		},
		{
			Name: catalog.JobClaimIDs, Table: jobs, Finds: catalog.JobsPrimary, Changes: changes, Locks: true, IDList: true,
			SQL: byPK + "status = 'RUNNING', attempts = attempts + 1, started_at = ?, heartbeat_at = ?, claimed_by = ? WHERE id IN ({ids}) AND status = 'PENDING'",
		},
		{
			// heartbeat_at is when the job was blocked: the sweep pages
			// through a queue's BLOCKED jobs by it.
			Name: catalog.JobBlock, Table: jobs, Finds: catalog.JobsPrimary, Changes: changes, Locks: true, IDList: true,
			SQL: byPK + "status = 'BLOCKED', heartbeat_at = ? WHERE id IN ({ids}) AND status = 'PENDING'",
		},
		{
			Name: catalog.JobDefer, Table: jobs, Finds: catalog.JobsPrimary, Changes: []catalog.Index{catalog.JobsClaim}, Locks: true, IDList: true,
			SQL: byPK + "available_at = ? WHERE id IN ({ids}) AND status = 'PENDING'",
		},
		{
			Name: catalog.JobUnblock, Table: jobs, Finds: catalog.JobsPrimary, Changes: changes, Locks: true, IDList: true,
			SQL: byPK + "status = 'PENDING', heartbeat_at = " + now + " WHERE id IN ({ids}) AND status = 'BLOCKED'",
		},
		{
			// A worker stopped after its RUNNING job was cancelled: its slot
			// is free now, not at the end of the grace.
			Name: catalog.JobRelease, Table: jobs, Finds: catalog.JobsPrimary, Locks: true,
			SQL: byPK + "finished_at = " + now + " WHERE id = ? AND attempts = ? AND status = 'CANCELLED' AND finished_at IS NULL",
		},
		{
			Name: catalog.LimitLockKeys, Table: keys, Finds: catalog.LimitKeysPrimary, Locks: true, KeyList: true,
			SQL: "SELECT limit_key FROM lockstep_limit_keys FORCE INDEX (PRIMARY) WHERE queue = ? AND limit_key IN ({keys})" +
				" ORDER BY limit_key FOR UPDATE SKIP LOCKED",
		},
		{
			Name: catalog.LimitLockKey, Table: keys, Finds: catalog.LimitKeysPrimary, Locks: true,
			SQL: "SELECT limit_key FROM lockstep_limit_keys FORCE INDEX (PRIMARY) WHERE queue = ? AND limit_key = ? FOR UPDATE",
		},
		{
			// One key's row, by itself, outside any other transaction: an
			// INSERT that holds nothing else cannot be part of a cycle.
			Name: catalog.LimitInsertKeys, Table: keys,
			SQL: "INSERT IGNORE INTO lockstep_limit_keys (queue, limit_key, created_at) VALUES (?, ?, " + now + ")",
		},
		{
			// Which of a claim's keys have a row, without locking: after
			// the claim, for the keys it could not lock.
			Name: catalog.LimitKeys, Table: keys, Finds: catalog.LimitKeysPrimary, KeyList: true,
			SQL: "SELECT limit_key FROM lockstep_limit_keys FORCE INDEX (PRIMARY) WHERE queue = ? AND limit_key IN ({keys})",
		},
		{
			// Which keys have BLOCKED jobs, without locking: after a job of
			// theirs left RUNNING.
			Name: catalog.LimitBlockedIn, Table: jobs, Finds: catalog.JobsLimit, KeyList: true,
			SQL: "SELECT DISTINCT limit_key FROM lockstep_jobs FORCE INDEX (lockstep_jobs_limit) WHERE queue = ? AND status = 'BLOCKED' AND limit_key IN ({keys})",
		},
		{
			Name: catalog.LimitKeyRunning, Table: jobs, Finds: catalog.JobsLimit, KeyList: true,
			SQL: "SELECT limit_key, COUNT(*) FROM lockstep_jobs FORCE INDEX (lockstep_jobs_limit)" +
				" WHERE queue = ? AND status = 'RUNNING' AND limit_key IN ({keys}) GROUP BY limit_key",
		},
		{
			// The first live job of each sequence; a FAILED one counts when
			// the queue's FAILED jobs hold their sequences (the parameter).
			Name: catalog.LimitSequenceHead, Table: jobs, Finds: catalog.JobsLimit, KeyList: true,
			SQL: "SELECT limit_key, MIN(id) FROM lockstep_jobs FORCE INDEX (lockstep_jobs_limit)" +
				" WHERE queue = ? AND (status IN ('WAITING', 'PENDING', 'BLOCKED', 'RUNNING') OR (status = 'FAILED' AND ? = 1))" +
				" AND limit_key IN ({keys}) GROUP BY limit_key",
		},
		{
			Name: catalog.LimitBlockedIDs, Table: jobs, Finds: catalog.JobsLimit,
			SQL: "SELECT id FROM lockstep_jobs FORCE INDEX (lockstep_jobs_limit) WHERE queue = ? AND limit_key = ? AND status = 'BLOCKED' ORDER BY id LIMIT ?",
		},
		{
			// The keys of a queue's BLOCKED jobs, a page at a time in the
			// order they were blocked: the sweep.
			Name: catalog.LimitBlockedKeys, Table: jobs, Finds: catalog.JobsQueueStatus,
			SQL: "SELECT limit_key, heartbeat_at FROM lockstep_jobs FORCE INDEX (lockstep_jobs_queue_status)" +
				" WHERE queue = ? AND status = 'BLOCKED' AND heartbeat_at >= ? ORDER BY heartbeat_at LIMIT ?",
		},
		{
			Name: catalog.RateWindow, Table: starts, Finds: catalog.LimitStartsPrimary, KeyList: true,
			SQL: "SELECT limit_key, COUNT(*), MIN(started_at) FROM lockstep_limit_starts FORCE INDEX (PRIMARY)" +
				" WHERE queue = ? AND started_at > ? AND limit_key IN ({keys}) GROUP BY limit_key",
		},
		{
			Name: catalog.RateInsert, Table: starts, Rows: true,
			SQL:    "INSERT INTO lockstep_limit_starts (queue, limit_key, started_at, job_id) VALUES {rows}",
			RowSQL: "(?, ?, ?, ?)",
		},
		{
			Name: catalog.RatePrune, Table: starts, Finds: catalog.LimitStartsPrimary, Locks: true, KeyList: true,
			SQL: startsPrune,
		},
		{
			// The database's clock as the statement runs, not as the
			// transaction began: a rate window is counted, and its starts
			// written, at a time read after the locks that guard it.
			Name: catalog.LimitClock, SQL: "SELECT " + now,
		},
	}
}
