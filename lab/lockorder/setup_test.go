package lockorder_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/drivertest"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/lab/planguard"
	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
	"github.com/lockstep-queue/lockstep/migrate"
	"github.com/lockstep-queue/lockstep/rowtype"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// server is one database under test: the driver the sessions use and a
// separate pool that watches the lock tables.
type server struct {
	name     string
	drv      driver.Driver
	flavor   lockview.Flavor
	observer driver.Driver
	// fixture is the almost-done distribution last loaded here, shared
	// by every copy of the server.
	fixture *fixture
}

// serverSpec is a server to open: its DSN, its driver, and the flavor its
// lock tables must be read as.
type serverSpec struct {
	name string
	dsn  func(testing.TB) string
	open func(context.Context, string) (driver.Driver, error)
	want lockview.Flavor
}

func openMySQL(ctx context.Context, dsn string) (driver.Driver, error) { return mysql.Open(ctx, dsn) }
func openPostgres(ctx context.Context, dsn string) (driver.Driver, error) {
	return postgres.Open(ctx, dsn)
}

func serverSpecs() []serverSpec {
	return []serverSpec{
		{"MariaDB", testdb.MySQL, openMySQL, lockview.MariaDB},
		{"OracleMySQL", testdb.OracleMySQL, openMySQL, lockview.MySQL},
		{"PostgreSQL", testdb.Postgres, openPostgres, lockview.Postgres},
	}
}

// servers opens MariaDB, Oracle MySQL and PostgreSQL, migrated.
func servers(t *testing.T) []server {
	var out []server
	for _, c := range serverSpecs() {
		out = append(out, openServer(t, c))
	}
	return out
}

// innodb opens the servers whose row locks are InnoDB's: MariaDB and
// Oracle MySQL.
func innodb(t *testing.T) []server {
	var out []server
	for _, c := range serverSpecs() {
		if c.want != lockview.Postgres {
			out = append(out, openServer(t, c))
		}
	}
	return out
}

// openServer opens c's driver and observer on a fresh database, and asks
// the server what it is.
func openServer(t *testing.T, c serverSpec) server {
	ctx := context.Background()
	dsn := c.dsn(t)
	drv, err := c.open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	obs, err := c.open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = obs.Close() })
	flavor, err := lockview.Detect(ctx, obs.DB())
	require.NoError(t, err)
	require.Equal(t, c.want, flavor, c.name)
	drivertest.Migrate(t, drv)
	if os.Getenv("LOCKSTEP_LOCKORDER_TEXT_INDEX") != "" {
		// The pairs again with the job search's optional text index:
		// InnoDB's FULLTEXT adds a hidden column and a unique index that
		// every insert and delete writes (docs/lock-order.md).
		require.NoError(t, migrate.TextIndex(ctx, drv, true))
	}
	return server{name: c.name, drv: drv, flavor: flavor, observer: obs, fixture: &fixture{}}
}

// loadAlmostDone loads the dangerous distribution of the claim/cancel deadlock — runs of
// 1,000 jobs with 2 PENDING each — and asserts the precondition every
// interleaving depends on: each statement is planned as declared on it.
// Without that check a passing interleaving would protect nothing.
//
// A fixture loaded less than fixtureMaxAge ago is restored instead: the
// rows the last interleaving changed go back to their loaded state.
func loadAlmostDone(t *testing.T, s server) {
	t.Helper()
	if s.fixture.fresh() {
		restoreFixture(t, s)
		return
	}
	ctx := context.Background()
	require.NoError(t, planguard.Load(ctx, s.drv, planguard.AlmostDone()))
	rep, err := planguard.Check(ctx, s.drv, planguard.Options{})
	require.NoError(t, err)
	require.Empty(t, rep.FailureLines(), "the plans the interleavings rely on")
	if s.flavor != lockview.Postgres {
		// And the data is the dangerous kind: the range cancel, written as
		// one range UPDATE on these tables, would be planned through the
		// status-led index here — the order the catalogue's hints prevent.
		// MariaDB and MySQL both pick it.
		requireKey(t, s, "UPDATE lockstep_jobs SET status = 'CANCELLED' WHERE run_id = 1 AND status IN ('PENDING', 'RUNNING')", "lockstep_jobs_heartbeat")
	}
	loadWorkflow(t, s)
	loadLimited(t, s)
	loadHistory(t, s)
	snapshotFixture(t, s)
}

// historyOld is the minute of the history rows the flush and retention
// pairs meet on: older than any retention, newer than nothing else.
var historyOld = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// loadHistory writes the two rows both flushes add to, committed, so a
// flush's upsert and retention's delete both lock them.
func loadHistory(t *testing.T, s server) {
	t.Helper()
	require.NoError(t, s.drv.Executor().HistoryAdd(context.Background(), historyRows(false)))
}

// historyRows are two rows of one minute, in key order or reversed: a
// client hands its rows to the flush in any order.
func historyRows(reversed bool) []rowtype.HistoryRow {
	rows := []rowtype.HistoryRow{
		{Bucket: historyOld, Queue: "hist", Kind: "a", Done: 1, RunMillis: 5},
		{Bucket: historyOld, Queue: "hist", Kind: "b", Failed: 1, RunMillis: 7},
	}
	if reversed {
		rows[0], rows[1] = rows[1], rows[0]
	}
	return rows
}

// The workflow in run 3 of the almost-done distribution: two RUNNING jobs
// the fan-in job waits for, and a FAILED job whose failure cancelled its
// dependent — as InsertRun and the finishes would have left them, with
// each dependent's id above its dependencies'.
const (
	flowRunA, flowRunB = int64(2997), int64(2998) // RUNNING, attempt 1
	flowJoin           = int64(3000)              // WAITING on both
	flowFailed         = int64(2995)              // FAILED
	flowBlocked        = int64(2996)              // CANCELLED by 2995's failure
	runOfFlow          = int64(3)
)

// loadWorkflow writes that workflow over run 3's rows. The two RUNNING
// jobs have a fresh heartbeat, so the reaper leaves them alone.
func loadWorkflow(t *testing.T, s server) {
	t.Helper()
	now := "UTC_TIMESTAMP(6)"
	if s.flavor == lockview.Postgres {
		now = "now()"
	}
	for _, q := range []string{
		"UPDATE lockstep_jobs SET status = 'RUNNING', attempts = 1, started_at = " + now + ", heartbeat_at = " + now + ", finished_at = NULL, dependents = 1 WHERE id IN (2997, 2998)",
		"UPDATE lockstep_jobs SET status = 'WAITING', attempts = 0, started_at = NULL, heartbeat_at = NULL, finished_at = NULL, waiting_on = 2 WHERE id = 3000",
		"UPDATE lockstep_jobs SET status = 'FAILED', attempts = 1, dependents = 1, last_error = 'boom' WHERE id = 2995",
		"UPDATE lockstep_jobs SET status = 'CANCELLED', attempts = 0, waiting_on = 1, blocked_by = 2995, last_error = 'dependency 2995 ended FAILED' WHERE id = 2996",
		"INSERT INTO lockstep_job_deps (job_id, depends_on) VALUES (3000, 2997), (3000, 2998), (2996, 2995)",
	} {
		_, err := s.drv.DB().ExecContext(context.Background(), q)
		require.NoError(t, err, q)
	}
}

// The almost-done distribution's rows the interleavings use: run 1's two
// PENDING jobs and run 6's RUNNING job (attempt 1, heartbeat an hour old).
const (
	pendingA, pendingB = int64(999), int64(1000)
	runOfPending       = int64(1)
	running            = int64(5500)
	runOfRunning       = int64(6)
	failedInRun        = int64(2) // FAILED, in run 1
)

func status(t *testing.T, s server, id int64) rowtype.JobStatus {
	t.Helper()
	j, err := s.drv.Executor().JobGet(context.Background(), id)
	require.NoError(t, err)
	return j.Status
}

// The limited queues, over rows of runs 8, 9 and 10 of the almost-done
// distribution (the runs' own PENDING, WAITING and keyed jobs stay in the
// queue "default").
//
// Queue "limited": at most 4 jobs at once, 1 per key, 2 starts per key an
// hour. A claim of it locks the queue's row first. Its jobs, all in run 8:
//
//	7101 RUNNING key a (attempt 1, heartbeat an hour old: the reaper's)
//	7102 PENDING key a   — a claim blocks it: a is at its limit
//	7103 BLOCKED key a   — a release of a makes it PENDING
//	7104 PENDING key b   — claimed; b has one start in the hour, one older
//	7105 PENDING no key  — claimed
//	7106 PENDING key c   — deferred: c has two starts in the hour
//	7107 CANCELLED key d while RUNNING (attempt 1, finished_at unset, a
//	     fresh heartbeat: its worker has not said it stopped)
//	7108 BLOCKED key d   — released by 7107's release, or by a claim's
//	7109 PENDING key d   — a claim blocks it: 7107 still holds d's slot
//
// A claim of 4 there finds 2 slots (7101, 7107 hold the others), locks
// a, b, c, d, claims 7104 and 7105, blocks 7102 and 7109, defers 7106,
// records 7104's start and prunes b's old one; after its commit it
// releases d (whose release does not count 7107), unblocking 7108.
//
// Queue "keyed": 1 per key, 5 starts per key an hour, no queue-wide
// limit, so two of its claims run side by side. Run 9's 8101–8112 are
// PENDING with keys e e f f g g h h i z j e: a claim of 1 locks the first
// ten (n = 2·1 + 8) and keys e–i (z has no row yet: the claim creates it
// after its commit), claims 8101 and blocks 8102; a second claim meanwhile
// finds 8111 (j) and 8112 (e, whose row the first holds).
//
// Queue "sequenced": each key's jobs one at a time in id order, a FAILED
// job holding its sequence (SequenceHold), no other limit, so its claims
// take no queue row and run side by side. Its jobs, all in run 10:
//
//	9101 RUNNING key s1 (attempt 1, heartbeat an hour old: the reaper's)
//	9102 PENDING key s1  — a claim blocks it: 9101 runs
//	9103 BLOCKED key s1  — not the head of s1 while 9102 is live
//	9104 FAILED  key s2  — holds s2 (SequenceHold)
//	9105 PENDING key s2  — a claim blocks it: behind 9104
//	9106 PENDING key s3  — claimed: the head of s3
//	9107 PENDING key s3  — a claim blocks it: behind 9106, just taken
//	9108 PENDING no key  — claimed
//	9109 CANCELLED key s4 while RUNNING (attempt 1, finished_at unset, a
//	     fresh heartbeat: its worker has not said it stopped)
//	9110 BLOCKED key s4  — the head of s4: released by 9109's release, or
//	     by a claim's
//	9111 PENDING key s4  — a claim blocks it: 9109 still holds s4's slot
//
// A claim of 4 there locks s1–s4 (limit.sequence_head: s1's head is 9101,
// s2's the FAILED 9104, s3's 9106, s4's 9110), claims 9106 and 9108 and
// blocks 9102, 9105, 9107 and 9111; after its commit it releases s2 (whose
// head is FAILED: nothing) and s4, unblocking 9110. The release after a
// DONE of 9101 finds s1's first BLOCKED job (9103, or 9102 once a claim
// blocked it) and unblocks it only if it is s1's head.
//
// Queue "rated": 3 starts an hour for the whole queue (RateByKey false) and
// 1 per key, so a claim locks the queue's row, reads the database's
// clock and the queue's window (the empty limit_key), and after its jobs
// records and prunes the queue's starts. The window holds one start of
// the last hour (and three older ones, which a claim prunes). Its jobs, in
// run 10:
//
//	9201 RUNNING key r1 (attempt 1, heartbeat an hour old: the reaper's)
//	9202 PENDING key r1  — a claim blocks it: r1 is at its limit
//	9203 BLOCKED key r1  — a release of r1 makes it PENDING
//	9204 PENDING key r2  — claimed
//	9205 PENDING no key  — claimed
//	9206 PENDING no key  — left PENDING: the window has room for two
//	9207 CANCELLED key r3 while RUNNING (as 9109)
//	9208 BLOCKED key r3  — released by 9207's release, or by a claim's
//	9209 PENDING key r3  — a claim blocks it: 9207 still holds r3's slot
//
// A claim of 4 there finds 2 starts left in the window, locks r1–r3,
// claims 9204 and 9205, blocks 9202 and 9209, records both starts as the
// queue's and prunes the old ones; after its commit it releases r3,
// unblocking 9208. A second claim, after it, finds the window full and
// takes nothing.
const (
	limitedRun         = int64(8)
	limRunning         = int64(7101)
	limPendingA        = int64(7102)
	limBlockedA        = int64(7103)
	limCancelledD      = int64(7107)
	limBlockedD        = int64(7108)
	keyedFirst         = int64(8101)
	limitedConcurrency = 4
	seqRunning         = int64(9101)
	seqPending         = int64(9102)
	seqCancelled       = int64(9109)
	ratedRunning       = int64(9201)
	ratedPending       = int64(9202)
	ratedCancelled     = int64(9207)
	ratedRate          = 3
)

var (
	limitedLimits   = rowtype.QueueLimits{Concurrency: limitedConcurrency, KeyConcurrency: 1, Rate: 2, RatePeriod: time.Hour, RateByKey: true}
	keyedLimits     = rowtype.QueueLimits{KeyConcurrency: 1, Rate: 5, RatePeriod: time.Hour, RateByKey: true}
	sequencedLimits = rowtype.QueueLimits{Sequence: rowtype.SequenceHold}
	ratedLimits     = rowtype.QueueLimits{KeyConcurrency: 1, Rate: ratedRate, RatePeriod: time.Hour}
)

// limitedQueues are the queues loadLimited writes and limitsHold checks.
var limitedQueues = []struct {
	name string
	l    rowtype.QueueLimits
}{{"limited", limitedLimits}, {"keyed", keyedLimits}, {"sequenced", sequencedLimits}, {"rated", ratedLimits}}

func loadLimited(t *testing.T, s server) {
	t.Helper()
	ctx := context.Background()
	now, ago := "UTC_TIMESTAMP(6)", func(d string) string { return "UTC_TIMESTAMP(6) - INTERVAL " + d }
	if s.flavor == lockview.Postgres {
		now, ago = "now()", func(d string) string { return "now() - interval '" + d + "'" }
	}
	job := func(id int64, queue, status, key string, running bool) string {
		k := "NULL"
		if key != "" {
			k = "'" + key + "'"
		}
		started, beat, attempts := "NULL", "NULL", 0
		switch {
		case running:
			started, beat, attempts = ago("1 hour"), ago("1 hour"), 1
		case status == "BLOCKED":
			beat = now
		}
		return fmt.Sprintf("UPDATE lockstep_jobs SET queue = '%s', status = '%s', limit_key = %s, attempts = %d, started_at = %s, heartbeat_at = %s, finished_at = NULL WHERE id = %d",
			queue, status, k, attempts, started, beat, id)
	}
	stmts := []string{
		job(7101, "limited", "RUNNING", "a", true),
		job(7102, "limited", "PENDING", "a", false),
		job(7103, "limited", "BLOCKED", "a", false),
		job(7104, "limited", "PENDING", "b", false),
		job(7105, "limited", "PENDING", "", false),
		job(7106, "limited", "PENDING", "c", false),
		job(7107, "limited", "CANCELLED", "d", true),
		"UPDATE lockstep_jobs SET heartbeat_at = " + now + " WHERE id = 7107",
		job(7108, "limited", "BLOCKED", "d", false),
		job(7109, "limited", "PENDING", "d", false),
	}
	for i, k := range []string{"e", "e", "f", "f", "g", "g", "h", "h", "i", "z", "j", "e"} {
		stmts = append(stmts, job(keyedFirst+int64(i), "keyed", "PENDING", k, false))
	}
	stmts = append(stmts,
		job(9101, "sequenced", "RUNNING", "s1", true),
		job(9102, "sequenced", "PENDING", "s1", false),
		job(9103, "sequenced", "BLOCKED", "s1", false),
		job(9104, "sequenced", "FAILED", "s2", true),
		"UPDATE lockstep_jobs SET finished_at = "+ago("30 minute")+", last_error = 'boom' WHERE id = 9104",
		job(9105, "sequenced", "PENDING", "s2", false),
		job(9106, "sequenced", "PENDING", "s3", false),
		job(9107, "sequenced", "PENDING", "s3", false),
		job(9108, "sequenced", "PENDING", "", false),
		job(9109, "sequenced", "CANCELLED", "s4", true),
		"UPDATE lockstep_jobs SET heartbeat_at = "+now+" WHERE id = 9109",
		job(9110, "sequenced", "BLOCKED", "s4", false),
		job(9111, "sequenced", "PENDING", "s4", false),
		job(9201, "rated", "RUNNING", "r1", true),
		job(9202, "rated", "PENDING", "r1", false),
		job(9203, "rated", "BLOCKED", "r1", false),
		job(9204, "rated", "PENDING", "r2", false),
		job(9205, "rated", "PENDING", "", false),
		job(9206, "rated", "PENDING", "", false),
		job(9207, "rated", "CANCELLED", "r3", true),
		"UPDATE lockstep_jobs SET heartbeat_at = "+now+" WHERE id = 9207",
		job(9208, "rated", "BLOCKED", "r3", false),
		job(9209, "rated", "PENDING", "r3", false),
	)
	for _, q := range limitedQueues {
		byKey := 0
		if q.l.RateByKey {
			byKey = 1
		}
		stmts = append(stmts, fmt.Sprintf("INSERT INTO lockstep_queues (name, concurrency, key_concurrency, sequence, rate, rate_period_us, rate_by_key, updated_at) VALUES ('%s', %s, %s, %d, %s, %s, %d, %s)",
			q.name, nullOr(q.l.Concurrency), nullOr(q.l.KeyConcurrency), q.l.Sequence, nullOr(q.l.Rate), nullOr(int(q.l.RatePeriod.Microseconds())), byKey, now))
	}
	stmts = append(stmts,
		"INSERT INTO lockstep_limit_keys (queue, limit_key) VALUES ('limited', 'a'), ('limited', 'b'), ('limited', 'c'), ('limited', 'd'),"+
			" ('keyed', 'e'), ('keyed', 'f'), ('keyed', 'g'), ('keyed', 'h'), ('keyed', 'i'), ('keyed', 'j'),"+
			" ('sequenced', 's1'), ('sequenced', 's2'), ('sequenced', 's3'), ('sequenced', 's4'),"+
			" ('rated', 'r1'), ('rated', 'r2'), ('rated', 'r3')",
		"INSERT INTO lockstep_limit_starts (queue, limit_key, started_at, job_id) VALUES"+
			" ('limited', 'a', "+ago("1 hour")+", 7101), ('limited', 'd', "+ago("1 hour")+", 7107),"+
			" ('limited', 'b', "+ago("10 minute")+", 7090), ('limited', 'b', "+ago("2 hour")+", 7091),"+
			" ('limited', 'c', "+ago("20 minute")+", 7092), ('limited', 'c', "+ago("10 minute")+", 7093),"+
			" ('keyed', 'e', "+ago("2 hour")+", 8090), ('keyed', 'j', "+ago("2 hour")+", 8091),"+
			" ('rated', '', "+ago("1 hour")+", 9201), ('rated', '', "+ago("1 hour")+", 9207),"+
			" ('rated', '', "+ago("10 minute")+", 9290), ('rated', '', "+ago("2 hour")+", 9291)",
	)
	for _, q := range stmts {
		_, err := s.drv.DB().ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
}

func nullOr(n int) string {
	if n <= 0 {
		return "NULL"
	}
	return fmt.Sprint(n)
}

// checkT is what an invariant's check needs of a test: a *testing.T, or
// the recorder the negative controls read a broken invariant from.
type checkT interface {
	require.TestingT
	Helper()
}

// limitsHold is the invariant every pair of limited writers must leave:
// no key of a limited queue with more RUNNING jobs than its limit, no
// queue with more jobs holding slots than its own, and no key with BLOCKED
// jobs and nothing live that will release them (a lost wake-up); in the
// sequenced queue, no RUNNING job behind an earlier live job of its key (a
// FAILED one holds its key there), and in the rated queue no more starts
// in the window than its rate.
func limitsHold(t checkT, s server) {
	t.Helper()
	ctx := context.Background()
	rows, err := s.drv.DB().QueryContext(ctx, "SELECT id, queue, limit_key, status, finished_at IS NULL FROM lockstep_jobs"+
		" WHERE queue IN ('limited', 'keyed', 'sequenced', 'rated') ORDER BY id")
	require.NoError(t, err)
	defer rows.Close()
	type qk struct{ queue, key string }
	running, live, blocked := map[qk]int{}, map[qk]int{}, map[qk][]rowtype.JobStatus{}
	holding := map[string]int{}
	// head is each sequence's first live job (ids ascending), runningIDs
	// its RUNNING ones.
	head, runningIDs := map[qk]int64{}, map[qk][]int64{}
	for rows.Next() {
		var id int64
		var queue, status string
		var key sql.NullString
		var unfinished bool
		require.NoError(t, rows.Scan(&id, &queue, &key, &status, &unfinished))
		k := qk{queue, key.String}
		switch {
		case status == string(rowtype.StatusRunning):
			running[k]++
			live[k]++
			holding[queue]++
			runningIDs[k] = append(runningIDs[k], id)
		case status == string(rowtype.StatusCancelled) && unfinished:
			live[k]++
			holding[queue]++
		case status == string(rowtype.StatusPending):
			live[k]++
		case status == string(rowtype.StatusBlocked):
			blocked[k] = append(blocked[k], rowtype.StatusBlocked)
		case status == string(rowtype.StatusFailed) && queue == "sequenced" && sequencedLimits.Sequence == rowtype.SequenceHold:
			// Held: its retry is what lets the sequence go on.
			live[k]++
		}
		inSequence := status == string(rowtype.StatusWaiting) || status == string(rowtype.StatusPending) ||
			status == string(rowtype.StatusBlocked) || status == string(rowtype.StatusRunning) ||
			status == string(rowtype.StatusFailed) && sequencedLimits.Sequence == rowtype.SequenceHold
		if _, ok := head[k]; !ok && queue == "sequenced" && k.key != "" && inSequence {
			head[k] = id
		}
	}
	require.NoError(t, rows.Err())
	for k, n := range running {
		if k.key != "" {
			require.LessOrEqual(t, n, 1, "key %s of queue %s has %d RUNNING jobs", k.key, k.queue, n)
		}
	}
	require.LessOrEqual(t, holding["limited"], limitedConcurrency, "queue limited: %d jobs hold slots", holding["limited"])
	for k := range blocked {
		require.Positive(t, live[k], "key %s of queue %s has BLOCKED jobs and no live one to release them", k.key, k.queue)
	}
	for k, ids := range runningIDs {
		if k.queue == "sequenced" && k.key != "" {
			require.Equal(t, head[k], ids[0], "key %s of queue sequenced runs job %d before its first live job %d", k.key, ids[0], head[k])
		}
	}
	window := "UTC_TIMESTAMP(6) - INTERVAL 1 HOUR"
	if s.flavor == lockview.Postgres {
		window = "now() - interval '1 hour'"
	}
	var starts int
	require.NoError(t, s.drv.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM lockstep_limit_starts WHERE queue = 'rated' AND limit_key = '' AND started_at > "+window).Scan(&starts))
	require.LessOrEqual(t, starts, ratedRate, "queue rated: %d starts in the last hour", starts)
}
