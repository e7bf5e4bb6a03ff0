package planguard

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

type postgresDialect struct{}

func (postgresDialect) locksIndexRecords() bool { return false }

func (postgresDialect) rebind(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (p postgresDialect) explain(ctx context.Context, q querier, sqlText string, args []any) (Plan, error) {
	return p.jsonPlan(ctx, q, "EXPLAIN (FORMAT JSON) "+sqlText, args)
}

// analyzeClaim: the claim is an UPDATE; EXPLAIN ANALYZE runs it, inside
// a transaction that is rolled back.
func (p postgresDialect) analyzeClaim(ctx context.Context, db *sql.DB, sqlText string, args []any) (Plan, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return Plan{}, err
	}
	defer func() { _ = tx.Rollback() }()
	return p.jsonPlan(ctx, tx, "EXPLAIN (ANALYZE, FORMAT JSON) "+sqlText, args)
}

type pgNode struct {
	NodeType     string   `json:"Node Type"`
	RelationName string   `json:"Relation Name"`
	IndexName    string   `json:"Index Name"`
	PlanRows     float64  `json:"Plan Rows"`
	ActualRows   *float64 `json:"Actual Rows"`
	ActualLoops  *float64 `json:"Actual Loops"`
	// Rows read and dropped by a filter the index did not apply: entries
	// the scan read all the same.
	RemovedByFilter float64  `json:"Rows Removed by Filter"`
	Plans           []pgNode `json:"Plans"`
}

func (postgresDialect) jsonPlan(ctx context.Context, q querier, query string, args []any) (Plan, error) {
	var raw string
	if err := q.QueryRowContext(ctx, query, args...).Scan(&raw); err != nil {
		return Plan{}, err
	}
	var out []struct {
		Plan pgNode `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return Plan{}, fmt.Errorf("parse EXPLAIN output: %w", err)
	}
	plan := Plan{Raw: raw}
	for _, o := range out {
		walkPostgres(o.Plan, &plan)
	}
	return plan, nil
}

// walkPostgres collects relation scans. A Bitmap Heap Scan names its
// relation and its child Bitmap Index Scans name the indexes.
func walkPostgres(n pgNode, plan *Plan) {
	switch n.NodeType {
	case "Sort", "Incremental Sort":
		plan.Sorts = true
	}
	// ModifyTable and LockRows name the relation too, but find no rows.
	if n.RelationName != "" && strings.HasSuffix(n.NodeType, "Scan") {
		a := Access{Table: n.RelationName, Method: n.NodeType, Index: n.IndexName, Rows: n.PlanRows, ReadRows: -1}
		if n.ActualRows != nil {
			a.ReadRows = *n.ActualRows + n.RemovedByFilter
			if n.ActualLoops != nil && *n.ActualLoops > 1 {
				a.ReadRows *= *n.ActualLoops
			}
		}
		if n.NodeType == "Bitmap Heap Scan" {
			var names []string
			var collect func(pgNode)
			collect = func(c pgNode) {
				if c.IndexName != "" {
					names = append(names, c.IndexName)
				}
				for _, cc := range c.Plans {
					collect(cc)
				}
			}
			for _, c := range n.Plans {
				collect(c)
			}
			// A BitmapOr of one multi-column index's columns (the text
			// index's args and metadata) names it once.
			a.Index = strings.Join(slices.Compact(names), "+")
		}
		plan.Accesses = append(plan.Accesses, a)
	}
	for _, c := range n.Plans {
		walkPostgres(c, plan)
	}
}

func (postgresDialect) load(ctx context.Context, db *sql.DB, d Distribution) error {
	stmts := []string{"TRUNCATE lockstep_jobs, lockstep_runs, lockstep_job_deps, lockstep_queues, lockstep_limit_keys, lockstep_limit_starts, lockstep_processes, lockstep_history"}
	if runs := d.Runs(); runs > 0 {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO lockstep_runs (id, name, status, created_at) SELECT n, 'planguard-' || n, 'ACTIVE', now() FROM generate_series(1, %d) AS s(n)", runs))
	}
	if d.Jobs > 0 {
		queue := "'default'"
		if d.Queues > 1 {
			queue = fmt.Sprintf("'q' || (n %% %d)", d.Queues)
		}
		run := "NULL::bigint"
		if d.RunSize > 0 {
			run = fmt.Sprintf("(n - 1) / %d + 1", d.RunSize)
		}
		key := d.LimitKey
		if key == "" {
			key = "NULL"
		}
		const past = "now() - interval '1 hour'"
		// Every job is unique by its own key, held while PENDING, BLOCKED
		// or RUNNING, so the unique index is as full as the live jobs. A
		// BLOCKED job's heartbeat_at is when it was blocked; a job
		// cancelled while running (CANCELLING) keeps a fresh heartbeat and
		// no finished_at.
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO lockstep_jobs (id, run_id, queue, kind, args, status, priority, available_at, attempts, max_attempts, started_at, heartbeat_at, finished_at, error_history, created_at, unique_key, unique_states, limit_key)
SELECT n, %[1]s, %[2]s, 'planguard', '{}', CASE WHEN st = 'CANCELLING' THEN 'CANCELLED' ELSE st END, 0, %[3]s, CASE WHEN st IN ('PENDING', 'WAITING', 'BLOCKED') THEN 0 ELSE 1 END, 25,
  CASE WHEN st NOT IN ('PENDING', 'WAITING', 'BLOCKED') THEN %[3]s END, CASE WHEN st = 'CANCELLING' THEN now() WHEN st NOT IN ('PENDING', 'WAITING') THEN %[3]s END,
  CASE WHEN st NOT IN ('PENDING', 'RUNNING', 'WAITING', 'BLOCKED', 'CANCELLING') THEN %[3]s END, '[]', %[3]s, lpad(to_hex(n), 64, '0'), 3, lk
FROM (SELECT n, %[4]s AS st, %[6]s AS lk FROM generate_series(1, %[5]d) AS g(n)) s`, run, queue, past, d.Status, d.Jobs, key))
	}
	for _, e := range d.Edges {
		where := "TRUE"
		if e.Where != "" {
			where = e.Where
		}
		stmts = append(stmts, fmt.Sprintf("INSERT INTO lockstep_job_deps (job_id, depends_on) SELECT %s, %s FROM generate_series(1, %d) AS g(n) WHERE %s ON CONFLICT DO NOTHING", e.Job, e.On, e.Count, where))
	}
	// Every queue limited; a row per key; the starts of the RUNNING and
	// cancelling jobs (per key, and the queue's own under ''), and old
	// starts of some finished ones, which a claim would prune.
	stmts = append(stmts,
		"INSERT INTO lockstep_queues (name, concurrency, key_concurrency, sequence, rate, rate_period_us, rate_by_key, updated_at)"+
			" SELECT DISTINCT queue, "+limitsSQL+", now() FROM lockstep_jobs",
		"INSERT INTO lockstep_limit_keys (queue, limit_key) SELECT DISTINCT queue, limit_key FROM lockstep_jobs WHERE limit_key IS NOT NULL",
		"INSERT INTO lockstep_limit_starts (queue, limit_key, started_at, job_id) SELECT queue, limit_key, started_at, id FROM lockstep_jobs"+
			" WHERE limit_key IS NOT NULL AND started_at IS NOT NULL AND (finished_at IS NULL OR id % 97 = 0)",
		"INSERT INTO lockstep_limit_starts (queue, limit_key, started_at, job_id) SELECT queue, '', started_at, id FROM lockstep_jobs WHERE status = 'RUNNING'",
		// processRows processes, the RUNNING jobs claimed by them in turn.
		fmt.Sprintf("INSERT INTO lockstep_processes (id, host, pid, version, queues, workers, started_at, heartbeat_at)"+
			" SELECT 'planguard-' || n, 'planguard', n, '(devel)', 'default=10', 10, now() - interval '1 hour', now() - n * interval '1 second' FROM generate_series(1, %d) AS g(n)", processRows),
		fmt.Sprintf("UPDATE lockstep_jobs SET claimed_by = 'planguard-' || (id %% %d + 1) WHERE status = 'RUNNING'", processRows),
		// Three days of history per queue, a row a minute.
		"INSERT INTO lockstep_history (bucket, queue, kind, done, failed, retried, cancelled, run_ms)"+
			" SELECT date_trunc('minute', now()) - n * interval '1 minute', q.queue, 'planguard', n % 50, n % 3, n % 5, n % 7, n * 10"+
			fmt.Sprintf(" FROM generate_series(1, %d) AS g(n) CROSS JOIN (SELECT DISTINCT queue FROM lockstep_jobs) q", historyMinutes))
	// Explicit ids do not advance the identity sequences; later inserts
	// (an interleaving test's enqueue) must not collide with them.
	stmts = append(stmts,
		"SELECT setval(pg_get_serial_sequence('lockstep_jobs', 'id'), COALESCE((SELECT max(id) FROM lockstep_jobs), 0) + 1, false)",
		"SELECT setval(pg_get_serial_sequence('lockstep_runs', 'id'), COALESCE((SELECT max(id) FROM lockstep_runs), 0) + 1, false)",
		"ANALYZE lockstep_jobs, lockstep_runs, lockstep_job_deps, lockstep_queues, lockstep_limit_keys, lockstep_limit_starts, lockstep_processes, lockstep_history")
	for _, s := range stmts {
		if err := drain(ctx, db, s); err != nil {
			return err
		}
	}
	return nil
}
