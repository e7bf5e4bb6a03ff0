package postgres

import (
	"strings"

	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/driver/internal/sqlexec"
)

// newCatalog declares every statement the queue issues on PostgreSQL. Rows
// are locked in the order a plan visits them (a bitmap scan visits them in
// physical order), so every multi-row UPDATE is preceded by job.lock_ids,
// which locks the ids ORDER BY id.
// pgMatchFilter is a bulk action's window filter, after its bounds $1 and
// $2: the job page's filter ($3–$13), then a run, the statuses the
// action applies to (retry: FAILED; cancel: the live ones; delete: the
// final ones, not a job cancelled while its worker still runs it) and a
// finish time (see the MySQL catalogue).
const pgMatchFilter = " AND ($3 = '' OR status = $4) AND ($5 = '' OR queue = $6) AND ($7 = '' OR kind = $8)" +
	" AND ($9 = 0 OR (status = 'PENDING' AND available_at > now())) AND ($10 = 0 OR (status = 'PENDING' AND last_error IS NOT NULL))" +
	" AND ($11 = '' OR args::text ILIKE $12 ESCAPE '!' OR metadata::text ILIKE $13 ESCAPE '!')" +
	" AND ($14 = 0 OR run_id = $15)" +
	" AND ($16 = 0 OR status = 'FAILED')" +
	" AND ($17 = 0 OR status IN ('WAITING', 'PENDING', 'BLOCKED', 'RUNNING'))" +
	" AND ($18 = 0 OR (status IN ('DONE', 'FAILED', 'CANCELLED') AND finished_at IS NOT NULL))" +
	" AND ($19 = 0 OR finished_at >= $20)"

func newCatalog() (*catalog.Catalog, error) {
	indexNames := map[catalog.Index]string{
		catalog.RunsPrimary:        "lockstep_runs_pkey",
		catalog.JobsPrimary:        "lockstep_jobs_pkey",
		catalog.JobsClaim:          "lockstep_jobs_claim",
		catalog.JobsRun:            "lockstep_jobs_run",
		catalog.JobsHeartbeat:      "lockstep_jobs_heartbeat",
		catalog.JobsQueueStatus:    "lockstep_jobs_queue_status",
		catalog.JobsUnique:         "lockstep_jobs_unique",
		catalog.DepsPrimary:        "lockstep_job_deps_pkey",
		catalog.DepsUp:             "lockstep_job_deps_up",
		catalog.JobsLimit:          "lockstep_jobs_limit",
		catalog.QueuesPrimary:      "lockstep_queues_pkey",
		catalog.LimitKeysPrimary:   "lockstep_limit_keys_pkey",
		catalog.LimitStartsPrimary: "lockstep_limit_starts_pkey",
		catalog.ProcessesPrimary:   "lockstep_processes_pkey",
		catalog.HistoryPrimary:     "lockstep_history_pkey",
		catalog.JobsText:           "lockstep_jobs_text",
	}
	statusIndexes := []catalog.Index{catalog.JobsClaim, catalog.JobsHeartbeat, catalog.JobsQueueStatus, catalog.JobsUnique, catalog.JobsLimit}
	const jobs = "lockstep_jobs"
	const queues = "lockstep_queues"
	const processes = "lockstep_processes"
	const deps = "lockstep_job_deps"
	const micro = "::bigint * interval '1 microsecond'"
	jcols := "j." + strings.ReplaceAll(sqlexec.JobColumns, ", ", ", j.")
	spec := catalog.Spec{
		Dialect: "postgres", ArrayParams: true, IndexNames: indexNames,
		Capabilities: catalog.Capabilities{OneStatementClaim: true, LockIDsFirst: true, Notify: true, TextIndex: true},
	}
	return catalog.New(spec, append([]catalog.Statement{
		catalog.Statement{
			Name: catalog.JobInsert, Table: jobs, Returning: true,
			SQL: "INSERT INTO lockstep_jobs (run_id, queue, kind, args, status, priority, max_attempts, available_at, metadata, limit_key)" +
				" SELECT NULLIF(u.run_id, 0), u.queue, u.kind, u.args::jsonb, 'PENDING', u.priority, u.max_attempts, COALESCE(u.available_at, now()), u.metadata::jsonb, u.limit_key" +
				" FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::smallint[], $6::integer[], $7::timestamptz[], $8::text[], $9::text[])" +
				" WITH ORDINALITY AS u(run_id, queue, kind, args, priority, max_attempts, available_at, metadata, limit_key, n) ORDER BY u.n RETURNING id",
		},
		catalog.Statement{
			// One unique job. A concurrent insert of the same key waits for
			// the first to commit (or roll back), then does nothing (or
			// inserts): no error, no deadlock; no row returned means a
			// duplicate.
			Name: catalog.JobInsertUnique, Table: jobs, Returning: true,
			SQL: "INSERT INTO lockstep_jobs (run_id, queue, kind, args, status, priority, max_attempts, available_at, metadata, limit_key, unique_key, unique_states)" +
				" VALUES (NULLIF($1::bigint, 0), $2, $3, $4::text::jsonb, 'PENDING', $5, $6, COALESCE($7::timestamptz, now()), $8::text::jsonb, $9, $10, $11)" +
				" ON CONFLICT DO NOTHING RETURNING id",
		},
		catalog.Statement{
			// The job holding a key, through the partial unique index (the
			// query repeats its predicate so the planner may use it).
			Name: catalog.JobIDByUniqueKey, Table: jobs, Finds: catalog.JobsUnique,
			SQL: "SELECT id FROM lockstep_jobs WHERE unique_key = $1 AND unique_key IS NOT NULL AND " + sqlexec.UniqueHeld,
		},
		catalog.Statement{
			// One wake-up per queue ($1: the distinct queues), issued in the
			// transaction that makes the jobs available, so that it is
			// delivered on commit only. It reads no table and takes no row
			// lock; PostgreSQL serialises the commits of notifying
			// transactions, which is why the executor paces it.
			Name: catalog.JobNotify,
			SQL:  "SELECT pg_notify('" + WakeChannel + "', q) FROM unnest($1::text[]) AS u(q)",
		},
		catalog.Statement{
			// The listener's subscription, on a connection outside the pool.
			Name: catalog.JobListen,
			SQL:  "LISTEN " + WakeChannel,
		},
		catalog.Statement{
			Name: catalog.RunLockShared, Table: "lockstep_runs", Finds: catalog.RunsPrimary, Locks: true,
			SQL: "SELECT status, callbacks FROM lockstep_runs WHERE id = $1 FOR SHARE",
		},
		catalog.Statement{
			Name: catalog.JobClaim, Table: jobs, Finds: catalog.JobsClaim, Changes: statusIndexes, Locks: true, Claim: true,
			SQL: "WITH picked AS (SELECT id FROM lockstep_jobs WHERE queue = $1 AND status = 'PENDING' AND available_at <= now()" +
				" ORDER BY priority, available_at, id LIMIT $2 FOR UPDATE SKIP LOCKED)" +
				" UPDATE lockstep_jobs j SET status = 'RUNNING', attempts = j.attempts + 1, started_at = now(), heartbeat_at = now(), claimed_by = $3" +
				" FROM picked WHERE j.id = picked.id RETURNING " + jcols,
		},
		catalog.Statement{
			// job.claim from a key on: the row comparison is the claim
			// index's own order, so the scan seeks to the key and reads on.
			Name: catalog.JobClaimAfter, Table: jobs, Finds: catalog.JobsClaim, Changes: statusIndexes, Locks: true, Claim: true,
			SQL: "WITH picked AS (SELECT id FROM lockstep_jobs WHERE queue = $1 AND status = 'PENDING' AND available_at <= now()" +
				" AND (priority, available_at, id) > ($4::smallint, $5::timestamptz, $6::bigint)" +
				" ORDER BY priority, available_at, id LIMIT $2 FOR UPDATE SKIP LOCKED)" +
				" UPDATE lockstep_jobs j SET status = 'RUNNING', attempts = j.attempts + 1, started_at = now(), heartbeat_at = now(), claimed_by = $3" +
				" FROM picked WHERE j.id = picked.id RETURNING " + jcols,
		},
		catalog.Statement{
			Name: catalog.JobLockIDs, Table: jobs, Finds: catalog.JobsPrimary, Locks: true, IDList: true,
			SQL: "SELECT id FROM lockstep_jobs WHERE id = ANY($1) ORDER BY id FOR UPDATE",
		},
		catalog.Statement{
			Name: catalog.JobFinishDone, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: "UPDATE lockstep_jobs SET status = 'DONE', output = $1::text::jsonb, finished_at = now(), heartbeat_at = now() WHERE id = $2 AND status = 'RUNNING' AND attempts = $3",
		},
		catalog.Statement{
			// The batched DONE of many attempts of one attempt number, one
			// statement and its own transaction: the CTE locks the rows
			// ORDER BY id (as job.lock_ids does), the UPDATE writes those
			// still RUNNING at that attempt and returns their ids.
			Name: catalog.JobFinishDoneMany, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true, IDList: true, Returning: true,
			SQL: "WITH locked AS (SELECT id FROM lockstep_jobs WHERE id = ANY($2) ORDER BY id FOR UPDATE)" +
				" UPDATE lockstep_jobs j SET status = 'DONE', finished_at = now(), heartbeat_at = now() FROM locked" +
				" WHERE j.id = locked.id AND j.attempts = $1 AND j.status = 'RUNNING' RETURNING j.id",
		},
		catalog.Statement{
			Name: catalog.JobFinishFailed, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: "UPDATE lockstep_jobs SET status = 'FAILED', finished_at = now(), heartbeat_at = now(), last_error = $1, error_history = error_history || $2::text::jsonb" +
				" WHERE id = $3 AND status = 'RUNNING' AND attempts = $4",
		},
		catalog.Statement{
			Name: catalog.JobFinishRetry, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: "UPDATE lockstep_jobs SET status = 'PENDING', heartbeat_at = now(), available_at = now() + $1" + micro + ", last_error = $2, error_history = error_history || $3::text::jsonb" +
				" WHERE id = $4 AND status = 'RUNNING' AND attempts = $5",
		},
		catalog.Statement{
			Name: catalog.JobFinishSnooze, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: "UPDATE lockstep_jobs SET status = 'PENDING', heartbeat_at = now(), available_at = now() + $1" + micro + ", max_attempts = max_attempts + 1" +
				" WHERE id = $2 AND status = 'RUNNING' AND attempts = $3",
		},
		catalog.Statement{
			Name: catalog.JobHeartbeat, Table: jobs, Finds: catalog.JobsPrimary, Changes: []catalog.Index{catalog.JobsHeartbeat, catalog.JobsQueueStatus}, Locks: true, IDList: true,
			SQL: "UPDATE lockstep_jobs SET heartbeat_at = now() WHERE id = ANY($1) AND status = 'RUNNING'",
		},
		catalog.Statement{
			Name: catalog.JobStateMany, Table: jobs, Finds: catalog.JobsPrimary, IDList: true,
			SQL: "SELECT id, status, attempts FROM lockstep_jobs WHERE id = ANY($1)",
		},
		catalog.Statement{
			Name: catalog.JobReapSelect, Table: jobs, Finds: catalog.JobsHeartbeat,
			SQL: "SELECT id, attempts, max_attempts, run_id, dependents, queue, limit_key FROM lockstep_jobs WHERE status = 'RUNNING' AND heartbeat_at < $1" +
				" ORDER BY heartbeat_at, id LIMIT $2",
		},
		catalog.Statement{
			Name: catalog.JobReap, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: "UPDATE lockstep_jobs SET status = CASE WHEN attempts >= max_attempts THEN 'FAILED' ELSE 'PENDING' END, available_at = now(), heartbeat_at = now()," +
				" finished_at = CASE WHEN attempts >= max_attempts THEN now() END, last_error = $1, error_history = error_history || $2::text::jsonb" +
				" WHERE id = $3 AND status = 'RUNNING' AND attempts = $4 AND heartbeat_at < $5",
		},
		catalog.Statement{
			Name: catalog.JobCancel, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: "UPDATE lockstep_jobs SET finished_at = CASE WHEN status = 'RUNNING' THEN NULL ELSE now() END, status = 'CANCELLED', heartbeat_at = now() WHERE id = $1 AND status IN ('WAITING', 'PENDING', 'BLOCKED', 'RUNNING')",
		},
		catalog.Statement{
			Name: catalog.JobCancelMany, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true, IDList: true,
			SQL: "UPDATE lockstep_jobs SET finished_at = CASE WHEN status = 'RUNNING' THEN NULL ELSE now() END, status = 'CANCELLED', heartbeat_at = now() WHERE id = ANY($1) AND status IN ('WAITING', 'PENDING', 'BLOCKED', 'RUNNING')",
		},
		catalog.Statement{
			Name: catalog.JobIDsLiveByRun, Table: jobs, Finds: catalog.JobsRun,
			SQL: "SELECT id, queue, limit_key FROM lockstep_jobs WHERE run_id = $1 AND status IN ('WAITING', 'PENDING', 'BLOCKED', 'RUNNING') ORDER BY id",
		},
		catalog.Statement{
			Name: catalog.JobGet, Table: jobs, Finds: catalog.JobsPrimary,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs WHERE id = $1",
		},
		catalog.Statement{
			Name: catalog.JobList, Table: jobs, Finds: catalog.JobsPrimary,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs WHERE id > $1 AND ($2 = '' OR status = $3) ORDER BY id LIMIT $4",
		},
		catalog.Statement{
			Name: catalog.JobListByRun, Table: jobs, Finds: catalog.JobsRun,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs WHERE run_id = $1 AND id > $2 AND ($3 = '' OR status = $4) ORDER BY id LIMIT $5",
		},
		catalog.Statement{
			Name: catalog.RunInsert, Table: "lockstep_runs", Returning: true,
			SQL: "INSERT INTO lockstep_runs (name, status, metadata, callbacks) VALUES ($1, 'ACTIVE', $2::text::jsonb, $3) RETURNING id",
		},
		catalog.Statement{
			Name: catalog.RunGet, Table: "lockstep_runs", Finds: catalog.RunsPrimary,
			SQL: "SELECT " + sqlexec.RunColumns + " FROM lockstep_runs WHERE id = $1",
		},
		catalog.Statement{
			Name: catalog.RunCounts, Table: jobs, Finds: catalog.JobsRun,
			SQL: "SELECT status, COUNT(*) FROM lockstep_jobs WHERE run_id = $1 GROUP BY status",
		},
		catalog.Statement{
			Name: catalog.RunCancel, Table: "lockstep_runs", Finds: catalog.RunsPrimary, Locks: true,
			SQL: "UPDATE lockstep_runs SET status = 'CANCELLED', cancelled_at = COALESCE(cancelled_at, now()) WHERE id = $1",
		},
		catalog.Statement{
			Name: catalog.JobRetry, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: "UPDATE lockstep_jobs SET status = 'PENDING', available_at = now(), heartbeat_at = now(), finished_at = NULL," +
				" max_attempts = GREATEST(max_attempts, attempts + 1) WHERE id = $1 AND status = 'FAILED'",
		},
		// Workflows: see the MySQL catalogue. job.lock_flow locks ORDER BY
		// id, so the one-row writes after it wait for nothing.
		catalog.Statement{
			// The edges as two arrays: job_id[i] depends on depends_on[i].
			Name: catalog.DepInsert, Table: deps,
			SQL: "INSERT INTO lockstep_job_deps (job_id, depends_on) SELECT * FROM unnest($1::bigint[], $2::bigint[])",
		},
		catalog.Statement{
			Name: catalog.DepDependents, Table: deps, Finds: catalog.DepsUp, IDList: true,
			SQL: "SELECT job_id, depends_on FROM lockstep_job_deps WHERE depends_on = ANY($1)",
		},
		catalog.Statement{
			Name: catalog.DepDependencies, Table: deps, Finds: catalog.DepsPrimary, IDList: true,
			SQL: "SELECT job_id, depends_on FROM lockstep_job_deps WHERE job_id = ANY($1)",
		},
		catalog.Statement{
			Name: catalog.DepDeleteMany, Table: deps, Finds: catalog.DepsPrimary, Changes: []catalog.Index{catalog.DepsUp}, Locks: true, IDList: true,
			SQL: "DELETE FROM lockstep_job_deps WHERE job_id = ANY($1)",
		},
		catalog.Statement{
			// A workflow's jobs as arrays, as job.insert takes plain ones.
			Name: catalog.JobInsertFlow, Table: jobs, Returning: true,
			SQL: "INSERT INTO lockstep_jobs (run_id, queue, kind, args, status, priority, max_attempts, available_at, metadata, waiting_on, dependents, dep_policy, callback, limit_key)" +
				" SELECT NULLIF(u.run_id, 0), u.queue, u.kind, u.args::jsonb, u.status, u.priority, u.max_attempts, COALESCE(u.available_at, now()), u.metadata::jsonb," +
				" u.waiting_on, u.dependents, u.dep_policy, u.callback, u.limit_key" +
				" FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::smallint[], $7::integer[], $8::timestamptz[], $9::text[]," +
				" $10::integer[], $11::integer[], $12::smallint[], $13::text[], $14::text[])" +
				" WITH ORDINALITY AS u(run_id, queue, kind, args, status, priority, max_attempts, available_at, metadata, waiting_on, dependents, dep_policy, callback, limit_key, n)" +
				" ORDER BY u.n RETURNING id",
		},
		catalog.Statement{
			Name: catalog.JobLockFlow, Table: jobs, Finds: catalog.JobsPrimary, Locks: true, IDList: true,
			SQL: "SELECT id, status, waiting_on, dep_policy, blocked_by, callback FROM lockstep_jobs WHERE id = ANY($1) ORDER BY id FOR UPDATE",
		},
		catalog.Statement{
			Name: catalog.JobSetWaiting, Table: jobs, Finds: catalog.JobsPrimary, Locks: true,
			SQL: "UPDATE lockstep_jobs SET waiting_on = $1 WHERE id = $2 AND status = 'WAITING'",
		},
		catalog.Statement{
			Name: catalog.JobPromote, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: "UPDATE lockstep_jobs SET status = 'PENDING', waiting_on = 0, available_at = now(), heartbeat_at = now(), args = COALESCE($1::text::jsonb, args) WHERE id = $2 AND status = 'WAITING'",
		},
		catalog.Statement{
			Name: catalog.JobCancelWaiting, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: "UPDATE lockstep_jobs SET status = 'CANCELLED', finished_at = now(), heartbeat_at = now(), last_error = $1, blocked_by = $2 WHERE id = $3 AND status = 'WAITING'",
		},
		catalog.Statement{
			Name: catalog.JobRevive, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true,
			SQL: "UPDATE lockstep_jobs SET status = $1, waiting_on = $2, available_at = now(), heartbeat_at = now(), finished_at = NULL, last_error = NULL, blocked_by = NULL WHERE id = $3 AND status = 'CANCELLED'",
		},
		catalog.Statement{
			Name: catalog.JobOutputsMany, Table: jobs, Finds: catalog.JobsPrimary, IDList: true,
			SQL: "SELECT id, kind, status, output FROM lockstep_jobs WHERE id = ANY($1) ORDER BY id",
		},
		catalog.Statement{
			Name: catalog.RunLock, Table: "lockstep_runs", Finds: catalog.RunsPrimary, Locks: true,
			SQL: "SELECT status, callbacks FROM lockstep_runs WHERE id = $1 FOR UPDATE",
		},
		catalog.Statement{
			Name: catalog.JobPageFloor, Table: jobs, Finds: catalog.JobsPrimary,
			SQL: "SELECT COUNT(*), COALESCE(MIN(id), 0) FROM (SELECT id FROM lockstep_jobs WHERE id < $1 ORDER BY id DESC LIMIT $2) w",
		},
		catalog.Statement{
			Name: catalog.JobPage, Table: jobs, Finds: catalog.JobsPrimary,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs WHERE id < $1 AND id >= $2" +
				" AND ($3 = '' OR status = $4) AND ($5 = '' OR queue = $6) AND ($7 = '' OR kind = $8)" +
				" AND ($9 = 0 OR (status = 'PENDING' AND available_at > now())) AND ($10 = 0 OR (status = 'PENDING' AND last_error IS NOT NULL))" +
				" AND ($11 = '' OR args::text ILIKE $12 ESCAPE '!' OR metadata::text ILIKE $13 ESCAPE '!') ORDER BY id DESC LIMIT $14",
		},
		// Bulk actions: see the MySQL catalogue. job.retry_many locks its
		// rows through job.lock_ids first (LockIDsFirst), ORDER BY id.
		catalog.Statement{
			Name: catalog.JobIDBounds, Table: jobs, Finds: catalog.JobsPrimary,
			SQL: "SELECT COALESCE((SELECT id FROM lockstep_jobs ORDER BY id LIMIT 1), 0)," +
				" COALESCE((SELECT id FROM lockstep_jobs ORDER BY id DESC LIMIT 1), 0)",
		},
		catalog.Statement{
			Name: catalog.JobMatch, Table: jobs, Finds: catalog.JobsPrimary,
			SQL: "SELECT id FROM lockstep_jobs WHERE id > $1 AND id <= $2" + pgMatchFilter + " ORDER BY id LIMIT $21",
		},
		catalog.Statement{
			Name: catalog.JobMatchCount, Table: jobs, Finds: catalog.JobsPrimary,
			SQL: "SELECT COUNT(*) FROM lockstep_jobs WHERE id > $1 AND id <= $2" + pgMatchFilter,
		},
		catalog.Statement{
			Name: catalog.JobBulkRefs, Table: jobs, Finds: catalog.JobsPrimary, IDList: true,
			SQL: "SELECT " + sqlexec.BulkRefColumns + " FROM lockstep_jobs WHERE id = ANY($1)",
		},
		catalog.Statement{
			Name: catalog.JobRetryMany, Table: jobs, Finds: catalog.JobsPrimary, Changes: statusIndexes, Locks: true, IDList: true,
			SQL: "UPDATE lockstep_jobs SET status = 'PENDING', available_at = now(), heartbeat_at = now(), finished_at = NULL," +
				" max_attempts = GREATEST(max_attempts, attempts + 1) WHERE id = ANY($1) AND status = 'FAILED'",
		},
		catalog.Statement{
			Name: catalog.JobPageFloorByRun, Table: jobs, Finds: catalog.JobsRun,
			SQL: "SELECT COUNT(*), COALESCE(MIN(id), 0) FROM (SELECT id FROM lockstep_jobs WHERE run_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3) w",
		},
		catalog.Statement{
			Name: catalog.JobPageByRun, Table: jobs, Finds: catalog.JobsRun,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs WHERE run_id = $1 AND id < $2 AND id >= $3" +
				" AND ($4 = '' OR status = $5) AND ($6 = '' OR queue = $7) AND ($8 = '' OR kind = $9)" +
				" AND ($10 = 0 OR (status = 'PENDING' AND available_at > now())) AND ($11 = 0 OR (status = 'PENDING' AND last_error IS NOT NULL))" +
				" AND ($12 = '' OR args::text ILIKE $13 ESCAPE '!' OR metadata::text ILIKE $14 ESCAPE '!') ORDER BY id DESC LIMIT $15",
		},
		catalog.Statement{
			Name: catalog.RunList, Table: "lockstep_runs", Finds: catalog.RunsPrimary,
			SQL: "SELECT " + sqlexec.RunColumns + " FROM lockstep_runs WHERE id < $1 ORDER BY id DESC LIMIT $2",
		},
		catalog.Statement{
			Name: catalog.RunCountsBounded, Table: jobs, Finds: catalog.JobsRun,
			SQL: "SELECT status, COUNT(*) FROM (SELECT status FROM lockstep_jobs WHERE run_id = $1 ORDER BY id LIMIT $2) w GROUP BY status",
		},
		catalog.Statement{
			// A skip scan by recursion: one index probe per queue, where
			// DISTINCT would read every index entry.
			Name: catalog.QueueList, Table: jobs, Finds: catalog.JobsQueueStatus,
			SQL: "WITH RECURSIVE q AS (SELECT MIN(queue) AS queue FROM lockstep_jobs" +
				" UNION ALL SELECT (SELECT MIN(j.queue) FROM lockstep_jobs j WHERE j.queue > q.queue) FROM q WHERE q.queue IS NOT NULL)" +
				" SELECT queue FROM q WHERE queue IS NOT NULL LIMIT $1",
		},
		catalog.Statement{
			Name: catalog.QueueCount, Table: jobs, Finds: catalog.JobsQueueStatus,
			SQL: "SELECT COUNT(*) FROM (SELECT 1 FROM lockstep_jobs WHERE queue = $1 AND status = $2 LIMIT $3) w",
		},
		catalog.Statement{
			Name: catalog.QueueFinished, Table: jobs, Finds: catalog.JobsQueueStatus,
			SQL: "SELECT COUNT(*) FROM (SELECT 1 FROM lockstep_jobs WHERE queue = $1 AND status = $2 AND heartbeat_at >= now() - $3" + micro + " LIMIT $4) w",
		},
		// Retention: the old jobs of one final status in one queue, oldest
		// first, read without locks; then locked by primary key in id
		// order, checked again, and deleted by primary key.
		catalog.Statement{
			Name: catalog.JobPruneSelect, Table: jobs, Finds: catalog.JobsQueueStatus,
			SQL: "SELECT id FROM lockstep_jobs WHERE queue = $1 AND status = $2 AND heartbeat_at < now() - $3" + micro + " ORDER BY heartbeat_at LIMIT $4",
		},
		catalog.Statement{
			Name: catalog.JobPruneLock, Table: jobs, Finds: catalog.JobsPrimary, Locks: true, IDList: true,
			SQL: "SELECT id FROM lockstep_jobs WHERE status = $1 AND heartbeat_at < now() - $2" + micro + " AND id = ANY($3) ORDER BY id FOR UPDATE",
		},
		catalog.Statement{
			Name: catalog.JobDeleteMany, Table: jobs, Finds: catalog.JobsPrimary, Changes: []catalog.Index{catalog.JobsClaim, catalog.JobsRun, catalog.JobsHeartbeat, catalog.JobsQueueStatus, catalog.JobsUnique}, Locks: true, IDList: true,
			SQL: "DELETE FROM lockstep_jobs WHERE id = ANY($1)",
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
			SQL: "DELETE FROM lockstep_queues WHERE name = $1",
		},
		catalog.Statement{
			// A client registers itself: a new row, alone in its
			// transaction.
			Name: catalog.ProcessInsert, Table: processes,
			SQL: "INSERT INTO lockstep_processes (id, host, pid, version, queues, workers, started_at, heartbeat_at) VALUES ($1, $2, $3, $4, $5, $6, now(), now())",
		},
		catalog.Statement{
			// The process's own row by primary key, alone in its
			// transaction, never with a job row.
			Name: catalog.ProcessHeartbeat, Table: processes, Finds: catalog.ProcessesPrimary, Locks: true,
			SQL: "UPDATE lockstep_processes SET heartbeat_at = now() WHERE id = $1",
		},
		catalog.Statement{
			Name: catalog.ProcessDelete, Table: processes, Finds: catalog.ProcessesPrimary, Locks: true,
			SQL: "DELETE FROM lockstep_processes WHERE id = $1",
		},
		catalog.Statement{
			// The processes long gone, in id order, bounded: a consistent
			// read of the small table; each is then deleted by
			// process.prune.
			Name: catalog.ProcessStale, Table: processes, Finds: catalog.ProcessesPrimary,
			SQL: "SELECT id FROM lockstep_processes WHERE heartbeat_at < now() - $1" + micro + " ORDER BY id LIMIT $2",
		},
		catalog.Statement{
			Name: catalog.ProcessPrune, Table: processes, Finds: catalog.ProcessesPrimary, Locks: true,
			SQL: "DELETE FROM lockstep_processes WHERE id = $1 AND heartbeat_at < now() - $2" + micro,
		},
		catalog.Statement{
			Name: catalog.ProcessList, Table: processes, Finds: catalog.ProcessesPrimary,
			SQL: "SELECT id, host, pid, version, queues, workers, started_at, heartbeat_at, now() FROM lockstep_processes ORDER BY id LIMIT $1",
		},
		catalog.Statement{
			// A process's RUNNING jobs, without locks: the heartbeat
			// index's RUNNING range (its predicate) filtered by claimed_by,
			// bounded by LIMIT; no index on claimed_by.
			Name: catalog.JobRunningByProcess, Table: jobs, Finds: catalog.JobsHeartbeat,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs WHERE status = 'RUNNING' AND claimed_by = $1 ORDER BY heartbeat_at, id LIMIT $2",
		},
		catalog.Statement{
			Name: catalog.QueuePause, Table: queues, Locks: true,
			SQL: "INSERT INTO lockstep_queues (name, paused_at, updated_at) VALUES ($1, now(), now())" +
				" ON CONFLICT (name) DO UPDATE SET paused_at = COALESCE(lockstep_queues.paused_at, now()), updated_at = now()",
		},
		catalog.Statement{
			Name: catalog.QueueResume, Table: queues, Locks: true,
			SQL: "INSERT INTO lockstep_queues (name, paused_at, updated_at) VALUES ($1, NULL, now())" +
				" ON CONFLICT (name) DO UPDATE SET paused_at = NULL, updated_at = now()",
		},
		catalog.Statement{
			Name: catalog.QueueSetMaxWorkers, Table: queues, Locks: true,
			SQL: "INSERT INTO lockstep_queues (name, max_workers, updated_at) VALUES ($1, $2, now())" +
				" ON CONFLICT (name) DO UPDATE SET max_workers = EXCLUDED.max_workers, updated_at = now()",
		},
		catalog.Statement{
			Name: catalog.QueueOldest, Table: jobs, Finds: catalog.JobsClaim,
			SQL: "SELECT MIN(available_at), now(), COUNT(*) FROM (SELECT available_at FROM lockstep_jobs" +
				" WHERE queue = $1 AND status = 'PENDING' AND available_at <= now() ORDER BY priority, available_at, id LIMIT $2) w",
		},
		catalog.Statement{
			Name: catalog.MigrationCreateTable, Table: "lockstep_migrations",
			SQL: "CREATE TABLE IF NOT EXISTS lockstep_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)",
		},
		catalog.Statement{
			Name: catalog.MigrationList, Table: "lockstep_migrations",
			SQL: "SELECT version, name, applied_at FROM lockstep_migrations ORDER BY version",
		},
		catalog.Statement{
			Name: catalog.MigrationInsert, Table: "lockstep_migrations",
			SQL: "INSERT INTO lockstep_migrations (version, name, applied_at) VALUES ($1, $2, now())",
		},
		catalog.Statement{
			Name: catalog.MigrationDelete, Table: "lockstep_migrations",
			SQL: "DELETE FROM lockstep_migrations WHERE version = $1",
		},
		catalog.Statement{
			Name: catalog.ServerVersion, SQL: "SHOW server_version",
		},
	}, append(append(limitStatements(statusIndexes), historyStatements()...), searchStatements()...)...)...)
}

// Catalog returns the statement catalogue the driver uses, without a
// connection: for documentation and offline audits of the lock order.
func Catalog() *catalog.Catalog { return catalog.Must(newCatalog()) }
