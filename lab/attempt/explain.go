package attempt

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/lockstep-queue/lockstep/internal/mysqlplan"
)

// Explain returns the classic EXPLAIN of a statement's first table access
// by column name (id, select_type, table, type, possible_keys, key,
// key_len, ref, rows, Extra) — the columns of the published EXPLAIN
// tables. It asks the server what it is first: Oracle MySQL 9.x prints a
// bare EXPLAIN as a TREE, whose EXPLAIN of an UPDATE has none of these
// columns, so MySQL is asked for FORMAT=TRADITIONAL (see internal/mysqlplan).
func Explain(ctx context.Context, db *sql.DB, s Stmt) (map[string]string, error) {
	srv, err := mysqlplan.Detect(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("attempt: explain %s: %w", s.Text(), err)
	}
	plan, err := srv.Explain(ctx, db, s.SQL, s.Args...)
	if err != nil {
		return nil, fmt.Errorf("attempt: explain %s: %w", s.Text(), err)
	}
	return plan.Rows[0].Columns, nil
}
