package lockorder_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/lockdiag/locktest"
	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// op is one unit of the queue's work, as the client issues it.
type op struct {
	name string
	run  func(ctx context.Context, ex driver.Executor) error
	// pool: as session A, the op runs on the driver's own pool, as the
	// client issues it, and not inside one transaction of the harness's:
	// it is several transactions (a limited claim and the release after
	// its commit; a write that moves a keyed job out of RUNNING and the
	// release of its key), which only the executor's own pool runs
	// (inside a caller's transaction the release is left to the sweep).
	// A pauses before the k-th occurrence of a statement, or of the
	// executor's commit, holding what its open transaction has locked.
	pool bool
}

var (
	claim = op{name: "claim", run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "default", Max: 2})
		return err
	}}
	cancelRunOfPending = op{name: "cancel run 1", run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.RunCancel(ctx, runOfPending)
		return err
	}}
	cancelRunOfRunning = op{name: "cancel run 6", run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.RunCancel(ctx, runOfRunning)
		return err
	}}
	cancelJobPending = op{name: "cancel job 999", run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobCancel(ctx, pendingA)
		return err
	}}
	cancelJobRunning = op{name: "cancel job 5500", run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobCancel(ctx, running)
		return err
	}}
	reap = op{name: "reap", run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobReap(ctx, &driver.JobReapParams{StaleAfter: time.Minute, Max: 100})
		return err
	}}
	heartbeat = op{name: "heartbeat 5500", run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobHeartbeat(ctx, []driver.JobRef{{ID: running, Attempt: 1}})
		return err
	}}
	enqueueIntoRun = op{name: "enqueue into run 1", run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobInsertIntoRun(ctx, runOfPending, []driver.JobInsertParams{{Queue: "default", Kind: "k", Args: []byte(`{}`), MaxAttempts: 5}})
		if errors.Is(err, rowtype.ErrRunCancelled) {
			return nil // the run was cancelled first: refused, as it must be
		}
		return err
	}}
	retryFailed = op{name: "retry job 2", run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobRetry(ctx, failedInRun)
		if errors.Is(err, rowtype.ErrRunCancelled) {
			return nil // the run was cancelled first: refused, as it must be
		}
		return err
	}}
)

// The workflow's writers (loadWorkflow's run 3).
func finishFlow(id int64, status rowtype.JobStatus) op {
	return op{name: fmt.Sprintf("finish %s %d (with dependents)", status, id), run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: id, Attempt: 1, Status: status, Error: "boom", RunID: runOfFlow, Dependents: 1})
		return err
	}}
}

var (
	cancelRunOfFlow = op{name: "cancel run 3", run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.RunCancel(ctx, runOfFlow)
		return err
	}}
	cancelFlowJob = op{name: "cancel job 2997 (with dependents)", run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobCancel(ctx, flowRunA)
		return err
	}}
	retryFlowFailed = op{name: "retry job 2995 (revives 2996)", run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobRetry(ctx, flowFailed)
		if errors.Is(err, rowtype.ErrRunCancelled) {
			return nil // the run was cancelled first: refused, as it must be
		}
		return err
	}}
)

// insertWorkflow creates a run with a small workflow (a root, two jobs
// that depend on it, a fan-in), as InsertRun does: the run, then the jobs
// already WAITING or PENDING (job.insert_flow), then the edges.
var insertWorkflow = op{name: "insert a workflow", run: func(ctx context.Context, ex driver.Executor) error {
	run, err := ex.RunInsert(ctx, &driver.RunInsertParams{Name: "pairs"})
	if err != nil {
		return err
	}
	job := func(deps ...int) driver.JobInsertParams {
		return driver.JobInsertParams{RunID: run.ID, Queue: "default", Kind: "k", Args: []byte(`{}`), MaxAttempts: 5, DependsOn: deps}
	}
	_, err = ex.JobInsertMany(ctx, []driver.JobInsertParams{job(), job(0), job(0), job(1, 2)})
	return err
}}

// uniqueKey is the fixture's unique key of job id (every job has its own,
// held while PENDING or RUNNING).
func uniqueKey(id int64) string { return fmt.Sprintf("%064x", id) }

// enqueueUnique inserts a unique job with job id's key: a duplicate while
// that job holds it.
func enqueueUnique(id int64) op {
	return op{name: fmt.Sprintf("enqueue unique as %d", id), run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobInsertUnique(ctx, 0, driver.JobInsertParams{Queue: "default", Kind: "k", Args: []byte(`{}`), MaxAttempts: 5, UniqueKey: uniqueKey(id), UniqueStates: 3})
		return err
	}}
}

// pruneFailed is retention deleting FAILED jobs (job 2 among them).
var pruneFailed = op{name: "prune FAILED", run: func(ctx context.Context, ex driver.Executor) error {
	_, err := ex.JobPrune(ctx, &driver.JobPruneParams{Queue: "default", Status: rowtype.StatusFailed, OlderThan: -time.Hour, Max: 100})
	return err
}}

func deleted(id int64) func(t *testing.T, s server) {
	return func(t *testing.T, s server) {
		_, err := s.drv.Executor().JobGet(context.Background(), id)
		require.ErrorIs(t, err, rowtype.ErrNotFound, "job %d", id)
	}
}

// completeMany is the client's batched DONE, with the running job in it.
var completeMany = op{name: "complete many 5500", run: func(ctx context.Context, ex driver.Executor) error {
	_, err := ex.JobCompleteMany(ctx, []driver.JobRef{{ID: running, Attempt: 1}})
	return err
}}

func finish(status rowtype.JobStatus, snooze bool) op {
	name := "finish " + string(status)
	if snooze {
		name = "snooze"
	}
	return op{name: name + " 5500", run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: running, Attempt: 1, Status: status, Snooze: snooze, RetryAfter: time.Second, Error: "boom"})
		return err
	}}
}

// pair is two operations that can touch the same rows, and whether B must
// be seen waiting when A pauses holding everything it locked (A at its
// end, before commit).
type pair struct {
	a, b     op
	bWaits   bool
	checkEnd func(t *testing.T, s server)
	// waitsOn overrides bWaits where the servers differ.
	waitsOn map[lockview.Flavor]bool
	// duplicateOK: the unique index may refuse either side (a retry of a
	// job whose key the other side took), as it must.
	duplicateOK bool
	// always is checked after every interleaving, not only the one that
	// pauses A at its end.
	always func(t checkT, s server)
}

func finalIs(id int64, want ...rowtype.JobStatus) func(t *testing.T, s server) {
	return func(t *testing.T, s server) {
		got := status(t, s, id)
		require.Contains(t, want, got, "job %d", id)
	}
}

func runSettled(run int64) func(t *testing.T, s server) {
	return func(t *testing.T, s server) {
		counts, err := s.drv.Executor().RunCounts(context.Background(), run)
		require.NoError(t, err)
		require.Zero(t, counts[rowtype.StatusWaiting]+counts[rowtype.StatusPending]+counts[rowtype.StatusRunning], "run %d still has live jobs after its cancel: %v", run, counts)
	}
}

func pairs() []pair {
	var out []pair
	for _, f := range []op{finish(rowtype.StatusDone, false), completeMany, finish(rowtype.StatusFailed, false), finish(rowtype.StatusPending, false), finish(rowtype.StatusPending, true)} {
		out = append(out,
			pair{a: f, b: cancelRunOfRunning, bWaits: true, checkEnd: runSettled(runOfRunning)},
			pair{a: cancelRunOfRunning, b: f, bWaits: true, checkEnd: finalIs(running, rowtype.StatusCancelled)},
			pair{a: f, b: cancelJobRunning, bWaits: true},
			pair{a: reap, b: f, bWaits: true, checkEnd: finalIs(running, rowtype.StatusPending)},
			pair{a: f, b: reap, bWaits: true},
		)
	}
	doneA, doneB := finishFlow(flowRunA, rowtype.StatusDone), finishFlow(flowRunB, rowtype.StatusDone)
	failA := finishFlow(flowRunA, rowtype.StatusFailed)
	out = append(out,
		// Workflows: the two dependencies of one job ending together, in
		// both orders and with a failure; each against the run's cancel,
		// the dependency's own cancel, the retry that revives, and
		// retention. The run row comes first (shared by an end, exclusive
		// by a cancel or a reviving retry), then the ending job, then its
		// dependents by primary key upwards.
		pair{a: doneA, b: doneB, bWaits: true, checkEnd: finalIs(flowJoin, rowtype.StatusPending)},
		pair{a: doneB, b: doneA, bWaits: true, checkEnd: finalIs(flowJoin, rowtype.StatusPending)},
		pair{a: failA, b: doneB, bWaits: true, checkEnd: finalIs(flowJoin, rowtype.StatusCancelled)},
		pair{a: doneB, b: failA, bWaits: true, checkEnd: finalIs(flowJoin, rowtype.StatusCancelled)},
		pair{a: cancelFlowJob, b: doneB, bWaits: true, checkEnd: finalIs(flowJoin, rowtype.StatusCancelled)},
		pair{a: doneB, b: cancelFlowJob, bWaits: true, checkEnd: finalIs(flowJoin, rowtype.StatusCancelled)},
		pair{a: doneA, b: cancelRunOfFlow, bWaits: true, checkEnd: runSettled(runOfFlow)},
		pair{a: cancelRunOfFlow, b: doneA, bWaits: true, checkEnd: finalIs(flowRunA, rowtype.StatusCancelled)},
		pair{a: failA, b: cancelRunOfFlow, bWaits: true, checkEnd: runSettled(runOfFlow)},
		pair{a: cancelRunOfFlow, b: failA, bWaits: true, checkEnd: finalIs(flowJoin, rowtype.StatusCancelled)},
		pair{a: retryFlowFailed, b: doneA, bWaits: true, checkEnd: finalIs(flowBlocked, rowtype.StatusWaiting)},
		pair{a: doneA, b: retryFlowFailed, bWaits: true, checkEnd: finalIs(flowBlocked, rowtype.StatusWaiting)},
		pair{a: retryFlowFailed, b: cancelRunOfFlow, bWaits: true, checkEnd: runSettled(runOfFlow)},
		pair{a: cancelRunOfFlow, b: retryFlowFailed, bWaits: true, checkEnd: finalIs(flowBlocked, rowtype.StatusCancelled)},
		pair{a: retryFlowFailed, b: pruneFailed, bWaits: true, checkEnd: finalIs(flowBlocked, rowtype.StatusWaiting)},
		pair{a: pruneFailed, b: retryFlowFailed, bWaits: true, checkEnd: deleted(flowFailed)},
		pair{a: doneA, b: claim, bWaits: false},
		pair{a: doneA, b: reap, bWaits: false},
		// A workflow being inserted is new rows only, invisible until its
		// commit: a claim skips nothing of it and waits for nothing.
		pair{a: insertWorkflow, b: claim, bWaits: false},
		pair{a: claim, b: insertWorkflow, bWaits: false},
		pair{a: insertWorkflow, b: cancelRunOfFlow, bWaits: false, checkEnd: runSettled(runOfFlow)},
	)
	return append(out,
		pair{a: claim, b: cancelRunOfPending, bWaits: true, checkEnd: runSettled(runOfPending)},
		pair{a: cancelRunOfPending, b: claim, bWaits: false, checkEnd: finalIs(pendingA, rowtype.StatusCancelled)},
		pair{a: claim, b: cancelJobPending, bWaits: true, checkEnd: finalIs(pendingA, rowtype.StatusCancelled)},
		pair{a: cancelJobPending, b: claim, bWaits: false, checkEnd: finalIs(pendingA, rowtype.StatusCancelled)},
		pair{a: reap, b: cancelRunOfRunning, bWaits: true, checkEnd: runSettled(runOfRunning)},
		pair{a: cancelRunOfRunning, b: reap, bWaits: true, checkEnd: finalIs(running, rowtype.StatusCancelled)},
		pair{a: claim, b: reap, bWaits: false},
		pair{a: reap, b: claim, bWaits: false},
		pair{a: heartbeat, b: cancelRunOfRunning, bWaits: true, checkEnd: runSettled(runOfRunning)},
		pair{a: cancelRunOfRunning, b: heartbeat, bWaits: true, checkEnd: finalIs(running, rowtype.StatusCancelled)},
		pair{a: enqueueIntoRun, b: cancelRunOfPending, bWaits: true, checkEnd: runSettled(runOfPending)},
		pair{a: cancelRunOfPending, b: enqueueIntoRun, bWaits: true, checkEnd: runSettled(runOfPending)},
		pair{a: cancelRunOfPending, b: cancelRunOfPending, bWaits: true, checkEnd: runSettled(runOfPending)},
		// A retry locks the run row in share mode before its job, as an
		// enqueue into the run does.
		pair{a: retryFailed, b: cancelRunOfPending, bWaits: true, checkEnd: finalIs(failedInRun, rowtype.StatusCancelled)},
		pair{a: cancelRunOfPending, b: retryFailed, bWaits: true, checkEnd: finalIs(failedInRun, rowtype.StatusFailed)},
		pair{a: retryFailed, b: retryFailed, bWaits: true, checkEnd: finalIs(failedInRun, rowtype.StatusPending)},
		// Retention against the one writer of a FAILED job, and against a
		// cancel of the same run (which touches only its live jobs).
		pair{a: pruneFailed, b: retryFailed, bWaits: true, checkEnd: deleted(failedInRun)},
		pair{a: retryFailed, b: pruneFailed, bWaits: true, checkEnd: finalIs(failedInRun, rowtype.StatusPending)},
		pair{a: pruneFailed, b: cancelRunOfPending, bWaits: false, checkEnd: deleted(failedInRun)},
		pair{a: cancelRunOfPending, b: pruneFailed, bWaits: false, checkEnd: deleted(failedInRun)},
		pair{a: pruneFailed, b: pruneFailed, bWaits: true, checkEnd: deleted(failedInRun)},
		// Unique inserts against the writers that free or take a key.
		// A duplicate's insert waits for a holder that is changing; on
		// MariaDB the duplicate-key error leaves a shared lock on the
		// holder's unique-index record, so the holder's next status change
		// waits for the inserting transaction (PostgreSQL's ON CONFLICT DO
		// NOTHING locks nothing). Neither direction holds PRIMARY while
		// waiting for a record the other holds: no cycle.
		pair{a: finish(rowtype.StatusDone, false), b: enqueueUnique(running), bWaits: true, checkEnd: finalIs(running, rowtype.StatusDone)},
		pair{a: enqueueUnique(running), b: finish(rowtype.StatusDone, false), waitsOn: map[lockview.Flavor]bool{lockview.MariaDB: true, lockview.MySQL: true}, checkEnd: finalIs(running, rowtype.StatusDone)},
		pair{a: cancelJobRunning, b: enqueueUnique(running), bWaits: true, checkEnd: finalIs(running, rowtype.StatusCancelled)},
		pair{a: retryFailed, b: enqueueUnique(failedInRun), bWaits: true, checkEnd: finalIs(failedInRun, rowtype.StatusPending), duplicateOK: true},
		pair{a: enqueueUnique(failedInRun), b: retryFailed, bWaits: true, checkEnd: finalIs(failedInRun, rowtype.StatusFailed), duplicateOK: true},
		// Processes doing the same thing at once.
		pair{a: claim, b: claim, bWaits: false},
		pair{a: reap, b: reap, bWaits: true, checkEnd: finalIs(running, rowtype.StatusPending)},
		pair{a: heartbeat, b: finish(rowtype.StatusDone, false), bWaits: true, checkEnd: finalIs(running, rowtype.StatusDone)},
		pair{a: finish(rowtype.StatusDone, false), b: heartbeat, bWaits: true, checkEnd: finalIs(running, rowtype.StatusDone)},
	)
}

// point is where session A pauses: before the k-th occurrence of
// statement name (k counts from 1; "commit" is the executor's own
// commit), or, when name is "", after its last statement before the
// harness commits (an op run in the harness's transaction). end marks the
// point at which A holds everything its (first) transaction locks: the
// harness's commit, or, for a pool op, the first commit after its first
// locking statement. B's waiting is asserted there.
type point struct {
	name string
	k    int
	end  bool
}

func (p point) String() string {
	switch {
	case p.name == "":
		return "at its end"
	case p.end:
		return fmt.Sprintf("at its end (before %s #%d)", p.name, p.k)
	case p.k > 1:
		return fmt.Sprintf("before %s #%d", p.name, p.k)
	}
	return "before " + p.name
}

// pausePoints runs a and records its statements, and returns where A can
// pause holding locks: before each statement that follows its first
// locking one, and at its end. An op run in the harness's transaction is
// rolled back and paused at the first occurrence of each statement; a
// pool op commits (the fixture is loaded again for each interleaving) and
// is paused at every occurrence, its transactions' commits among them.
func pausePoints(t *testing.T, s server, a op) []point {
	loadAlmostDone(t, s)
	return pausePointsLoaded(t, s, a)
}

// pausePointsLoaded is pausePoints on the data loaded now.
func pausePointsLoaded(t *testing.T, s server, a op) []point {
	ctx := context.Background()
	var names []string
	tr := &driver.StatementTrace{Before: func(_ context.Context, name string) error {
		names = append(names, name)
		return nil
	}}
	if a.pool {
		require.NoError(t, a.run(driver.WithStatementTrace(ctx, tr), s.drv.Executor()), a.name)
	} else {
		tx, err := s.drv.Begin(ctx)
		require.NoError(t, err)
		err = a.run(driver.WithStatementTrace(ctx, tr), tx)
		require.NoError(t, tx.Rollback())
		require.NoError(t, err)
	}
	var points []point
	seen := map[string]int{}
	locked, ended := false, false
	for _, n := range names {
		seen[n]++
		if locked && (a.pool || seen[n] == 1) {
			p := point{name: n, k: seen[n]}
			if a.pool && !ended && n == driver.TraceCommit {
				p.end, ended = true, true
			}
			points = append(points, p)
		}
		if st, ok := s.drv.Catalog().Lookup(n); ok && st.Locks {
			locked = true
		}
	}
	if a.pool {
		require.True(t, ended, "%s commits no transaction after its first locking statement: %v", a.name, names)
		return points
	}
	return append(points, point{end: true})
}

// sessionA runs a, inside a transaction of the harness's or (pool) on the
// driver's pool, pausing at the point.
func sessionA(s server, a op, at point) locktest.SessionA {
	return func(ctx context.Context, pause func()) error {
		var mu sync.Mutex
		seen := map[string]int{}
		tr := &driver.StatementTrace{Before: func(_ context.Context, name string) error {
			mu.Lock()
			seen[name]++
			hit := at.name != "" && name == at.name && seen[name] == at.k
			mu.Unlock()
			if hit {
				pause()
			}
			return nil
		}}
		if a.pool {
			return a.run(driver.WithStatementTrace(ctx, tr), s.drv.Executor())
		}
		tx, err := s.drv.Begin(ctx)
		if err != nil {
			return err
		}
		if err := a.run(driver.WithStatementTrace(ctx, tr), tx); err != nil {
			_ = tx.Rollback()
			return err
		}
		if at.name == "" {
			pause()
		}
		return tx.Commit()
	}
}

// TestWriterPairs: for every pair of writers that can touch the same rows,
// in both orders, A pauses holding its locks at every point between its
// statements; B runs and is seen waiting (or finishes, when it must not
// wait: a SKIP LOCKED claim); A continues; neither may fail, least of all
// with a deadlock.
func TestWriterPairs(t *testing.T) {
	for _, s := range servers(t) {
		// The servers run side by side; one server's groups one after
		// the other, on its one data set.
		var one sync.Mutex
		for _, g := range pairGroups() {
			t.Run(s.name+g.suffix, func(t *testing.T) {
				t.Parallel()
				one.Lock()
				defer one.Unlock()
				runPairs(t, s, g.pairs())
			})
		}
	}
}

// pairGroup is a group of pairs run as one subtest per server.
type pairGroup struct {
	suffix string
	pairs  func() []pair
}

// pairGroups are every writer pair, grouped. The process rows' writers are
// a group of their own per server ("MariaDB processes"), so that
// -run 'TestWriterPairs/.*process' runs just them.
func pairGroups() []pairGroup {
	return []pairGroup{
		{"", func() []pair { return append(pairs(), limitPairs()...) }},
		{" claim after", claimAfterPairs},
		{" processes", processPairs},
		{" bulk", bulkPairs},
	}
}

// runPairs runs each pair on one server, at each of A's pause points.
func runPairs(t *testing.T, s server, ps []pair) {
	for _, p := range ps {
		for _, at := range pausePoints(t, s, p.a) {
			t.Run(fmt.Sprintf("%s × %s, A paused %s", p.a.name, p.b.name, at), func(t *testing.T) {
				loadAlmostDone(t, s)
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				out, err := locktest.Interleave(ctx, s.observer.DB(), s.flavor, sessionA(s, p.a, at), func(ctx context.Context) error {
					return p.b.run(ctx, s.drv.Executor())
				})
				require.NoError(t, err)
				for _, e := range []*error{&out.ErrA, &out.ErrB} {
					if *e != nil {
						require.NotEqual(t, rowtype.ErrorDeadlock, s.drv.ClassifyError(*e), "deadlock: %v", *e)
					}
					if p.duplicateOK && rowtype.KindOf(*e) == rowtype.ErrorDuplicate {
						*e = nil
					}
				}
				require.NoError(t, out.ErrA, "A: %s", p.a.name)
				require.NoError(t, out.ErrB, "B: %s", p.b.name)
				if p.always != nil {
					p.always(t, s)
				}
				if at.end {
					want := p.bWaits
					if w, ok := p.waitsOn[s.flavor]; ok {
						want = w
					}
					require.Equal(t, want, out.BWaited, "did B (%s) wait for A (%s)? waits seen: %v", p.b.name, p.a.name, out.Waits)
					if p.checkEnd != nil {
						p.checkEnd(t, s)
					}
				}
				for _, w := range out.Waits {
					t.Logf("seen: %s", w)
				}
			})
		}
	}
}

// The writers of limited queues (loadLimited's queues "limited" and
// "keyed"). A claim's grace for jobs cancelled while running is ten
// minutes: 7107's heartbeat, written by the fixture, stays inside it
// however slowly a loaded machine runs the interleaving. Those that run several transactions — the limited claim and
// every write that moves a keyed job out of RUNNING, each followed by the
// release of its key — run on the pool as the client issues them.
func limitedClaimOf(queue string, max int, lim rowtype.QueueLimits) op {
	return op{name: fmt.Sprintf("limited claim of %d from %s", max, queue), run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobClaimLimited(ctx, &driver.JobClaimParams{Queue: queue, Max: max, Limits: lim, Grace: 10 * time.Minute})
		return err
	}, pool: true}
}

// finishKeyed is a worker's result for 7101 (key a) and the release of a
// after it.
func finishKeyed(status rowtype.JobStatus, snooze bool) op {
	return finishKeyedOf("limited", limRunning, "a", status, snooze)
}

// finishKeyedOf is a worker's result for id, a RUNNING job of queue with
// key, and the release of the key after it.
func finishKeyedOf(queue string, id int64, key string, status rowtype.JobStatus, snooze bool) op {
	name := "finish " + string(status)
	if snooze {
		name = "snooze"
	}
	return op{name: fmt.Sprintf("%s %d (key %s) + release", name, id, key), run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: id, Attempt: 1, Status: status, Snooze: snooze, RetryAfter: time.Second, Error: "boom",
			Queue: queue, LimitKey: key})
		return err
	}, pool: true}
}

// keyedFinishesOf are every finish of id (DONE, batched DONE, FAILED,
// retry, snooze), each followed by its key's release.
func keyedFinishesOf(queue string, id int64, key string) []op {
	return []op{finishKeyedOf(queue, id, key, rowtype.StatusDone, false), completeManyKeyedOf(queue, id, key), finishKeyedOf(queue, id, key, rowtype.StatusFailed, false),
		finishKeyedOf(queue, id, key, rowtype.StatusPending, false), finishKeyedOf(queue, id, key, rowtype.StatusPending, true)}
}

// completeManyKeyedOf is the client's batched DONE of id alone, and the
// release of its key after it.
func completeManyKeyedOf(queue string, id int64, key string) op {
	return op{name: fmt.Sprintf("complete many %d (key %s) + release", id, key), run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobCompleteMany(ctx, []driver.JobRef{{ID: id, Attempt: 1, Queue: queue, LimitKey: key}})
		return err
	}, pool: true}
}

// jobReleaseOf is a worker stopping after its RUNNING job id (of queue,
// with key) was cancelled: the slot it held is free now, and the key's
// BLOCKED job may go.
func jobReleaseOf(queue string, id int64, key string) op {
	return op{name: fmt.Sprintf("job release %d (key %s) + release", id, key), run: func(ctx context.Context, ex driver.Executor) error {
		return ex.JobRelease(ctx, driver.JobRef{ID: id, Attempt: 1, Queue: queue, LimitKey: key})
	}, pool: true}
}

func sweepOf(queue string) op {
	return op{name: "limit sweep of " + queue, run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.LimitSweep(ctx, queue)
		return err
	}, pool: true}
}

// removeSettingsOf deletes the queue's settings row (queues remove), in a
// statement of its own like setLimitsOf.
func removeSettingsOf(queue string) op {
	return op{name: "remove settings of " + queue, run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.QueueDelete(ctx, queue)
		return err
	}}
}

// setLimitsOf writes the queue's row in a transaction of its own; in the
// harness's it holds the row until A commits.
func setLimitsOf(queue string, lim rowtype.QueueLimits) op {
	return op{name: "set limits of " + queue, run: func(ctx context.Context, ex driver.Executor) error {
		return ex.QueueSetLimits(ctx, queue, lim)
	}}
}

func cancelJobReleasing(id int64, what string) op {
	return op{name: fmt.Sprintf("cancel job %d (%s) + release", id, what), run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobCancel(ctx, id)
		return err
	}, pool: true}
}

var (
	limitedClaim = limitedClaimOf("limited", 4, limitedLimits)
	keyedClaim   = limitedClaimOf("keyed", 1, keyedLimits)
	// plainClaimLimited is a claim that does not know the queue's limits:
	// a process whose cached limits are older than the queue's. It meets
	// the same rows; it is not bound by the limits (no invariant is
	// checked against it).
	plainClaimLimited = op{name: "plain claim of 2 from limited", run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "limited", Max: 2})
		return err
	}}
	completeManyKeyed = completeManyKeyedOf("limited", limRunning, "a")
	// reapReleasing reaps every RUNNING job with an old heartbeat, 5500 of
	// the queue "default" and one of each limited queue with RUNNING jobs,
	// and then releases their keys, queue by queue in name order.
	reapReleasing    = op{name: "reap (5500, 7101 key a, 9101 key s1, 9201 key r1) + release", run: reap.run, pool: true}
	cancelRunLimited = op{name: "cancel run 8 + release", run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.RunCancel(ctx, limitedRun)
		return err
	}, pool: true}
	// jobRelease is the worker's release of 7107 (key d).
	jobRelease     = jobReleaseOf("limited", limCancelledD, "d")
	sweep          = sweepOf("limited")
	removeSettings = removeSettingsOf("limited")
	// flushHistory and flushHistoryReversed are two clients' flushes over
	// the same two rows, handed over in opposite orders: each writes its
	// rows in primary-key order, so the second waits for the first at the
	// first row and never holds the other. pruneHistory is retention's
	// delete of old minutes, the same rows.
	flushHistory = op{name: "flush history (a, b)", run: func(ctx context.Context, ex driver.Executor) error {
		return ex.HistoryAdd(ctx, historyRows(false))
	}}
	flushHistoryReversed = op{name: "flush history (b, a)", run: func(ctx context.Context, ex driver.Executor) error {
		return ex.HistoryAdd(ctx, historyRows(true))
	}}
	pruneHistory = op{name: "prune history", run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.HistoryPrune(ctx, historyOld.Add(time.Hour), 1000)
		return err
	}}
	setLimits = setLimitsOf("limited", limitedLimits)
)

// limitPairs: the limited claim (queue row → jobs SKIP LOCKED → key rows
// SKIP LOCKED → its own jobs by primary key), the releases (key row →
// BLOCKED jobs by primary key) and the worker's release against the
// claims, finishes, reap, cancels, the sweep and each other. Nothing that
// holds a job row waits for a key's or a queue's row: where B waits, it
// waits holding nothing A needs.
func limitPairs() []pair {
	var out []pair
	keyedFinishes := keyedFinishesOf("limited", limRunning, "a")
	for _, f := range keyedFinishes {
		out = append(out,
			// The claim holds key a; the finish's release waits for it.
			pair{a: limitedClaim, b: f, bWaits: true, always: limitsHold},
			// The release holds key a and 7103; the claim skips both.
			pair{a: f, b: limitedClaim, bWaits: false, always: limitsHold},
		)
	}
	cancelPendingA := cancelJobReleasing(limPendingA, "PENDING, key a")
	cancelRunningA := cancelJobReleasing(limRunning, "RUNNING, key a")
	cancelBlockedA := cancelJobReleasing(limBlockedA, "BLOCKED, key a")
	cancelBlockedD := cancelJobReleasing(limBlockedD, "BLOCKED, key d")
	doneKeyed := keyedFinishes[0]
	out = append(out,
		// Two claims of a queue with a global limit: one at a time, on
		// the queue's row, which the second waits for holding nothing.
		pair{a: limitedClaim, b: limitedClaim, bWaits: true, always: limitsHold},
		// Two claims of a queue with per-key limits only: side by side,
		// on different jobs and keys, each skipping the other's.
		pair{a: keyedClaim, b: keyedClaim, bWaits: false, always: limitsHold},
		// A claim that does not know the limits, against one that does.
		pair{a: limitedClaim, b: plainClaimLimited, bWaits: false},
		pair{a: plainClaimLimited, b: limitedClaim, bWaits: false},
		// The reaper's write, then its release of a.
		pair{a: limitedClaim, b: reapReleasing, bWaits: true, always: limitsHold},
		pair{a: reapReleasing, b: limitedClaim, bWaits: false, always: limitsHold},
		// Cancels: of a candidate the claim holds, and of the RUNNING job
		// whose release then waits for a.
		pair{a: limitedClaim, b: cancelPendingA, bWaits: true, always: limitsHold, checkEnd: finalIs(limPendingA, rowtype.StatusCancelled)},
		pair{a: cancelPendingA, b: limitedClaim, bWaits: false, always: limitsHold, checkEnd: finalIs(limPendingA, rowtype.StatusCancelled)},
		pair{a: limitedClaim, b: cancelRunningA, bWaits: true, always: limitsHold},
		pair{a: cancelRunningA, b: limitedClaim, bWaits: false, always: limitsHold},
		pair{a: limitedClaim, b: cancelRunLimited, bWaits: true, always: limitsHold, checkEnd: runSettled(limitedRun)},
		pair{a: cancelRunLimited, b: limitedClaim, bWaits: false, always: limitsHold, checkEnd: runSettled(limitedRun)},
		// The worker's release of 7107 and the sweep release d, which the
		// claim holds (it has 7109 of d among its candidates).
		pair{a: limitedClaim, b: jobRelease, bWaits: true, always: limitsHold},
		pair{a: jobRelease, b: limitedClaim, bWaits: false, always: limitsHold},
		pair{a: limitedClaim, b: sweep, bWaits: true, always: limitsHold},
		pair{a: sweep, b: limitedClaim, bWaits: false, always: limitsHold},
		// Limits changed while a claim decides by them.
		pair{a: limitedClaim, b: setLimits, bWaits: true, always: limitsHold},
		pair{a: setLimits, b: limitedClaim, bWaits: true, always: limitsHold},
		// The settings removed while a claim decides by them, and against
		// the other writers of the row: it is the only row either holds.
		pair{a: limitedClaim, b: removeSettings, bWaits: true, always: limitsHold},
		// (The claim that waited reads no limits once the row is gone,
		// and claims as an unlimited queue's does: the old limits no
		// longer bind it.)
		pair{a: removeSettings, b: limitedClaim, bWaits: true},
		pair{a: removeSettings, b: setLimits, bWaits: true},
		pair{a: setLimits, b: removeSettings, bWaits: true},
		pair{a: sweep, b: removeSettings, bWaits: false, always: limitsHold},
		pair{a: removeSettings, b: sweep, bWaits: false, always: limitsHold},
		// Releases against each other: the key's row, waited for holding
		// nothing.
		pair{a: doneKeyed, b: sweep, bWaits: true, always: limitsHold},
		pair{a: sweep, b: jobRelease, bWaits: true, always: limitsHold},
		pair{a: jobRelease, b: sweep, bWaits: true, always: limitsHold},
		// Releases against the writers of the jobs they unblock: a cancel
		// of the BLOCKED job, a cancel of the run; and the plain claim.
		pair{a: doneKeyed, b: cancelBlockedA, bWaits: true, always: limitsHold, checkEnd: finalIs(limBlockedA, rowtype.StatusCancelled)},
		pair{a: cancelBlockedA, b: doneKeyed, bWaits: true, always: limitsHold, checkEnd: finalIs(limBlockedA, rowtype.StatusCancelled)},
		pair{a: jobRelease, b: cancelBlockedD, bWaits: true, always: limitsHold, checkEnd: finalIs(limBlockedD, rowtype.StatusCancelled)},
		pair{a: cancelBlockedD, b: jobRelease, bWaits: true, always: limitsHold, checkEnd: finalIs(limBlockedD, rowtype.StatusCancelled)},
		pair{a: doneKeyed, b: cancelRunLimited, bWaits: true, always: limitsHold, checkEnd: runSettled(limitedRun)},
		pair{a: cancelRunLimited, b: doneKeyed, bWaits: true, always: limitsHold, checkEnd: finalIs(limRunning, rowtype.StatusCancelled)},
		pair{a: jobRelease, b: cancelRunLimited, bWaits: true, always: limitsHold, checkEnd: runSettled(limitedRun)},
		pair{a: cancelRunLimited, b: jobRelease, bWaits: true, always: limitsHold, checkEnd: runSettled(limitedRun)},
		// History: flush × flush over the same rows in both orders, and
		// flush × retention; the rollup's rows are locked by nothing else.
		pair{a: flushHistory, b: flushHistoryReversed, bWaits: true},
		pair{a: flushHistoryReversed, b: flushHistory, bWaits: true},
		pair{a: flushHistory, b: flushHistory, bWaits: true},
		pair{a: flushHistory, b: pruneHistory, bWaits: true},
		pair{a: pruneHistory, b: flushHistory, bWaits: true},
		pair{a: doneKeyed, b: plainClaimLimited, bWaits: false},
		pair{a: plainClaimLimited, b: doneKeyed, bWaits: false},
		// A keyed job's writers meeting on its row, then on its key.
		pair{a: cancelRunningA, b: doneKeyed, bWaits: true, always: limitsHold, checkEnd: finalIs(limRunning, rowtype.StatusCancelled)},
		pair{a: doneKeyed, b: cancelRunningA, bWaits: false, always: limitsHold, checkEnd: finalIs(limRunning, rowtype.StatusDone)},
		pair{a: reapReleasing, b: doneKeyed, bWaits: false, always: limitsHold, checkEnd: finalIs(limRunning, rowtype.StatusPending)},
		pair{a: doneKeyed, b: reapReleasing, bWaits: false, always: limitsHold, checkEnd: finalIs(limRunning, rowtype.StatusDone)},
	)
	out = append(out, sequencedQueue.pairs()...)
	return append(out, ratedQueue.pairs()...)
}

// claimedQueue is one limited queue's claim and the writers of the rows it
// locks: every finish of its RUNNING job, a cancel of a PENDING job the
// claim locks and of the RUNNING one, the worker's release of a job
// cancelled while running, the sweep, and the writers of its settings
// row, all releasing the keys the claim holds.
type claimedQueue struct {
	claim                                 op
	finishes                              []op
	cancelPending, cancelRunning, release op
	sweep, setLimits, removeSettings      op
	pending                               int64
	// queueRow: the claim locks the queue's settings row first (a global
	// concurrency or a queue-wide rate limit).
	queueRow bool
}

var (
	// The claim through the sequences' heads: no queue row, then its jobs
	// and keys SKIP LOCKED, then limit.key_running, limit.cancelling and
	// limit.sequence_head under the keys' rows.
	sequencedQueue = claimedQueue{
		claim:          limitedClaimOf("sequenced", 4, sequencedLimits),
		finishes:       keyedFinishesOf("sequenced", seqRunning, "s1"),
		cancelPending:  cancelJobReleasing(seqPending, "PENDING, key s1"),
		cancelRunning:  cancelJobReleasing(seqRunning, "RUNNING, key s1"),
		release:        jobReleaseOf("sequenced", seqCancelled, "s4"),
		sweep:          sweepOf("sequenced"),
		setLimits:      setLimitsOf("sequenced", sequencedLimits),
		removeSettings: removeSettingsOf("sequenced"),
		pending:        seqPending,
	}
	// The claim through the queue-wide rate window: the queue's row, the
	// clock and the queue's window (rate.window), its jobs and keys SKIP
	// LOCKED, and after its jobs the queue's starts (rate.insert,
	// rate.prune), all under the queue's row.
	ratedQueue = claimedQueue{
		claim:          limitedClaimOf("rated", 4, ratedLimits),
		finishes:       keyedFinishesOf("rated", ratedRunning, "r1"),
		cancelPending:  cancelJobReleasing(ratedPending, "PENDING, key r1"),
		cancelRunning:  cancelJobReleasing(ratedRunning, "RUNNING, key r1"),
		release:        jobReleaseOf("rated", ratedCancelled, "r3"),
		sweep:          sweepOf("rated"),
		setLimits:      setLimitsOf("rated", ratedLimits),
		removeSettings: removeSettingsOf("rated"),
		pending:        ratedPending,
		queueRow:       true,
	}
)

// pairs are q's claim against each of its writers, in both orders, and
// against itself. Where the claim comes first it holds the keys of its
// candidates (s1–s4, r1–r3), and every release of one of them waits for
// it holding nothing; where a release comes first the claim skips the key
// it holds. Only a claim that locks the queue's row waits for it: for the
// other claim of the queue and for the writers of the row.
func (q claimedQueue) pairs() []pair {
	var out []pair
	for _, f := range q.finishes {
		out = append(out,
			// The claim holds the finished job's key; the release waits.
			pair{a: q.claim, b: f, bWaits: true, always: limitsHold},
			// The release holds the key (and the job it unblocks); the
			// claim skips both.
			pair{a: f, b: q.claim, bWaits: false, always: limitsHold},
		)
	}
	return append(out,
		// Two claims: one at a time on the queue's row, or side by side
		// on different jobs and keys. The second claim of the rated queue
		// finds the window the first filled.
		pair{a: q.claim, b: q.claim, bWaits: q.queueRow, always: limitsHold},
		// The reaper's write, then its release of the RUNNING job's key.
		pair{a: q.claim, b: reapReleasing, bWaits: true, always: limitsHold},
		pair{a: reapReleasing, b: q.claim, bWaits: false, always: limitsHold},
		// Cancels: of a candidate the claim holds, and of the RUNNING job
		// whose release then waits for its key.
		pair{a: q.claim, b: q.cancelPending, bWaits: true, always: limitsHold, checkEnd: finalIs(q.pending, rowtype.StatusCancelled)},
		pair{a: q.cancelPending, b: q.claim, bWaits: false, always: limitsHold, checkEnd: finalIs(q.pending, rowtype.StatusCancelled)},
		pair{a: q.claim, b: q.cancelRunning, bWaits: true, always: limitsHold},
		pair{a: q.cancelRunning, b: q.claim, bWaits: false, always: limitsHold},
		// The worker's release and the sweep release the key of the job
		// cancelled while running, which the claim holds.
		pair{a: q.claim, b: q.release, bWaits: true, always: limitsHold},
		pair{a: q.release, b: q.claim, bWaits: false, always: limitsHold},
		pair{a: q.claim, b: q.sweep, bWaits: true, always: limitsHold},
		pair{a: q.sweep, b: q.claim, bWaits: false, always: limitsHold},
		// The settings changed or removed while a claim decides by them.
		// A claim that reads them without a lock reads the row as last
		// committed and claims by it; one that waited for the row and
		// found it removed claims as an unlimited queue's does (the old
		// limits no longer bind it).
		pair{a: q.claim, b: q.setLimits, bWaits: q.queueRow, always: limitsHold},
		pair{a: q.setLimits, b: q.claim, bWaits: q.queueRow, always: limitsHold},
		pair{a: q.claim, b: q.removeSettings, bWaits: q.queueRow, always: limitsHold},
		q.removeThenClaim(),
	)
}

func (q claimedQueue) removeThenClaim() pair {
	p := pair{a: q.removeSettings, b: q.claim, bWaits: q.queueRow}
	if !q.queueRow {
		p.always = limitsHold
	}
	return p
}

// The writers of process rows (lockstep_processes; planguard.Load
// registers planguard-1 … planguard-20, the heartbeat of planguard-n n
// seconds old) and the claim that names its process in claimed_by. Each
// process statement writes one row of lockstep_processes by primary key
// and never a job row; the claim writes job rows only: the two never wait
// for each other.
var (
	claimAsProcess = op{name: "claim as process planguard-1", run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "default", Max: 2, ProcessID: "planguard-1"})
		return err
	}}
	limitedClaimAsProcess = op{name: "limited claim as process planguard-1", run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobClaimLimited(ctx, &driver.JobClaimParams{Queue: "limited", Max: 2, Limits: rowtype.QueueLimits{Concurrency: 3}, Grace: 10 * time.Minute, ProcessID: "planguard-1"})
		return err
	}, pool: true}
	processInsert = op{name: "process insert of planguard-new", run: func(ctx context.Context, ex driver.Executor) error {
		return ex.ProcessInsert(ctx, &rowtype.ProcessRow{ID: "planguard-new", Host: "planguard", PID: 1, Version: "(devel)", Queues: "default=1", Workers: 1})
	}}
	processBeat = func(id string) op {
		return op{name: "process heartbeat of " + id, run: func(ctx context.Context, ex driver.Executor) error {
			_, err := ex.ProcessHeartbeat(ctx, id)
			return err
		}}
	}
	processDelete = op{name: "process delete of planguard-1", run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.ProcessDelete(ctx, "planguard-1")
		return err
	}}
	// processPrune deletes the processes silent for over 5 seconds
	// (planguard-6 … planguard-20), each by primary key if still silent.
	processPrune = op{name: "process prune older than 5s", run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.ProcessPrune(ctx, 5*time.Second, 100)
		return err
	}}
)

// processRowIs checks whether a process's row is there at the end.
func processRowIs(id string, want bool) func(t *testing.T, s server) {
	return func(t *testing.T, s server) {
		list, err := s.drv.Executor().ProcessList(context.Background())
		require.NoError(t, err)
		found := false
		for _, p := range list.Processes {
			found = found || p.ID == id
		}
		require.Equal(t, want, found, "process %s registered", id)
	}
}

func processPairs() []pair {
	beat1, beat20 := processBeat("planguard-1"), processBeat("planguard-20")
	var out []pair
	// Against the claims, plain and limited, and the job heartbeat: other
	// tables, no wait either way.
	for _, w := range []op{beat1, processInsert, processDelete, processPrune} {
		out = append(out,
			pair{a: claimAsProcess, b: w, bWaits: false},
			pair{a: w, b: claimAsProcess, bWaits: false},
			pair{a: heartbeat, b: w, bWaits: false},
			pair{a: w, b: heartbeat, bWaits: false},
		)
	}
	out = append(out,
		pair{a: limitedClaimAsProcess, b: beat1, bWaits: false},
		pair{a: beat1, b: limitedClaimAsProcess, bWaits: false},
		// Against each other: one row by primary key; the same row waits.
		// A silent process that heartbeats while it is pruned keeps its
		// row (the prune's delete re-checks the heartbeat).
		pair{a: beat20, b: processPrune, bWaits: true, checkEnd: processRowIs("planguard-20", true)},
		pair{a: processPrune, b: beat20, bWaits: true, checkEnd: processRowIs("planguard-20", false)},
		pair{a: beat1, b: processDelete, bWaits: true, checkEnd: processRowIs("planguard-1", false)},
		pair{a: processDelete, b: beat1, bWaits: true, checkEnd: processRowIs("planguard-1", false)},
		pair{a: processInsert, b: processPrune, bWaits: false, checkEnd: processRowIs("planguard-new", true)},
		pair{a: processPrune, b: processInsert, bWaits: false, checkEnd: processRowIs("planguard-new", true)},
		pair{a: processInsert, b: beat1, bWaits: false},
		pair{a: beat1, b: processInsert, bWaits: false},
		pair{a: processPrune, b: processDelete, bWaits: false, checkEnd: processRowIs("planguard-1", false)},
		pair{a: processDelete, b: processPrune, bWaits: false, checkEnd: processRowIs("planguard-1", false)},
	)
	return out
}

// The claim after a key (a saturated queue's claim from where its previous
// one ended): the same locks as the claim from the head, in the same
// order, from a later place in the claim index.
var (
	// claimAfterHead starts before the queue's head, so it takes what the
	// claim takes (999 and 1000) and meets every writer the claim meets.
	claimAfterHead = op{name: "claim after a key before the head", run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "default", Max: 2, After: &driver.ClaimKey{Priority: math.MinInt16}})
		return err
	}}
	// claimPast999 starts after job 999, the head: it never reads 999's
	// entry, so it neither takes nor waits for it.
	claimPast999 = op{name: "claim after job 999's key", run: func(ctx context.Context, ex driver.Executor) error {
		j, err := ex.JobGet(ctx, pendingA)
		if err != nil {
			return err
		}
		k := driver.KeyOf(j)
		claimed, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "default", Max: 2, After: &k})
		for _, c := range claimed {
			if c.ID == pendingA {
				return fmt.Errorf("a claim after job %d's key took job %d", pendingA, pendingA)
			}
		}
		return err
	}}
)

// claimAfterPairs are the claim's pairs with the claim after a key in its
// place, the two claims against each other, and the claim past the head
// against the head's cancel, which it does not meet.
func claimAfterPairs() []pair {
	var out []pair
	for _, p := range pairs() {
		switch {
		case p.a.name == claim.name && p.b.name == claim.name:
			out = append(out, pair{a: claimAfterHead, b: claim}, pair{a: claim, b: claimAfterHead}, pair{a: claimAfterHead, b: claimAfterHead})
		case p.a.name == claim.name:
			p.a = claimAfterHead
			out = append(out, p)
		case p.b.name == claim.name:
			p.b = claimAfterHead
			out = append(out, p)
		}
	}
	return append(out,
		pair{a: claimPast999, b: cancelJobPending, bWaits: false, checkEnd: finalIs(pendingA, rowtype.StatusCancelled)},
		pair{a: cancelJobPending, b: claimPast999, bWaits: false, checkEnd: finalIs(pendingA, rowtype.StatusCancelled)},
	)
}
