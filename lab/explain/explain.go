// Package explain shows how the optimizer plans a statement on the attempt
// table under several data distributions — the point of the published
// EXPLAINs: the same statement takes a different index, and so a different
// lock order, as the data changes.
package explain

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/lockstep-queue/lockstep/lab/attempt"
)

// DefaultStatement is the range cancel of run 3, unhinted.
var DefaultStatement = attempt.Stmt{SQL: "UPDATE attempt SET status='CANCELLED' WHERE run_id=? AND status IN ('PENDING','RUNNING')", Args: []any{int64(attempt.Target)}}

// Row is one line of the EXPLAIN table, one per distribution.
type Row struct {
	Distribution string
	Type, Key    string
	Rows         int64
	Extra        string
}

// Run creates the attempt table in db's database, loads each distribution
// in turn (refreshing statistics) and EXPLAINs the statement under it; the
// table is dropped afterwards unless keep is set.
func Run(ctx context.Context, db *sql.DB, stmt attempt.Stmt, dists []attempt.Distribution, keep bool) ([]Row, error) {
	if err := attempt.Create(ctx, db); err != nil {
		return nil, err
	}
	if !keep {
		defer func() { _ = attempt.Drop(context.WithoutCancel(ctx), db) }()
	}
	var out []Row
	for _, d := range dists {
		if err := attempt.Load(ctx, db, d); err != nil {
			return out, err
		}
		plan, err := attempt.Explain(ctx, db, stmt)
		if err != nil {
			return out, fmt.Errorf("explain: %s: %w", d.Name, err)
		}
		n, _ := strconv.ParseInt(plan["rows"], 10, 64)
		out = append(out, Row{Distribution: d.Name, Type: plan["type"], Key: plan["key"], Rows: n, Extra: plan["Extra"]})
	}
	return out, nil
}

// WriteText prints the rows as one table, a line per distribution.
func WriteText(w io.Writer, stmt attempt.Stmt, rows []Row) error {
	if _, err := fmt.Fprintf(w, "EXPLAIN %s\n\n", stmt.Text()); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DISTRIBUTION\tTYPE\tKEY\tROWS\tEXTRA")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", r.Distribution, r.Type, r.Key, r.Rows, r.Extra)
	}
	return tw.Flush()
}
