package attempt

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/lockstep-queue/lockstep/internal/sqlrows"
)

// Explain runs classic EXPLAIN on a statement and returns its first row by
// column name (id, select_type, table, type, possible_keys, key, key_len,
// ref, rows, Extra) — the columns of the published EXPLAIN tables.
func Explain(ctx context.Context, db *sql.DB, s Stmt) (map[string]string, error) {
	plan, err := sqlrows.Maps(ctx, db, "EXPLAIN "+s.SQL, s.Args...)
	if err != nil {
		return nil, fmt.Errorf("attempt: explain %s: %w", s.Text(), err)
	}
	if len(plan) == 0 {
		return nil, fmt.Errorf("attempt: explain %s returned nothing", s.Text())
	}
	return plan[0], nil
}
