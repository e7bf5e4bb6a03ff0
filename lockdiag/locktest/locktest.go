package locktest

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-queue/lockstep/internal/mysqlplan"
	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
)

// Hold opens a transaction on db and locks rows with query (a locking read
// such as "SELECT id FROM t WHERE id = ? FOR UPDATE"); the locks are held
// until the returned release is called (it rolls back) or the test ends.
func Hold(t testing.TB, db *sql.DB, query string, args ...any) (release func()) {
	t.Helper()
	tx, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatalf("locktest: hold: begin: %v", err)
	}
	rows, err := tx.Query(query, args...)
	if err != nil {
		_ = tx.Rollback()
		t.Fatalf("locktest: hold: %s: %v", query, err)
	}
	for rows.Next() {
	}
	if err := rows.Close(); err != nil {
		_ = tx.Rollback()
		t.Fatalf("locktest: hold: %s: %v", query, err)
	}
	done := false
	release = func() {
		if !done {
			done = true
			_ = tx.Rollback()
		}
	}
	t.Cleanup(release)
	return release
}

// WaitForLockWait blocks until some session of db's database is seen
// waiting for a lock, and returns the waits; it fails the test after
// timeout. flavor is detected when empty.
func WaitForLockWait(t testing.TB, db *sql.DB, flavor lockview.Flavor, timeout time.Duration) []lockview.Wait {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if flavor == "" {
		f, err := lockview.Detect(ctx, db)
		if err != nil {
			t.Fatalf("locktest: %v", err)
		}
		flavor = f
	}
	waits, err := lockview.WaitFor(ctx, db, flavor, nil, nil)
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	return waits
}

// RequirePlan fails the test unless the server plans query (with args)
// through wantIndex: the precondition a lock-order test depends on, since
// the index a statement finds rows through decides the order it locks
// them in. On MySQL/MariaDB it reads the key column of the classic
// EXPLAIN table (EXPLAIN FORMAT=TRADITIONAL on MySQL); on PostgreSQL the
// index names in EXPLAIN's plan.
func RequirePlan(t testing.TB, db *sql.DB, query string, args []any, wantIndex string) {
	t.Helper()
	ctx := context.Background()
	f, err := lockview.Detect(ctx, db)
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	got, err := planIndexes(ctx, db, f, query, args)
	if err != nil {
		t.Fatalf("locktest: explain %s: %v", query, err)
	}
	for _, ix := range got {
		if ix == wantIndex {
			return
		}
	}
	t.Fatalf("locktest: %s is planned through %v, not %s", query, got, wantIndex)
}

func planIndexes(ctx context.Context, db *sql.DB, f lockview.Flavor, query string, args []any) ([]string, error) {
	if f == lockview.Postgres {
		rows, err := db.QueryContext(ctx, "EXPLAIN "+query, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				return nil, err
			}
			if i := strings.Index(line, " using "); i >= 0 {
				name := strings.Fields(line[i+len(" using "):])[0]
				out = append(out, name)
			}
		}
		return out, rows.Err()
	}
	// MySQL 9.x prints a bare EXPLAIN as a TREE, with no key column to
	// read; mysqlplan asks each server for its classic table.
	srv, err := mysqlplan.Detect(ctx, db)
	if err != nil {
		return nil, err
	}
	plan, err := srv.Explain(ctx, db, query, args...)
	if err != nil {
		return nil, err
	}
	out := plan.Keys()
	if len(out) == 0 {
		return nil, fmt.Errorf("no index in the plan (a full scan): %s", strings.ReplaceAll(plan.Raw, "\n", "; "))
	}
	return out, nil
}

// RegressionTest is the deterministic lock-order regression test in one
// call: a runs until it pauses holding its locks, b is seen waiting (or
// finishes), a goes on, and the test fails if either returns an error —
// a deadlock among them.
func RegressionTest(t testing.TB, db *sql.DB, a SessionA, b SessionB) Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, err := lockview.Detect(ctx, db)
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	out, err := Interleave(ctx, db, f, a, b)
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	if out.ErrA != nil || out.ErrB != nil {
		t.Fatalf("locktest: the interleaving failed: A: %v; B: %v", out.ErrA, out.ErrB)
	}
	return out
}
