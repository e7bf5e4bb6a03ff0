package testdb

import (
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
		rows, err := db.Query("SELECT * FROM " + table + " ORDER BY 1")
		require.NoError(t, err)
		cols, err := rows.Columns()
		require.NoError(t, err)
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			row := make([]string, len(cols))
			for i, v := range vals {
				row[i] = cols[i] + "=" + snapshotValue(v)
			}
			out[table] = append(out[table], row)
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
	}
	return out
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
