package postgres

import (
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/driver/internal/sqlexec"
)

// limitStatements are the statements of limited queues, in the order the
// MySQL catalogue gives (the settings row, the jobs SKIP LOCKED, the keys'
// rows SKIP LOCKED in key order, writes by primary key). Lists of keys are
// one text[] parameter, always the last.
func limitStatements(statusIndexes []catalog.Index) []catalog.Statement {
	const jobs = "lockstep_jobs"
	const queues = "lockstep_queues"
	const keys = "lockstep_limit_keys"
	const starts = "lockstep_limit_starts"
	const micro = "::bigint * interval '1 microsecond'"
	const limits = "SELECT concurrency, key_concurrency, sequence, rate, rate_period_us, rate_by_key, now() FROM lockstep_queues WHERE name = $1"
	return []catalog.Statement{
		{Name: catalog.QueueLimits, Table: queues, Finds: catalog.QueuesPrimary, SQL: limits},
		{Name: catalog.QueueLockLimits, Table: queues, Finds: catalog.QueuesPrimary, Locks: true, SQL: limits + " FOR UPDATE"},
		{
			Name: catalog.QueueSetLimits, Table: queues, Locks: true,
			SQL: "INSERT INTO lockstep_queues (name, concurrency, key_concurrency, sequence, rate, rate_period_us, rate_by_key, updated_at)" +
				" VALUES ($1, $2, $3, $4, $5, $6, $7, now()) ON CONFLICT (name) DO UPDATE SET concurrency = EXCLUDED.concurrency," +
				" key_concurrency = EXCLUDED.key_concurrency, sequence = EXCLUDED.sequence, rate = EXCLUDED.rate," +
				" rate_period_us = EXCLUDED.rate_period_us, rate_by_key = EXCLUDED.rate_by_key, updated_at = now()",
		},
		{
			Name: catalog.QueueOccupied, Table: jobs, Finds: catalog.JobsQueueStatus,
			SQL: "SELECT COUNT(*) FROM lockstep_jobs WHERE queue = $1" +
				" AND (status = 'RUNNING' OR (status = 'CANCELLED' AND heartbeat_at > now() - $2" + micro + " AND finished_at IS NULL))",
		},
		{
			Name: catalog.LimitCancelling, Table: jobs, Finds: catalog.JobsQueueStatus,
			SQL: "SELECT limit_key FROM lockstep_jobs WHERE queue = $1 AND status = 'CANCELLED'" +
				" AND heartbeat_at > now() - $2" + micro + " AND finished_at IS NULL AND limit_key IS NOT NULL",
		},
		{
			Name: catalog.JobClaimCandidates, Table: jobs, Finds: catalog.JobsClaim, Locks: true, Claim: true,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs WHERE queue = $1 AND status = 'PENDING' AND available_at <= now()" +
				" ORDER BY priority, available_at, id LIMIT $2 FOR UPDATE SKIP LOCKED",
		},
		{
			Name: catalog.JobClaimIDs, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true, IDList: true,
			SQL: "UPDATE lockstep_jobs SET status = 'RUNNING', attempts = attempts + 1, started_at = $1, heartbeat_at = $2, claimed_by = $3 WHERE id = ANY($4) AND status = 'PENDING'",
		},
		{
			Name: catalog.JobBlock, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true, IDList: true,
			SQL: "UPDATE lockstep_jobs SET status = 'BLOCKED', heartbeat_at = $1 WHERE id = ANY($2) AND status = 'PENDING'",
		},
		{
			Name: catalog.JobDefer, Table: jobs, Finds: catalog.JobsPrimary, Changes: []catalog.Index{catalog.JobsClaim}, Locks: true, IDList: true,
			SQL: "UPDATE lockstep_jobs SET available_at = $1 WHERE id = ANY($2) AND status = 'PENDING'",
		},
		{
			Name: catalog.JobUnblock, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true, IDList: true,
			SQL: "UPDATE lockstep_jobs SET status = 'PENDING', heartbeat_at = now() WHERE id = ANY($1) AND status = 'BLOCKED'",
		},
		{
			Name: catalog.JobRelease, Table: jobs, Finds: catalog.JobsPrimary, Locks: true,
			SQL: "UPDATE lockstep_jobs SET finished_at = now() WHERE id = $1 AND attempts = $2 AND status = 'CANCELLED' AND finished_at IS NULL",
		},
		{
			Name: catalog.LimitLockKeys, Table: keys, Finds: catalog.LimitKeysPrimary, Locks: true, KeyList: true,
			SQL: "SELECT limit_key FROM lockstep_limit_keys WHERE queue = $1 AND limit_key = ANY($2) ORDER BY limit_key FOR UPDATE SKIP LOCKED",
		},
		{
			Name: catalog.LimitLockKey, Table: keys, Finds: catalog.LimitKeysPrimary, Locks: true,
			SQL: "SELECT limit_key FROM lockstep_limit_keys WHERE queue = $1 AND limit_key = $2 FOR UPDATE",
		},
		{
			Name: catalog.LimitInsertKeys, Table: keys,
			SQL: "INSERT INTO lockstep_limit_keys (queue, limit_key) VALUES ($1, $2) ON CONFLICT DO NOTHING",
		},
		{
			Name: catalog.LimitKeys, Table: keys, Finds: catalog.LimitKeysPrimary, KeyList: true,
			SQL: "SELECT limit_key FROM lockstep_limit_keys WHERE queue = $1 AND limit_key = ANY($2)",
		},
		{
			Name: catalog.LimitBlockedIn, Table: jobs, Finds: catalog.JobsLimit, KeyList: true,
			SQL: "SELECT DISTINCT limit_key FROM lockstep_jobs WHERE queue = $1 AND status = 'BLOCKED' AND limit_key = ANY($2)",
		},
		{
			Name: catalog.LimitKeyRunning, Table: jobs, Finds: catalog.JobsLimit, KeyList: true,
			SQL: "SELECT limit_key, COUNT(*) FROM lockstep_jobs WHERE queue = $1 AND status = 'RUNNING' AND limit_key = ANY($2) GROUP BY limit_key",
		},
		{
			Name: catalog.LimitSequenceHead, Table: jobs, Finds: catalog.JobsLimit, KeyList: true,
			SQL: "SELECT limit_key, MIN(id) FROM lockstep_jobs WHERE queue = $1" +
				" AND (status IN ('WAITING', 'PENDING', 'BLOCKED', 'RUNNING') OR (status = 'FAILED' AND $2::int = 1))" +
				" AND limit_key = ANY($3) GROUP BY limit_key",
		},
		{
			Name: catalog.LimitBlockedIDs, Table: jobs, Finds: catalog.JobsLimit,
			SQL: "SELECT id FROM lockstep_jobs WHERE queue = $1 AND limit_key = $2 AND status = 'BLOCKED' ORDER BY id LIMIT $3",
		},
		{
			Name: catalog.LimitBlockedKeys, Table: jobs, Finds: catalog.JobsQueueStatus,
			SQL: "SELECT limit_key, heartbeat_at FROM lockstep_jobs WHERE queue = $1 AND status = 'BLOCKED' AND heartbeat_at >= $2 ORDER BY heartbeat_at LIMIT $3",
		},
		{
			Name: catalog.RateWindow, Table: starts, Finds: catalog.LimitStartsPrimary, KeyList: true,
			SQL: "SELECT limit_key, COUNT(*), MIN(started_at) FROM lockstep_limit_starts WHERE queue = $1 AND started_at > $2 AND limit_key = ANY($3) GROUP BY limit_key",
		},
		{
			// The starts as two arrays: their keys and their jobs.
			Name: catalog.RateInsert, Table: starts,
			SQL: "INSERT INTO lockstep_limit_starts (queue, limit_key, started_at, job_id) SELECT $1, u.k, $2, u.id FROM unnest($3::text[], $4::bigint[]) AS u(k, id)",
		},
		{
			Name: catalog.RatePrune, Table: starts, Finds: catalog.LimitStartsPrimary, Locks: true, KeyList: true,
			SQL: "DELETE FROM lockstep_limit_starts WHERE queue = $1 AND started_at <= $2 AND limit_key = ANY($3)",
		},
		{
			// The database's clock as the statement runs, not as the
			// transaction began: a rate window is counted, and its starts
			// written, at a time read after the locks that guard it.
			Name: catalog.LimitClock, SQL: "SELECT clock_timestamp()",
		},
	}
}
