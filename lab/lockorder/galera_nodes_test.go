package lockorder_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// TestWriterPairsAcrossGaleraNodes runs every writer pair with its two
// writers on two nodes of the three-node Galera cluster: A through node 1,
// B through node 2, the way processes write when every node takes writes.
//
// Row locks are each node's own, so B never waits for A: A pauses at each
// of its pause points holding what it locked on node 1, B runs to its
// commit on node 2, and A goes on. Where the two met on a row — one wrote
// what the other wrote or locked — A loses: node 1 aborts it when it
// applies B's write (a brute-force abort), or its COMMIT fails
// certification. Either way the server says 1213, and A is retried whole,
// as the client retries every unit of work. The retried A sees what B
// committed, so the result is always that of B, then A: what the pair's
// checkEnd says of A, then B does not apply here. What must hold after
// every interleaving is what holds in every order — the pair's invariant
// where the pair the other way round declares it too (the limits:
// limitsHold), no live job in a cancelled run, no workflow step left
// waiting on dependencies that are all DONE — and the two nodes must hold
// the same jobs (id, status, attempts, run, waiting count).
//
// B always commits before A goes on, so every conflict here reaches A as
// node 1 applies B's writes against A's locks (a brute-force abort); a
// COMMIT that fails certification is what the three-writer soak meets.
//
// A lock that guards a decision without writing its row would not be
// seen by node 2's certification, which compares written rows only; the
// Galera catalogue writes each such row after locking it
// (catalog.Capabilities.CertifyLocks; TestGaleraCrossNodeNegativeControl shows
// what happens without).
func TestWriterPairsAcrossGaleraNodes(t *testing.T) {
	since := testdb.WatchGaleraCounters(t)
	dsns := causalDSNs(t, testdb.Galera(t))
	s := openServer(t, serverSpec{"Galera", func(testing.TB) string { return dsns[0] }, openMySQL, lockview.MariaDB})
	b := openNode(t, dsns[1])
	require.True(t, s.drv.(*mysql.Driver).Galera(), "node 1 is found to be a Galera node")
	require.True(t, b.Galera(), "node 2 is found to be a Galera node")
	total := crossStats{}
	for _, g := range pairGroups() {
		t.Run("Galera across nodes"+g.suffix, func(t *testing.T) {
			st := runPairsAcrossNodes(t, s, b, g.pairs())
			total.add(st)
		})
	}
	t.Logf("%d interleavings; A retried after a conflict with B in %d of them (%d retries)", total.runs, total.conflicted, total.retries)
	for i, d := range since() {
		t.Logf("node %d: %s", i+1, d)
		require.Zero(t, d.Deadlocks, "node %d counted a deadlock of its own row locks", i+1)
	}
	require.Positive(t, total.conflicted, "the pairs met across the nodes: some A lost to its B")
}

// TestGaleraCrossNodeNegativeControl runs two pairs whose writers meet only on a
// row that B locks and does not write — run 1's cancel against an
// enqueue into run 1 (which holds the run row while it inserts), and two
// claims of the globally limited queue (each holds the queue's row while
// it counts the slots taken) — across two Galera nodes with the
// catalogue of a single server (WithGalera(false): locks, no certifying
// writes), and shows that the cross-node harness sees what goes wrong: a
// PENDING job in the cancelled run, or more jobs holding slots than the
// limit. (Where B writes a row A holds, node 1 aborts A as it applies
// B's write whatever the catalogue.) Then the same pairs with the Galera
// catalogue: nothing goes wrong.
func TestGaleraCrossNodeNegativeControl(t *testing.T) {
	dsns := causalDSNs(t, testdb.Galera(t))
	s := openServer(t, serverSpec{"Galera", func(testing.TB) string { return dsns[0] }, openMySQL, lockview.MariaDB})
	b := openNode(t, dsns[1])
	uncertified := s
	uncertified.drv = s.drv.(*mysql.Driver).WithGalera(false)
	none := crossExtra{prepare: func(*testing.T, server) {}, check: func(*testing.T, server) []string { return nil }}
	for _, c := range []struct {
		p     pair
		extra crossExtra
	}{
		{pair{a: cancelRunOfPending, b: enqueueIntoRun}, none},
		{pair{a: globalOnlyClaim, b: globalOnlyClaim}, globalOnly},
	} {
		p := c.p
		t.Run(p.a.name+" × "+p.b.name, func(t *testing.T) {
			broken := 0
			for _, at := range pausePointsWith(t, uncertified, p.a, c.extra) {
				_, problems := interleaveAcrossNodes(t, uncertified, b.WithGalera(false), p, at, c.extra)
				if len(problems) > 0 {
					broken++
					t.Logf("without certified locks, A paused %s: %s", at, strings.Join(problems, "; "))
				}
			}
			require.Positive(t, broken, "without certified locks some interleaving breaks an invariant")
			for _, at := range pausePointsWith(t, s, p.a, c.extra) {
				_, problems := interleaveAcrossNodes(t, s, b, p, at, c.extra)
				require.Empty(t, problems, "with certified locks, A paused %s", at)
			}
		})
	}
}

// pausePointsWith is pausePoints on the fixture with extra's data.
func pausePointsWith(t *testing.T, s server, a op, extra crossExtra) []point {
	t.Helper()
	loadAlmostDone(t, s)
	extra.prepare(t, s)
	return pausePointsLoaded(t, s, a)
}

// causalDSNs adds wsrep_sync_wait=15 to each node's DSN: every statement
// waits until its node has applied what the cluster committed before it,
// so that B, on node 2, starts from the fixture node 1 just loaded, and
// the checks read what both wrote.
func causalDSNs(t *testing.T, dsns []string) []string {
	t.Helper()
	out, err := testdb.WithSessionVar(dsns, "wsrep_sync_wait", "15")
	require.NoError(t, err)
	return out
}

func openNode(t *testing.T, dsn string) *mysql.Driver {
	t.Helper()
	d, err := mysql.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// crossStats counts interleavings and the conflicts A lost.
type crossStats struct{ runs, conflicted, retries int }

func (c *crossStats) add(o crossStats) {
	c.runs += o.runs
	c.conflicted += o.conflicted
	c.retries += o.retries
}

// runPairsAcrossNodes runs each pair with A on s (node 1) and B on b
// (node 2), at each of A's pause points, and checks the invariants.
func runPairsAcrossNodes(t *testing.T, s server, b *mysql.Driver, ps []pair) crossStats {
	var st crossStats
	bound := orderBoundPairs()
	for _, p := range ps {
		if bound[[2]string{p.a.name, p.b.name}] {
			p.always = nil // it holds only when A comes first
		}
		for _, at := range pausePoints(t, s, p.a) {
			t.Run(fmt.Sprintf("%s × %s, A paused %s", p.a.name, p.b.name, at), func(t *testing.T) {
				retries, problems := interleaveAcrossNodes(t, s, b, p, at)
				require.Empty(t, problems)
				st.runs++
				if retries > 0 {
					st.conflicted++
					st.retries += retries
				}
			})
		}
	}
	return st
}

// deletes: op b deletes jobs (retention's prune, a bulk delete).
func deletes(b op) bool {
	return strings.HasPrefix(b.name, "prune") || strings.HasPrefix(b.name, "bulk delete")
}

// orderBoundPairs are the pairs (by A's and B's names) whose invariant
// holds only when A comes first — the pair the other way round, B then A
// (what a cross-node interleaving always ends as), declares none.
// Removing a queue's settings, then claiming, claims as an unlimited queue
// does: the old limits no longer bind.
func orderBoundPairs() map[[2]string]bool {
	reversedKeeps := map[[2]string]bool{}
	var all []pair
	for _, g := range pairGroups() {
		all = append(all, g.pairs()...)
	}
	for _, q := range all {
		reversedKeeps[[2]string{q.b.name, q.a.name}] = q.always != nil
	}
	out := map[[2]string]bool{}
	for _, p := range all {
		if keeps, ok := reversedKeeps[[2]string{p.a.name, p.b.name}]; ok && !keeps {
			out[[2]string{p.a.name, p.b.name}] = true
		}
	}
	return out
}

// maxCrossTries bounds A's and B's tries; each conflict is with the other
// side's one commit, so a second try always goes through.
const maxCrossTries = 5

// interleaveAcrossNodes loads the fixture, runs A on s until it pauses at
// at, runs B on b to its end, lets A go on (retried whole while it loses
// conflicts), and returns how often A was retried and what the
// invariants found broken.
func interleaveAcrossNodes(t *testing.T, s server, b *mysql.Driver, p pair, at point, extra ...crossExtra) (retries int, problems []string) {
	t.Helper()
	loadAlmostDone(t, s)
	for _, x := range extra {
		x.prepare(t, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	paused, resume := make(chan struct{}), make(chan struct{})
	// However this ends, A is let go: a failed check must not leave its
	// transaction open on node 1, holding locks the next subtest's fixture
	// load would wait for.
	var resumeOnce sync.Once
	letGo := func() { resumeOnce.Do(func() { close(resume) }) }
	defer letGo()
	type result struct {
		tries int
		err   error
	}
	aDone := make(chan result, 1)
	go func() {
		var err error
		tries := 0
		for tries < maxCrossTries {
			tries++
			pause := func() {}
			if tries == 1 {
				pause = func() {
					close(paused)
					select {
					case <-resume:
					case <-ctx.Done():
					}
				}
			}
			err = sessionA(s, p.a, at)(ctx, pause)
			if err == nil || !s.drv.ClassifyError(err).Retryable() {
				break
			}
		}
		aDone <- result{tries, err}
	}()
	select {
	case <-paused:
	case r := <-aDone:
		t.Fatalf("A (%s) ended before its pause point %s: %v", p.a.name, at, r.err)
	case <-ctx.Done():
		t.Fatalf("A (%s) did not reach %s", p.a.name, at)
	}
	var errB error
	for try := 1; try <= maxCrossTries; try++ {
		if errB = p.b.run(ctx, b.Executor()); errB == nil || !b.ClassifyError(errB).Retryable() {
			break
		}
	}
	if errB == nil {
		waitApplied(ctx, t, b.DB(), s.observer.DB())
	}
	letGo()
	r := <-aDone
	for _, e := range []*error{&r.err, &errB} {
		if p.duplicateOK && rowtype.KindOf(*e) == rowtype.ErrorDuplicate {
			*e = nil
		}
	}
	if errors.Is(r.err, rowtype.ErrNotFound) && deletes(p.b) {
		// B deleted the job first; A, retried, finds it gone — what A
		// reports when it comes second on one server too, where it changes
		// no row.
		r.err = nil
	}
	require.NoError(t, r.err, "A: %s (%d tries)", p.a.name, r.tries)
	require.NoError(t, errB, "B: %s", p.b.name)
	rec := &recorder{}
	if p.always != nil {
		rec.check(func() { p.always(rec, s) })
	}
	problems = append(problems, rec.msgs...)
	problems = append(problems, crossNodeProblems(ctx, t, s.drv.DB(), b.DB())...)
	for _, x := range extra {
		problems = append(problems, x.check(t, s)...)
	}
	return r.tries - 1, problems
}

// waitApplied waits until node one has applied everything node two had
// committed when it was called (wsrep_last_committed, the cluster-wide
// seqno of the last transaction a node applied): A goes on only once B's
// writes are on A's node, so what A reads after its pause is the same in
// every run.
func waitApplied(ctx context.Context, t *testing.T, two, one *sql.DB) {
	t.Helper()
	seqno := func(db *sql.DB) int64 {
		var name string
		var v int64
		require.NoError(t, db.QueryRowContext(ctx, "SHOW STATUS LIKE 'wsrep_last_committed'").Scan(&name, &v))
		return v
	}
	want := seqno(two)
	for seqno(one) < want {
		select {
		case <-ctx.Done():
			t.Fatalf("node 1 did not apply seqno %d: %v", want, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// crossExtra is data a pair needs beyond the fixture, and its check.
type crossExtra struct {
	prepare func(t *testing.T, s server)
	check   func(t *testing.T, s server) []string
}

// globalOnly is a queue limited by a global concurrency of 2 alone, with
// six PENDING jobs and none running: two claims of it that each count the
// two free slots before the other's claim commits, and then claim
// different jobs, write no row in common, so only the queue row's lock
// keeps them to two between them.
var (
	globalOnlyLimits = rowtype.QueueLimits{Concurrency: 2}
	globalOnlyClaim  = limitedClaimOf("global_only", 2, globalOnlyLimits)
	globalOnly       = crossExtra{
		prepare: func(t *testing.T, s server) {
			ctx := context.Background()
			ex := s.drv.Executor()
			require.NoError(t, ex.QueueSetLimits(ctx, "global_only", globalOnlyLimits))
			var jobs []driver.JobInsertParams
			for range 6 {
				jobs = append(jobs, driver.JobInsertParams{Queue: "global_only", Kind: "k", Args: []byte(`{}`), MaxAttempts: 5})
			}
			_, err := ex.JobInsertMany(ctx, jobs)
			require.NoError(t, err)
		},
		check: func(t *testing.T, s server) []string {
			var running int
			require.NoError(t, s.drv.DB().QueryRowContext(context.Background(),
				"SELECT COUNT(*) FROM lockstep_jobs WHERE queue = 'global_only' AND status = 'RUNNING'").Scan(&running))
			if running > globalOnlyLimits.Concurrency {
				return []string{fmt.Sprintf("queue global_only has %d RUNNING jobs, its limit is %d", running, globalOnlyLimits.Concurrency)}
			}
			return nil
		},
	}
)

// crossNodeProblems checks what every order of two writers leaves true,
// and that the two nodes hold the same jobs.
func crossNodeProblems(ctx context.Context, t *testing.T, one, two *sql.DB) []string {
	t.Helper()
	var problems []string
	ids := func(db *sql.DB, q string) []int64 {
		rows, err := db.QueryContext(ctx, q)
		require.NoError(t, err)
		defer rows.Close()
		var out []int64
		for rows.Next() {
			var id int64
			require.NoError(t, rows.Scan(&id))
			out = append(out, id)
		}
		require.NoError(t, rows.Err())
		return out
	}
	if live := ids(one, "SELECT j.id FROM lockstep_jobs j JOIN lockstep_runs r ON r.id = j.run_id"+
		" WHERE r.status = 'CANCELLED' AND j.status IN ('WAITING', 'PENDING', 'BLOCKED', 'RUNNING') ORDER BY j.id"); len(live) > 0 {
		problems = append(problems, fmt.Sprintf("jobs %v are live in a cancelled run", live))
	}
	if stuck := ids(one, "SELECT j.id FROM lockstep_jobs j WHERE j.status = 'WAITING' AND NOT EXISTS"+
		" (SELECT 1 FROM lockstep_job_deps d JOIN lockstep_jobs u ON u.id = d.depends_on WHERE d.job_id = j.id AND u.status <> 'DONE')"+
		" ORDER BY j.id"); len(stuck) > 0 {
		problems = append(problems, fmt.Sprintf("jobs %v wait on dependencies that are all DONE", stuck))
	}
	const sum = "SELECT COUNT(*), COALESCE(SUM(CRC32(CONCAT_WS(',', id, status, attempts, COALESCE(run_id, 0), COALESCE(waiting_on, -1)))), 0) FROM lockstep_jobs"
	var n1, n2, c1, c2 int64
	require.NoError(t, one.QueryRowContext(ctx, sum).Scan(&n1, &c1))
	require.NoError(t, two.QueryRowContext(ctx, sum).Scan(&n2, &c2))
	if n1 != n2 || c1 != c2 {
		problems = append(problems, fmt.Sprintf("the nodes disagree: node 1 has %d jobs (checksum %d), node 2 %d (%d)", n1, c1, n2, c2))
	}
	return problems
}

// recorder is a checkT that keeps what a check found instead of failing
// the test: the negative control needs to see a broken invariant.
type recorder struct{ msgs []string }

var errStopCheck = errors.New("check stopped")

func (r *recorder) Errorf(format string, args ...any) {
	r.msgs = append(r.msgs, strings.TrimSpace(fmt.Sprintf(format, args...)))
}
func (r *recorder) FailNow() { panic(errStopCheck) }
func (r *recorder) Helper()  {}

// check runs fn, which stops at its first failed require.
func (r *recorder) check(fn func()) {
	defer func() {
		if v := recover(); v != nil && v != errStopCheck { //nolint:errorlint // the sentinel itself, panicked
			panic(v)
		}
	}()
	fn()
}
