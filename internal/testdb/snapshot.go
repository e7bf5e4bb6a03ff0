package testdb

import (
	"database/sql"
	"fmt"
	"testing"
	"time"
)

// Snapshot is every row of the queue's tables, each column as text,
// ordered by primary key. Two equal snapshots taken around an operation
// show that it changed nothing: a refused input, a forbidden request.
type Snapshot map[string][][]string

// TakeSnapshot reads the snapshot of lockstep_jobs, lockstep_runs and
// lockstep_migrations through db.
func TakeSnapshot(t testing.TB, db *sql.DB) Snapshot {
	t.Helper()
	out := Snapshot{}
	for _, table := range []string{"lockstep_jobs", "lockstep_runs", "lockstep_migrations"} {
		rows, err := readTable(db, table)
		if err != nil {
			// PostgreSQL refuses a cached "SELECT *" whose columns a
			// migration changed (0A000); pgx then drops the statement from
			// its cache, so a second read prepares it afresh.
			rows, err = readTable(db, table)
		}
		if err != nil {
			// This package's non-test code stays free of testify: the
			// benchmarks module builds it too.
			t.Fatalf("testdb: snapshot of %s: %v", table, err)
		}
		out[table] = rows
	}
	return out
}

func readTable(db *sql.DB, table string) ([][]string, error) {
	rows, err := db.Query("SELECT * FROM " + table + " ORDER BY 1")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = cols[i] + "=" + snapshotValue(v)
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

func snapshotValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return string(v)
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano)
	default:
		return fmt.Sprint(v)
	}
}

// WithoutJobs is the snapshot less the given jobs' rows: the jobs an
// operation was meant to change.
func (s Snapshot) WithoutJobs(ids ...int64) Snapshot {
	skip := map[string]bool{}
	for _, id := range ids {
		skip[fmt.Sprintf("id=%d", id)] = true
	}
	out := Snapshot{}
	for table, rows := range s {
		for _, row := range rows {
			if table == "lockstep_jobs" && skip[row[0]] {
				continue
			}
			out[table] = append(out[table], row)
		}
	}
	return out
}
