package lockorder_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
)

// fixtureMaxAge bounds how long a loaded fixture is restored rather than
// loaded again. Its "fresh" heartbeats (the workflow's RUNNING jobs, the
// job cancelled while running) must stay inside the reap op's one minute
// and the limited claim's ten-minute grace through every interleaving that
// uses it, however slowly a loaded machine runs them.
const fixtureMaxAge = 20 * time.Second

// fixture is the almost-done distribution as last loaded on one server:
// when, and a pristine copy of every queue table taken right after.
//
// Loading the distribution writes 10,000 jobs through every index of the
// jobs table, most of an interleaving's time; an interleaving changes a
// handful of rows. Restoring just those rows from the copy gives each
// interleaving the same data at a fraction of the cost, and the plans the
// load checked stay the plans of that same data.
type fixture struct {
	loadedAt time.Time
	tables   []fixtureTable
	maxJobID int64
}

// fixtureTable is one queue table and the columns an INSERT may write (a
// generated column is the server's).
type fixtureTable struct {
	name    string
	columns []string
}

func (t fixtureTable) pristine() string { return t.name + "_pristine" }

func (t fixtureTable) columnList(alias string) string {
	cols := make([]string, len(t.columns))
	for i, c := range t.columns {
		cols[i] = alias + c
	}
	return strings.Join(cols, ", ")
}

// fresh reports whether the fixture can be restored rather than loaded.
func (f *fixture) fresh() bool {
	return f != nil && len(f.tables) > 0 && time.Since(f.loadedAt) < fixtureMaxAge
}

// snapshotFixture copies every queue table of s, as loaded, beside it.
func snapshotFixture(t *testing.T, s server) {
	t.Helper()
	ctx := context.Background()
	db := s.drv.DB()
	tables := queueTables(t, s)
	for _, tb := range tables {
		for _, q := range []string{
			"DROP TABLE IF EXISTS " + tb.pristine(),
			fmt.Sprintf("CREATE TABLE %s AS SELECT %s FROM %s", tb.pristine(), tb.columnList(""), tb.name),
		} {
			_, err := db.ExecContext(ctx, q)
			require.NoError(t, err, q)
		}
	}
	var maxID sql.NullInt64
	require.NoError(t, db.QueryRowContext(ctx, "SELECT MAX(id) FROM lockstep_jobs").Scan(&maxID))
	*s.fixture = fixture{loadedAt: time.Now(), tables: tables, maxJobID: maxID.Int64}
}

// restoreFixture puts back what the last interleaving changed: the jobs
// that differ from their pristine copy or were inserted after it, and the
// whole of every other (small) queue table.
func restoreFixture(t *testing.T, s server) {
	t.Helper()
	ctx := context.Background()
	tx, err := s.drv.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	exec := func(q string, args ...any) {
		_, err := tx.ExecContext(ctx, q, args...)
		require.NoError(t, err, q)
	}
	if s.flavor == lockview.Postgres {
		// The queue's pool plans with sequential scans off (postgres.Open);
		// the copies have no index, and comparing them is a scan.
		exec("SET LOCAL enable_seqscan = on")
	}
	for _, tb := range s.fixture.tables {
		if tb.name != "lockstep_jobs" {
			exec("DELETE FROM " + tb.name)
			exec(fmt.Sprintf("INSERT INTO %s (%s) SELECT %[2]s FROM %s", tb.name, tb.columnList(""), tb.pristine()))
			if tb.name == "lockstep_processes" {
				// The process pairs tell a live process from a silent one
				// by its heartbeat's age in seconds: the restored rows are
				// as old as they were when loaded.
				age := time.Since(s.fixture.loadedAt).Microseconds()
				shift := fmt.Sprintf(" + INTERVAL %d MICROSECOND", age)
				if s.flavor == lockview.Postgres {
					shift = fmt.Sprintf(" + interval '%d microseconds'", age)
				}
				exec("UPDATE lockstep_processes SET heartbeat_at = heartbeat_at" + shift + ", started_at = started_at" + shift)
			}
			continue
		}
		changed := changedJobs(t, tx, s, tb)
		exec(fmt.Sprintf("DELETE FROM lockstep_jobs WHERE id > %d", s.fixture.maxJobID))
		if len(changed) == 0 {
			continue
		}
		ids := strings.Join(changed, ", ")
		exec("DELETE FROM lockstep_jobs WHERE id IN (" + ids + ")")
		exec(fmt.Sprintf("INSERT INTO lockstep_jobs (%s) SELECT %[1]s FROM %s WHERE id IN (%s)", tb.columnList(""), tb.pristine(), ids))
	}
	require.NoError(t, tx.Commit())
}

// changedJobs lists the ids of pristine jobs whose row is gone or differs
// in any column.
func changedJobs(t *testing.T, tx *sql.Tx, s server, tb fixtureTable) []string {
	t.Helper()
	differs := make([]string, len(tb.columns))
	for i, c := range tb.columns {
		if s.flavor == lockview.Postgres {
			// json has no equality; every column's text does.
			differs[i] = fmt.Sprintf("j.%s::text IS DISTINCT FROM p.%[1]s::text", c)
		} else {
			differs[i] = fmt.Sprintf("NOT (j.%s <=> p.%[1]s)", c)
		}
	}
	force := " FORCE INDEX (PRIMARY)"
	if s.flavor == lockview.Postgres {
		force = ""
	}
	q := fmt.Sprintf("SELECT p.id FROM %s p LEFT JOIN lockstep_jobs j%s ON j.id = p.id WHERE j.id IS NULL OR %s",
		tb.pristine(), force, strings.Join(differs, " OR "))
	rows, err := tx.QueryContext(context.Background(), q)
	require.NoError(t, err, q)
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, fmt.Sprint(id))
	}
	require.NoError(t, rows.Err())
	return ids
}

// queueTables lists the queue's tables (not the migrations' bookkeeping,
// not the pristine copies) and their writable columns, in table order.
func queueTables(t *testing.T, s server) []fixtureTable {
	t.Helper()
	q := `SELECT table_name, column_name FROM information_schema.columns
WHERE table_schema = DATABASE() AND COALESCE(generation_expression, '') = ''
ORDER BY table_name, ordinal_position`
	if s.flavor == lockview.Postgres {
		q = `SELECT table_name, column_name FROM information_schema.columns
WHERE table_schema = current_schema() AND is_generated = 'NEVER'
ORDER BY table_name, ordinal_position`
	}
	rows, err := s.drv.DB().QueryContext(context.Background(), q)
	require.NoError(t, err)
	defer rows.Close()
	var out []fixtureTable
	for rows.Next() {
		var table, column string
		require.NoError(t, rows.Scan(&table, &column))
		table, column = strings.ToLower(table), strings.ToLower(column)
		if !strings.HasPrefix(table, "lockstep_") || table == "lockstep_migrations" || strings.HasSuffix(table, "_pristine") {
			continue
		}
		if len(out) == 0 || out[len(out)-1].name != table {
			out = append(out, fixtureTable{name: table})
		}
		out[len(out)-1].columns = append(out[len(out)-1].columns, column)
	}
	require.NoError(t, rows.Err())
	require.NotEmpty(t, out)
	return out
}
