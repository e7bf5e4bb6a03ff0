package lockorder_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/lockdiag/locktest"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// The classic semaphore design of a concurrency limit on InnoDB, as Solid
// Queue ships it: a semaphores table with a row per concurrency key whose
// value counts the free slots, next to the jobs. Two ways it deadlocks:
//
//  1. the S→X upgrade: a claim reads the semaphore row in share mode to
//     decide, then updates it. Two claims of one key both get the S lock;
//     each UPDATE then needs X, which the other's S lock refuses.
//  2. opposite orders: a claim locks the job it takes and then the
//     semaphore (to decrement it); a release increments the semaphore and
//     then unblocks that key's next job. The claim holds the job and waits
//     for the semaphore; the release holds the semaphore and waits for
//     the job.
//
// lockstep has no counter: a key's slots are counted from its jobs, so
// nothing is read and then upgraded, and its key row is taken FOR UPDATE
// outright — SKIP LOCKED by a claim, which never waits for it, and first
// by a release, which waits for it holding nothing.
const (
	semaphoresSchema = `CREATE TABLE sq_semaphores (
  id         BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
  ` + "`key`" + `      VARCHAR(255) NOT NULL,
  value      INT          NOT NULL DEFAULT 1,
  expires_at DATETIME(6)  NOT NULL,
  UNIQUE KEY index_sq_semaphores_on_key (` + "`key`" + `)
) ENGINE=InnoDB`
	semaphoreJobsSchema = `CREATE TABLE sq_jobs (
  id              BIGINT       NOT NULL PRIMARY KEY,
  concurrency_key VARCHAR(255) NULL,
  status          VARCHAR(16)  NOT NULL,
  KEY index_sq_jobs_on_concurrency_key (concurrency_key, status)
) ENGINE=InnoDB`
)

func loadSemaphoreTables(t *testing.T, db *sql.DB) {
	t.Helper()
	for _, q := range []string{
		"DROP TABLE IF EXISTS sq_semaphores",
		"DROP TABLE IF EXISTS sq_jobs",
		semaphoresSchema,
		semaphoreJobsSchema,
		// One slot of key k, taken by job 1 while it ran; job 2 is BLOCKED
		// behind it.
		"INSERT INTO sq_semaphores (`key`, value, expires_at) VALUES ('k', 1, UTC_TIMESTAMP(6) + INTERVAL 1 HOUR), ('other', 1, UTC_TIMESTAMP(6) + INTERVAL 1 HOUR)",
		"INSERT INTO sq_jobs (id, concurrency_key, status) VALUES (1, 'k', 'BLOCKED'), (2, 'k', 'BLOCKED'), (3, 'other', 'PENDING')",
	} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
}

// semaphoreSession runs stmts in one transaction at level, pausing (A
// only) before stmts[pauseBefore].
func semaphoreSession(db *sql.DB, level sql.IsolationLevel, pauseBefore int, stmts ...string) locktest.SessionA {
	return func(ctx context.Context, pause func()) error {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: level})
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		for i, q := range stmts {
			if i == pauseBefore {
				pause()
			}
			rows, err := tx.QueryContext(ctx, q)
			if err != nil {
				return err
			}
			for rows.Next() {
			}
			if err := rows.Close(); err != nil {
				return err
			}
		}
		return tx.Commit()
	}
}

const (
	semaphoreShare     = "SELECT value FROM sq_semaphores WHERE `key` = 'k' LOCK IN SHARE MODE"
	semaphoreDecrement = "UPDATE sq_semaphores SET value = value - 1 WHERE `key` = 'k' AND value > 0"
	semaphoreIncrement = "UPDATE sq_semaphores SET value = value + 1 WHERE `key` = 'k'"
	semaphoreLockJob   = "SELECT id FROM sq_jobs FORCE INDEX (PRIMARY) WHERE id = 2 FOR UPDATE"
	semaphoreClaimJob  = "UPDATE sq_jobs FORCE INDEX (PRIMARY) SET status = 'RUNNING' WHERE id = 2"
	semaphoreUnblock   = "UPDATE sq_jobs FORCE INDEX (PRIMARY) SET status = 'PENDING' WHERE id = 2 AND status = 'BLOCKED'"
)

// TestSemaphoreNegativeControl: the harness that passes every writer pair
// of limited queues sees error 1213 when the semaphore design is put in
// their place, on MariaDB and Oracle MySQL, at READ COMMITTED (the
// queue's) and REPEATABLE READ. Session A pauses between its two locks;
// B runs and is seen waiting; A continues into the cycle.
func TestSemaphoreNegativeControl(t *testing.T) {
	cases := []struct {
		name string
		a    []string // A pauses before a[1]
		b    []string
	}{
		{"S→X upgrade: two claims read the semaphore in share mode, then decrement it",
			[]string{semaphoreShare, semaphoreDecrement, semaphoreClaimJob},
			[]string{semaphoreShare, semaphoreDecrement}},
		{"opposite orders: a claim locks its job then the semaphore; a release the semaphore then the job",
			[]string{semaphoreLockJob, semaphoreDecrement, semaphoreClaimJob},
			[]string{semaphoreIncrement, semaphoreUnblock}},
	}
	for _, s := range innodb(t) {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			db := s.drv.DB()
			for _, level := range []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead} {
				for _, c := range cases {
					t.Run(fmt.Sprintf("%s/%s", level, c.name), func(t *testing.T) {
						loadSemaphoreTables(t, db)
						ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
						defer cancel()
						b := semaphoreSession(db, level, -1, c.b...)
						out, err := locktest.Interleave(ctx, s.observer.DB(), s.flavor, semaphoreSession(db, level, 1, c.a...),
							func(ctx context.Context) error { return b(ctx, func() {}) })
						require.NoError(t, err)
						require.True(t, out.BWaited, "B must be seen waiting for the lock A holds")
						for _, w := range out.Waits {
							t.Logf("seen: %s", w)
						}
						kinds := []rowtype.ErrorKind{s.drv.ClassifyError(out.ErrA), s.drv.ClassifyError(out.ErrB)}
						require.Contains(t, kinds, rowtype.ErrorDeadlock, "expected error 1213; A: %v, B: %v", out.ErrA, out.ErrB)
						t.Logf("1213 as expected: A: %v; B: %v", out.ErrA, out.ErrB)
					})
				}
			}
		})
	}
}

// TestSemaphoreControlFixedTwins: lockstep's own limited claim and release
// through the same interleavings, paused by the statement trace at the
// same place — A holding its first locks, B running into them, A going
// on. No deadlock, on MariaDB and Oracle MySQL:
//
//   - two claims of one key: the claim takes the key's row FOR UPDATE
//     SKIP LOCKED, never in share mode, so there is nothing to upgrade; a
//     second claim skips the key (per-key limits only) or waits for the
//     queue's row, holding nothing (a global limit);
//   - a claim and a release of one key: the claim holds its jobs and the
//     key's row; the release waits for the key's row holding nothing (the
//     write that freed the slot committed before); a release that holds
//     the key's row and the job it unblocks is skipped by the claim.
func TestSemaphoreControlFixedTwins(t *testing.T) {
	cases := []struct {
		name   string
		a, b   op
		at     point
		bWaits bool
	}{
		{"two claims of key e (per-key limit), A holding its jobs and e's row", keyedClaim, keyedClaim, point{name: "limit.key_running", k: 1}, false},
		{"two claims of key a (global limit), A holding the queue's row, its jobs and a's row", limitedClaim, limitedClaim, point{name: "limit.key_running", k: 1}, true},
		{"claim holding its jobs and a's row × finish of a's RUNNING job and its release", limitedClaim, finishKeyed(rowtype.StatusDone, false), point{name: "limit.key_running", k: 1}, true},
		{"claim about to write its jobs × finish and release", limitedClaim, finishKeyed(rowtype.StatusDone, false), point{name: "job.claim_ids", k: 1}, true},
		{"release holding a's row × claim", finishKeyed(rowtype.StatusDone, false), limitedClaim, point{name: "limit.key_running", k: 1}, false},
		{"release holding a's row and the job it unblocks × claim", finishKeyed(rowtype.StatusDone, false), limitedClaim, point{name: driver.TraceCommit, k: 1, end: true}, false},
	}
	for _, s := range innodb(t) {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					loadAlmostDone(t, s)
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					defer cancel()
					out, err := locktest.Interleave(ctx, s.observer.DB(), s.flavor, sessionA(s, c.a, c.at), func(ctx context.Context) error {
						return c.b.run(ctx, s.drv.Executor())
					})
					require.NoError(t, err)
					for _, w := range out.Waits {
						t.Logf("seen: %s", w)
					}
					require.NoError(t, out.ErrA, "A: %s", c.a.name)
					require.NoError(t, out.ErrB, "B: %s", c.b.name)
					require.Equal(t, c.bWaits, out.BWaited, "did B (%s) wait for A (%s)? waits seen: %v", c.b.name, c.a.name, out.Waits)
					limitsHold(t, s)
				})
			}
		})
	}
}

// The rate window's prune as the catalogue declares it (rate.prune: a
// single-table DELETE through the starts table's primary key, which
// takes no index hint) and as the plan guard found MariaDB and Oracle
// MySQL planning it on some distributions: a full scan. Here it is
// forced both ways, written so that each server takes its own words
// (MySQL the optimizer hint, MariaDB the /*M! … */ multi-table form with
// an index hint), on the lockstep schema.
const (
	pruneFullScan = "DELETE /*+ NO_INDEX(lockstep_limit_starts PRIMARY) */ /*M! lockstep_limit_starts */ FROM lockstep_limit_starts /*M! IGNORE INDEX (PRIMARY) */" +
		" WHERE queue = 'keyed' AND started_at <= %s AND limit_key IN ('%s')"
	prunePrimary = "DELETE /*+ INDEX(lockstep_limit_starts PRIMARY) */ /*M! lockstep_limit_starts */ FROM lockstep_limit_starts /*M! FORCE INDEX (PRIMARY) */" +
		" WHERE queue = 'keyed' AND started_at <= %s AND limit_key IN ('%s')"
	startInsert = "INSERT INTO lockstep_limit_starts (queue, limit_key, started_at, job_id) VALUES ('keyed', '%s', UTC_TIMESTAMP(6), %d)"
)

// TestRatePruneFullScan: two claims of one queue with per-key rate limits
// and no queue-wide lock, on different keys (e and j), each record its
// start and then prune its key's window — the end of every such claim
// (rate.insert, rate.prune). Through the primary key each prune reads its
// own key's range only, and neither waits. Through a full scan it reads
// (and must lock) the other claim's uncommitted start too: B waits for A's
// start, A then for B's — error 1213, on MariaDB and Oracle MySQL, at READ
// COMMITTED and REPEATABLE READ. The catalogue's prune must therefore be
// held to its primary key on every server, whatever the table's
// statistics: the plan guard's probe of rate.prune is what checks it.
func TestRatePruneFullScan(t *testing.T) {
	const since = "UTC_TIMESTAMP(6) - INTERVAL 1 HOUR"
	cases := []struct {
		name, prune, plan string
		deadlock          bool
	}{
		{"full scan", pruneFullScan, "", true},
		{"through PRIMARY", prunePrimary, "PRIMARY", false},
	}
	for _, s := range innodb(t) {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			db := s.drv.DB()
			for _, level := range []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead} {
				for _, c := range cases {
					t.Run(fmt.Sprintf("%s/%s", level, c.name), func(t *testing.T) {
						loadAlmostDone(t, s)
						requireKey(t, s, fmt.Sprintf(c.prune, since, "e"), c.plan)
						a := semaphoreSession(db, level, 1, fmt.Sprintf(startInsert, "e", 9001), fmt.Sprintf(c.prune, since, "e"))
						b := semaphoreSession(db, level, -1, fmt.Sprintf(startInsert, "j", 9002), fmt.Sprintf(c.prune, since, "j"))
						ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
						defer cancel()
						out, err := locktest.Interleave(ctx, s.observer.DB(), s.flavor, a, func(ctx context.Context) error { return b(ctx, func() {}) })
						require.NoError(t, err)
						for _, w := range out.Waits {
							t.Logf("seen: %s", w)
						}
						if c.deadlock {
							require.True(t, out.BWaited, "B's prune must be seen waiting for A's start")
							kinds := []rowtype.ErrorKind{s.drv.ClassifyError(out.ErrA), s.drv.ClassifyError(out.ErrB)}
							require.Contains(t, kinds, rowtype.ErrorDeadlock, "expected error 1213; A: %v, B: %v", out.ErrA, out.ErrB)
							t.Logf("1213 as expected: A: %v; B: %v", out.ErrA, out.ErrB)
							return
						}
						require.False(t, out.BWaited, "a prune through PRIMARY reads only its own key's starts")
						require.NoError(t, out.ErrA)
						require.NoError(t, out.ErrB)
					})
				}
			}
		})
	}
}
