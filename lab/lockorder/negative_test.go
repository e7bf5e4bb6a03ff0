package lockorder_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/mysqlplan"
	"github.com/lockstep-queue/lockstep/lockdiag/locktest"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// The attempt table of the measured claim/cancel deadlock and its data: 1,000 attempts in 10 runs of 100,
// two PENDING per run (ids ending in 99 and 00), the rest DONE.
const attemptSchema = `CREATE TABLE attempt (
  id     BIGINT PRIMARY KEY,
  run_id BIGINT NOT NULL,
  status VARCHAR(16) NOT NULL,
  KEY idx_run (run_id),
  KEY idx_status (status)
) ENGINE=InnoDB`

func loadAttemptTable(t *testing.T, db *sql.DB) {
	t.Helper()
	for _, q := range []string{
		"DROP TABLE IF EXISTS attempt",
		attemptSchema,
		`INSERT INTO attempt (id, run_id, status)
		 SELECT n, (n - 1) DIV 100 + 1, IF(n % 100 IN (99, 0), 'PENDING', 'DONE')
		 FROM (SELECT a.d + 10 * b.d + 100 * c.d + 1 AS n FROM
		   (SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) a,
		   (SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) b,
		   (SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) c) nums`,
		"ANALYZE TABLE attempt",
	} {
		rows, err := db.Query(q)
		require.NoError(t, err, q)
		require.NoError(t, rows.Close())
	}
}

// requireKey asserts the precondition of a control: the plan the optimizer
// picks for the statement on this data. The plan is read through
// internal/mysqlplan, which asks the server what it is: a bare EXPLAIN on
// MySQL 9.x prints a TREE, with no key column.
func requireKey(t *testing.T, db *sql.DB, query string, want string) {
	t.Helper()
	ctx := context.Background()
	srv, err := mysqlplan.Detect(ctx, db)
	require.NoError(t, err)
	plan, err := srv.Explain(ctx, db, query)
	require.NoError(t, err)
	require.Equal(t, want, plan.Rows[0].Key, "plan of %s", query)
}

// attemptSessionA is the measured timeline's session A: hold PRIMARY 300 with a locking
// read (the same lock the following UPDATE takes first, taken early to
// widen the gap between its two locks), pause, then run then.
func attemptSessionA(db *sql.DB, level sql.IsolationLevel, then string) locktest.SessionA {
	return func(ctx context.Context, pause func()) error {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: level})
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		var id int64
		if err := tx.QueryRowContext(ctx, "SELECT id FROM attempt FORCE INDEX (PRIMARY) WHERE id = 300 FOR UPDATE").Scan(&id); err != nil {
			return err
		}
		pause()
		if _, err := tx.ExecContext(ctx, then); err != nil {
			return err
		}
		return tx.Commit()
	}
}

func attemptSessionB(db *sql.DB, level sql.IsolationLevel, stmts ...string) locktest.SessionB {
	return func(ctx context.Context) error {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: level})
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		for _, q := range stmts {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return tx.Commit()
	}
}

const (
	claimUnhinted = "UPDATE attempt SET status = 'RUNNING' WHERE id = 300 AND status = 'PENDING'"
	claimPrimary  = "UPDATE attempt FORCE INDEX (PRIMARY) SET status = 'RUNNING' WHERE id = 300 AND status = 'PENDING'"
	cancelRange   = "UPDATE attempt SET status = 'CANCELLED' WHERE run_id = 3 AND status IN ('PENDING', 'RUNNING')"
	cancelRowByPK = "UPDATE attempt FORCE INDEX (PRIMARY) SET status = 'CANCELLED' WHERE id = %d AND status IN ('PENDING', 'RUNNING')"
)

// TestNegativeControls: the harness that passes every writer pair must see
// error 1213 when the claim/cancel deadlock's unsafe statements are put back — or it
// could not see a deadlock at all. Each control is paired with its fixed
// twin, run by the same harness on the same data.
func TestNegativeControls(t *testing.T) {
	s := servers(t)[0]
	require.Equal(t, "MariaDB", s.name)
	db := s.drv.DB()
	byPK := []string{fmt.Sprintf(cancelRowByPK, 299), fmt.Sprintf(cancelRowByPK, 300)}
	cases := []struct {
		name     string
		a        string   // session A's statement after it holds PRIMARY 300
		b        []string // session B
		explain  string   // the statement whose plan is the precondition
		key      string
		deadlock bool
	}{
		{"cancel as one range UPDATE through idx_status (as measured) × claim by PRIMARY", claimPrimary, []string{cancelRange}, cancelRange, "idx_status", true},
		{"fixed: cancel by PRIMARY in id order × claim by PRIMARY", claimPrimary, byPK, claimPrimary, "PRIMARY", false},
		{"claim left unhinted (finds 300 through idx_status) × cancel by PRIMARY", fmt.Sprintf(cancelRowByPK, 300), []string{claimUnhinted}, claimUnhinted, "idx_status", true},
		{"fixed: claim FORCE INDEX (PRIMARY) × cancel by PRIMARY", fmt.Sprintf(cancelRowByPK, 300), []string{claimPrimary}, claimPrimary, "PRIMARY", false},
	}
	for _, level := range []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s", level, c.name), func(t *testing.T) {
				loadAttemptTable(t, db)
				requireKey(t, db, c.explain, c.key)
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				out, err := locktest.Interleave(ctx, s.observer.DB(), s.flavor, attemptSessionA(db, level, c.a), attemptSessionB(db, level, c.b...))
				require.NoError(t, err)
				require.True(t, out.BWaited, "B must be seen waiting for A's PRIMARY 300")
				for _, w := range out.Waits {
					t.Logf("seen: %s", w)
				}
				kinds := []rowtype.ErrorKind{s.drv.ClassifyError(out.ErrA), s.drv.ClassifyError(out.ErrB)}
				if c.deadlock {
					require.Contains(t, kinds, rowtype.ErrorDeadlock, "expected error 1213; A: %v, B: %v", out.ErrA, out.ErrB)
					t.Logf("1213 as expected: A: %v; B: %v", out.ErrA, out.ErrB)
					return
				}
				require.NoError(t, out.ErrA)
				require.NoError(t, out.ErrB)
			})
		}
	}
}
