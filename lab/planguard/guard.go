// Package planguard checks that the database plans every catalogue
// statement the way the catalogue declares: the index that finds its rows
// is the declared one, nothing is found by a full scan, and a claim neither
// sorts nor reads past its LIMIT. The claim/cancel deadlock came from a
// plan the optimizer picked from the data distribution, so the guard loads
// several distributions and EXPLAINs every statement under each of them.
package planguard

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/catalog"
)

// Options narrows or changes what Check looks at.
type Options struct {
	// Catalog replaces the driver's own catalogue, to show the guard
	// failing on a deliberately broken declaration.
	Catalog *catalog.Catalog
	// Statements limits the check to these names; empty means all.
	Statements []string
}

// Access is one table access in a plan.
type Access struct {
	Table string
	// Index is the index the access reads, "" for a full table scan.
	Index string
	// Method is the dialect's word for it: "range", "ref", "ALL" on
	// MySQL; "Index Scan", "Seq Scan" on PostgreSQL.
	Method string
	// Rows is the optimizer's estimate; ReadRows what ANALYZE measured
	// (claims only; -1 when not measured).
	Rows     float64
	ReadRows float64
}

func (a Access) String() string {
	ix := a.Index
	if ix == "" {
		ix = "(no index)"
	}
	if a.ReadRows >= 0 {
		return fmt.Sprintf("%s %s via %s, est. %.0f rows, read %.0f", a.Table, a.Method, ix, a.Rows, a.ReadRows)
	}
	return fmt.Sprintf("%s %s via %s, est. %.0f rows", a.Table, a.Method, ix, a.Rows)
}

// Plan is what the guard reads from one EXPLAIN.
type Plan struct {
	Accesses []Access
	// Sorts is true when the plan sorts rows (filesort, Sort node).
	Sorts bool
	// Raw is the EXPLAIN output, for the report of a failure.
	Raw string
}

// Result is the verdict on one statement under one probe.
type Result struct {
	Distribution string
	Statement    string
	// Variant is "live" (rows in the state the statement expects) or
	// "stale" (rows that have moved on, as for a fenced finish).
	Variant string
	// Want is the declared index, in the dialect's own name.
	Want string
	Plan Plan
	// Problems is empty when the plan matches the declaration.
	Problems []string
	// Notes are deviations that cannot change the lock order, reported but
	// not failed: on PostgreSQL, which locks heap tuples rather than index
	// records, a single-row write found through another index locks the
	// same one tuple, and a multi-row write's tuples are already locked in
	// id order by job.lock_ids.
	Notes []string
	// Skipped says why a statement was not explained (an INSERT has no
	// access path; a probe value missing from live data).
	Skipped string
}

// OK reports whether the statement passed or was legitimately skipped.
func (r Result) OK() bool { return len(r.Problems) == 0 }

// Report is the outcome of one Check or CheckDistributions.
type Report struct {
	Dialect string
	Results []Result
}

// Failed returns the results with problems.
func (r *Report) Failed() []Result {
	var out []Result
	for _, res := range r.Results {
		if !res.OK() {
			out = append(out, res)
		}
	}
	return out
}

// dialect is what a database contributes: how to explain, measure a
// claim, and load a distribution.
type dialect interface {
	explain(ctx context.Context, q querier, sqlText string, args []any) (Plan, error)
	// analyzeClaim runs the claim in a transaction it rolls back and
	// returns the plan with rows actually read.
	analyzeClaim(ctx context.Context, db *sql.DB, sqlText string, args []any) (Plan, error)
	load(ctx context.Context, db *sql.DB, d Distribution) error
	rebind(q string) string
	// locksIndexRecords is true for InnoDB, where the index a statement
	// finds rows through is part of what it locks, and so of the order.
	locksIndexRecords() bool
}

// querier is a *sql.DB or *sql.Tx: EXPLAIN outside or inside a
// transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// dialectOf asks the server what it is: MariaDB and MySQL print plans
// differently.
func dialectOf(ctx context.Context, drv driver.Driver) (dialect, error) {
	switch drv.Dialect() {
	case "mysql":
		return newMySQLDialect(ctx, drv.DB())
	case "postgres":
		return postgresDialect{}, nil
	}
	return nil, fmt.Errorf("planguard: dialect %q has no row-level lock order to guard (SQLite serialises writers with BEGIN IMMEDIATE)", drv.Dialect())
}

// Check explains the catalogue's statements against the data the database
// holds now. It changes nothing, except that a claim is measured inside a
// transaction that is rolled back.
func Check(ctx context.Context, drv driver.Driver, opts Options) (*Report, error) {
	d, err := dialectOf(ctx, drv)
	if err != nil {
		return nil, err
	}
	cat := opts.Catalog
	if cat == nil {
		cat = drv.Catalog()
	}
	rep := &Report{Dialect: cat.Dialect()}
	if err := checkData(ctx, drv.DB(), d, cat, opts.Statements, "live data", rep); err != nil {
		return rep, err
	}
	return rep, nil
}

// CheckDistributions loads each distribution in turn into the queue's
// tables, refreshes statistics and checks every statement under it. The
// tables must be empty at the start (it is meant for a scratch database)
// and are emptied again at the end.
func CheckDistributions(ctx context.Context, drv driver.Driver, dists []Distribution, opts Options) (*Report, error) {
	d, err := dialectOf(ctx, drv)
	if err != nil {
		return nil, err
	}
	cat := opts.Catalog
	if cat == nil {
		cat = drv.Catalog()
	}
	db := drv.DB()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM (SELECT id FROM lockstep_jobs LIMIT 1) t").Scan(&n); err != nil {
		return nil, fmt.Errorf("planguard: %w", err)
	}
	if n > 0 {
		return nil, fmt.Errorf("planguard: lockstep_jobs is not empty; loading distributions replaces the table's contents, so point it at a scratch database (or use Check to explain against the data as it is)")
	}
	rep := &Report{Dialect: cat.Dialect()}
	defer func() { _ = Load(context.WithoutCancel(ctx), drv, Distribution{Name: "empty"}) }()
	for _, dist := range dists {
		if err := d.load(ctx, db, dist); err != nil {
			return rep, fmt.Errorf("planguard: load %s: %w", dist.Name, err)
		}
		if err := checkData(ctx, db, d, cat, opts.Statements, dist.Name, rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// Load replaces the queue tables' contents with a distribution and
// refreshes statistics; tests load one before an interleaving so that the
// dangerous plan is the likely one. Distribution{} empties the tables.
func Load(ctx context.Context, drv driver.Driver, dist Distribution) error {
	d, err := dialectOf(ctx, drv)
	if err != nil {
		return err
	}
	if err := d.load(ctx, drv.DB(), dist); err != nil {
		return fmt.Errorf("planguard: load %s: %w", dist.Name, err)
	}
	return nil
}

func checkData(ctx context.Context, db *sql.DB, d dialect, cat *catalog.Catalog, only []string, distName string, rep *Report) error {
	p, err := discover(ctx, db, d)
	if err != nil {
		return fmt.Errorf("planguard: %s: %w", distName, err)
	}
	if st, ok := cat.Lookup(string(catalog.TextIndexExists)); ok {
		var n int64
		if err := db.QueryRowContext(ctx, st.SQL).Scan(&n); err != nil {
			return fmt.Errorf("planguard: %s: text index: %w", distName, err)
		}
		p.textIndex = n > 0
	}
	for _, st := range cat.All() {
		if len(only) > 0 && !slices.Contains(only, string(st.Name)) {
			continue
		}
		for _, variant := range variantsOf(st) {
			res := Result{Distribution: distName, Statement: string(st.Name), Variant: variant, Want: cat.IndexName(st.Finds)}
			if st.Finds == catalog.None {
				res.Skipped = "declares no access path (an insert or bookkeeping statement)"
				rep.Results = append(rep.Results, res)
				continue
			}
			sqlText, args, skip, err := bind(cat, st, variant, p)
			if err != nil {
				res.Problems = append(res.Problems, err.Error())
				rep.Results = append(rep.Results, res)
				continue
			}
			if skip != "" {
				res.Skipped = skip
				rep.Results = append(rep.Results, res)
				continue
			}
			if st.Claim {
				res.Plan, err = d.analyzeClaim(ctx, db, sqlText, args)
			} else {
				res.Plan, err = d.explain(ctx, db, sqlText, args)
			}
			if err != nil {
				return fmt.Errorf("planguard: %s: %s: %w", distName, st.Name, err)
			}
			res.Problems = judge(cat, st, res.Plan, claimLimit)
			if !d.locksIndexRecords() && !strict(st) {
				res.Notes, res.Problems = res.Problems, nil
				// A full scan is never acceptable, whatever it locks.
				for _, n := range res.Notes {
					if strings.HasPrefix(n, "full scan") {
						res.Problems = append(res.Problems, n)
					}
				}
			}
			rep.Results = append(rep.Results, res)
		}
	}
	return nil
}

// variantsOf: a by-id write re-checks the state it expects because the
// row may have moved on; its plan must hold in that case too, where the
// status-led index looks cheapest (no row has the expected status).
func variantsOf(st catalog.Statement) []string {
	if st.Locks && st.Finds == catalog.JobsPrimary {
		return []string{"live", "stale"}
	}
	return []string{"live"}
}

// strict says whether a deviation from the declared index fails the
// statement on a database that locks tuples, not index records: claims
// (whose index decides what they read and lock before LIMIT stops them)
// and the locking reads that fix the order of multi-row writes. (The
// search through the text index is not: on a small table PostgreSQL
// rightly walks the primary key; on a million jobs it takes the index,
// which the dashboard benchmark checks by finding the deep match.)
func strict(st catalog.Statement) bool {
	return st.Claim || (st.Locks && st.IDList && len(st.Changes) == 0)
}

// judge compares a plan with the declaration.
func judge(cat *catalog.Catalog, st catalog.Statement, plan Plan, limit int) []string {
	var problems []string
	want := cat.IndexName(st.Finds)
	primary := cat.IndexName(catalog.JobsPrimary)
	if st.Table == "lockstep_runs" {
		primary = cat.IndexName(catalog.RunsPrimary)
	}
	var mine []Access
	for _, a := range plan.Accesses {
		if a.Table == st.Table {
			mine = append(mine, a)
		}
	}
	if len(mine) == 0 {
		return []string{fmt.Sprintf("the plan never reads %s (EXPLAIN: %s)", st.Table, oneLine(plan.Raw))}
	}
	found := false
	for _, a := range mine {
		switch {
		case a.Index == "":
			problems = append(problems, fmt.Sprintf("full scan of %s (%s), declared %s", st.Table, a.Method, want))
		case a.Index == want:
			found = true
		case a.Index == primary:
			// A join back to the same table by id (PostgreSQL's claim
			// updates the rows its CTE picked).
		default:
			problems = append(problems, fmt.Sprintf("finds rows through %s, declared %s", a.Index, want))
		}
	}
	if !found && len(problems) == 0 {
		problems = append(problems, fmt.Sprintf("does not use the declared %s", want))
	}
	if st.Claim {
		if plan.Sorts {
			problems = append(problems, "the claim plan sorts: under FOR UPDATE a sort locks every candidate row")
		}
		for _, a := range mine {
			if a.Index == want && a.ReadRows > float64(limit) {
				problems = append(problems, fmt.Sprintf("the claim read %.0f index entries for LIMIT %d", a.ReadRows, limit))
			}
		}
	}
	return problems
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
