package seed

import (
	"context"
	"database/sql"
	"fmt"
)

// Explain runs classic EXPLAIN on a statement and returns its first row by
// column name (id, select_type, table, type, possible_keys, key, key_len,
// ref, rows, Extra) — the columns the seed's tables show.
func Explain(ctx context.Context, db *sql.DB, s Stmt) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, "EXPLAIN "+s.SQL, s.Args...)
	if err != nil {
		return nil, fmt.Errorf("seed: explain %s: %w", s.Text(), err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("seed: explain %s returned nothing", s.Text())
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(cols))
	for i, c := range cols {
		out[c] = vals[i].String
	}
	return out, rows.Err()
}
