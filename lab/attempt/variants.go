package attempt

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Cancel is one way of writing the range cancel: "mark every PENDING or
// RUNNING attempt of a run CANCELLED".
type Cancel struct {
	Name  string
	About string
	// Setup runs once after the table is created (the composite index).
	Setup string
	// Range is the single range UPDATE, with ? for the run id; empty for
	// the ids-then-PRIMARY fix, which uses SelectIDs and ByID.
	Range     string
	SelectIDs string
	ByID      string
}

// Statements returns what the cancel runs for a run, reading ids where it
// must: one range UPDATE, or a non-locking read of the ids followed by one
// UPDATE per id in ascending order.
func (c Cancel) Statements(ctx context.Context, q interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}, run int64) ([]Stmt, error) {
	if c.Range != "" {
		return []Stmt{{SQL: c.Range, Args: []any{run}}}, nil
	}
	rows, err := q.QueryContext(ctx, c.SelectIDs, run)
	if err != nil {
		return nil, fmt.Errorf("attempt: cancel %s: read ids: %w", c.Name, err)
	}
	defer rows.Close()
	var out []Stmt
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, Stmt{SQL: c.ByID, Args: []any{id}})
	}
	return out, rows.Err()
}

// Stmt is a statement with its arguments.
type Stmt struct {
	SQL  string
	Args []any
}

// Text renders the statement with its arguments in place, for timelines.
func (s Stmt) Text() string {
	out := s.SQL
	for _, a := range s.Args {
		out = strings.Replace(out, "?", fmt.Sprint(a), 1)
	}
	return out
}

const liveStatus = "status IN ('PENDING','RUNNING')"

// Cancels are the variants the published race numbers measure, in their
// order.
func Cancels() []Cancel {
	return []Cancel{
		{Name: "range-status", About: "one range UPDATE, FORCE INDEX(idx_status)",
			Range: "UPDATE attempt FORCE INDEX (idx_status) SET status='CANCELLED' WHERE run_id=? AND " + liveStatus},
		{Name: "range-run", About: "one range UPDATE, FORCE INDEX(idx_run)",
			Range: "UPDATE attempt FORCE INDEX (idx_run) SET status='CANCELLED' WHERE run_id=? AND " + liveStatus},
		{Name: "composite", About: "one range UPDATE through a (run_id, status) index",
			Setup: "ALTER TABLE attempt ADD KEY idx_run_status (run_id, status)",
			Range: "UPDATE attempt FORCE INDEX (idx_run_status) SET status='CANCELLED' WHERE run_id=? AND " + liveStatus},
		{Name: "ids-then-primary", About: "ids read without locking, then one UPDATE per id by PRIMARY in ascending order",
			SelectIDs: "SELECT id FROM attempt WHERE run_id=? AND " + liveStatus + " ORDER BY id",
			ByID:      "UPDATE attempt FORCE INDEX (PRIMARY) SET status='CANCELLED' WHERE id=? AND " + liveStatus},
		{Name: "range", About: "one range UPDATE, no hint (the optimizer chooses)",
			Range: "UPDATE attempt SET status='CANCELLED' WHERE run_id=? AND " + liveStatus},
	}
}

// LookupCancel finds a cancel variant by name.
func LookupCancel(name string) (Cancel, error) {
	var names []string
	for _, c := range Cancels() {
		if c.Name == name {
			return c, nil
		}
		names = append(names, c.Name)
	}
	return Cancel{}, fmt.Errorf("attempt: no cancel variant %q (have: %s)", name, strings.Join(names, ", "))
}

// Claim is the claim by PRIMARY KEY, "mark one PENDING attempt RUNNING",
// by plan.
type Claim struct {
	Name string
	SQL  string // with ? for the id
}

// Claims: the claim as written (MariaDB plans it through
// idx_status), and pinned to PRIMARY.
func Claims() []Claim {
	return []Claim{
		{Name: "default", SQL: "UPDATE attempt SET status='RUNNING' WHERE id=? AND status='PENDING'"},
		{Name: "primary", SQL: "UPDATE attempt FORCE INDEX (PRIMARY) SET status='RUNNING' WHERE id=? AND status='PENDING'"},
	}
}

// LookupClaim finds a claim plan by name.
func LookupClaim(name string) (Claim, error) {
	for _, c := range Claims() {
		if c.Name == name {
			return c, nil
		}
	}
	return Claim{}, fmt.Errorf("attempt: no claim plan %q (have: default, primary)", name)
}
