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

// planKey is the index the server plans query through: EXPLAIN's key
// column, read through internal/mysqlplan, which asks the server what it
// is (a bare EXPLAIN on MySQL 9.x prints a TREE, with no key column).
func planKey(t *testing.T, s server, query string) string {
	t.Helper()
	ctx := context.Background()
	srv, err := mysqlplan.Detect(ctx, s.drv.DB())
	require.NoError(t, err)
	plan, err := srv.Explain(ctx, s.drv.DB(), query)
	require.NoError(t, err)
	require.NotEmpty(t, plan.Rows)
	return plan.Rows[0].Key
}

// requireKey asserts the precondition of a control: the plan the optimizer
// picks for the statement on this data.
func requireKey(t *testing.T, s server, query string, want string) {
	t.Helper()
	require.Equal(t, want, planKey(t, s, query), "plan of %s", query)
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
	claimStatus   = "UPDATE attempt FORCE INDEX (idx_status) SET status = 'RUNNING' WHERE id = 300 AND status = 'PENDING'"
	cancelRange   = "UPDATE attempt SET status = 'CANCELLED' WHERE run_id = 3 AND status IN ('PENDING', 'RUNNING')"
	cancelRowByPK = "UPDATE attempt FORCE INDEX (PRIMARY) SET status = 'CANCELLED' WHERE id = %d AND status IN ('PENDING', 'RUNNING')"
)

// TestNegativeControls: the harness that passes every writer pair must see
// error 1213 when the claim/cancel deadlock's unsafe statements are put back — or it
// could not see a deadlock at all. Each control is paired with its fixed
// twin, run by the same harness on the same data, on MariaDB and Oracle
// MySQL, at READ COMMITTED and REPEATABLE READ.
func TestNegativeControls(t *testing.T) {
	byPK := []string{fmt.Sprintf(cancelRowByPK, 299), fmt.Sprintf(cancelRowByPK, 300)}
	cases := []struct {
		name    string
		a       string   // session A's statement after it holds PRIMARY 300
		b       []string // session B
		explain string   // the statement whose plan is the precondition
		// deadlock maps the plans the precondition admits (EXPLAIN's key of
		// explain) to whether the interleaving must end in 1213.
		deadlock map[string]bool
	}{
		{"cancel as one range UPDATE through idx_status (as measured) × claim by PRIMARY", claimPrimary, []string{cancelRange}, cancelRange,
			map[string]bool{"idx_status": true}},
		{"fixed: cancel by PRIMARY in id order × claim by PRIMARY", claimPrimary, byPK, claimPrimary,
			map[string]bool{"PRIMARY": false}},
		// The claim as written: MariaDB finds 300 through idx_status,
		// (status, id) with extended keys, and deadlocks; a server that plans
		// it through PRIMARY runs the fixed claim below.
		{"claim left unhinted × cancel by PRIMARY", fmt.Sprintf(cancelRowByPK, 300), []string{claimUnhinted}, claimUnhinted,
			map[string]bool{"idx_status": true, "PRIMARY": false}},
		// The unsafe claim, on every server.
		{"claim FORCE INDEX (idx_status) × cancel by PRIMARY", fmt.Sprintf(cancelRowByPK, 300), []string{claimStatus}, claimStatus,
			map[string]bool{"idx_status": true}},
		{"fixed: claim FORCE INDEX (PRIMARY) × cancel by PRIMARY", fmt.Sprintf(cancelRowByPK, 300), []string{claimPrimary}, claimPrimary,
			map[string]bool{"PRIMARY": false}},
	}
	for _, s := range innodb(t) {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			db := s.drv.DB()
			for _, level := range []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead} {
				for _, c := range cases {
					t.Run(fmt.Sprintf("%s/%s", level, c.name), func(t *testing.T) {
						loadAttemptTable(t, db)
						key := planKey(t, s, c.explain)
						deadlock, admitted := c.deadlock[key]
						require.True(t, admitted, "%s is planned through %q, which this control does not expect", c.explain, key)
						t.Logf("%s: planned through %s", c.explain, key)
						ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
						defer cancel()
						out, err := locktest.Interleave(ctx, s.observer.DB(), s.flavor, attemptSessionA(db, level, c.a), attemptSessionB(db, level, c.b...))
						require.NoError(t, err)
						require.True(t, out.BWaited, "B must be seen waiting for A's PRIMARY 300")
						for _, w := range out.Waits {
							t.Logf("seen: %s", w)
						}
						kinds := []rowtype.ErrorKind{s.drv.ClassifyError(out.ErrA), s.drv.ClassifyError(out.ErrB)}
						if deadlock {
							require.Contains(t, kinds, rowtype.ErrorDeadlock, "expected error 1213; A: %v, B: %v", out.ErrA, out.ErrB)
							t.Logf("1213 as expected: A: %v; B: %v", out.ErrA, out.ErrB)
							return
						}
						require.NoError(t, out.ErrA)
						require.NoError(t, out.ErrB)
					})
				}
			}
		})
	}
}
