package planguard

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
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
	Plans        []pgNode `json:"Plans"`
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
			a.ReadRows = *n.ActualRows
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
			a.Index = strings.Join(names, "+")
		}
		plan.Accesses = append(plan.Accesses, a)
	}
	for _, c := range n.Plans {
		walkPostgres(c, plan)
	}
}

func (postgresDialect) load(ctx context.Context, db *sql.DB, d Distribution) error {
	stmts := []string{"TRUNCATE lockstep_jobs, lockstep_runs, lockstep_job_deps"}
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
		const past = "now() - interval '1 hour'"
		// Every job is unique by its own key, held while PENDING or
		// RUNNING, so the unique index is as full as the live jobs.
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO lockstep_jobs (id, run_id, queue, kind, args, status, priority, available_at, attempts, max_attempts, started_at, heartbeat_at, finished_at, error_history, created_at, unique_key, unique_states)
SELECT n, %[1]s, %[2]s, 'planguard', '{}', st, 0, %[3]s, CASE WHEN st IN ('PENDING', 'WAITING') THEN 0 ELSE 1 END, 25,
  CASE WHEN st NOT IN ('PENDING', 'WAITING') THEN %[3]s END, CASE WHEN st NOT IN ('PENDING', 'WAITING') THEN %[3]s END, CASE WHEN st NOT IN ('PENDING', 'RUNNING', 'WAITING') THEN %[3]s END, '[]', %[3]s, lpad(to_hex(n), 64, '0'), 3
FROM (SELECT n, %[4]s AS st FROM generate_series(1, %[5]d) AS g(n)) s`, run, queue, past, d.Status, d.Jobs))
	}
	for _, e := range d.Edges {
		where := "TRUE"
		if e.Where != "" {
			where = e.Where
		}
		stmts = append(stmts, fmt.Sprintf("INSERT INTO lockstep_job_deps (job_id, depends_on) SELECT %s, %s FROM generate_series(1, %d) AS g(n) WHERE %s ON CONFLICT DO NOTHING", e.Job, e.On, e.Count, where))
	}
	// Explicit ids do not advance the identity sequences; later inserts
	// (an interleaving test's enqueue) must not collide with them.
	stmts = append(stmts,
		"SELECT setval(pg_get_serial_sequence('lockstep_jobs', 'id'), COALESCE((SELECT max(id) FROM lockstep_jobs), 0) + 1, false)",
		"SELECT setval(pg_get_serial_sequence('lockstep_runs', 'id'), COALESCE((SELECT max(id) FROM lockstep_runs), 0) + 1, false)",
		"ANALYZE lockstep_jobs, lockstep_runs, lockstep_job_deps")
	for _, s := range stmts {
		if err := drain(ctx, db, s); err != nil {
			return err
		}
	}
	return nil
}
