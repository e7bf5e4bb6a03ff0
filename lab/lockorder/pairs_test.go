package lockorder_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
}

var (
	claim = op{"claim", func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "default", Max: 2})
		return err
	}}
	cancelRunOfPending = op{"cancel run 1", func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.RunCancel(ctx, runOfPending)
		return err
	}}
	cancelRunOfRunning = op{"cancel run 6", func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.RunCancel(ctx, runOfRunning)
		return err
	}}
	cancelJobPending = op{"cancel job 999", func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobCancel(ctx, pendingA)
		return err
	}}
	cancelJobRunning = op{"cancel job 5500", func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobCancel(ctx, running)
		return err
	}}
	reap = op{"reap", func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobReap(ctx, &driver.JobReapParams{StaleAfter: time.Minute, Max: 100})
		return err
	}}
	heartbeat = op{"heartbeat 5500", func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobHeartbeat(ctx, []driver.JobRef{{ID: running, Attempt: 1}})
		return err
	}}
	enqueueIntoRun = op{"enqueue into run 1", func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobInsertIntoRun(ctx, runOfPending, []driver.JobInsertParams{{Queue: "default", Kind: "k", Args: []byte(`{}`), MaxAttempts: 5}})
		if errors.Is(err, rowtype.ErrRunCancelled) {
			return nil // the run was cancelled first: refused, as it must be
		}
		return err
	}}
	retryFailed = op{"retry job 2", func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobRetry(ctx, failedInRun)
		if errors.Is(err, rowtype.ErrRunCancelled) {
			return nil // the run was cancelled first: refused, as it must be
		}
		return err
	}}
)

// The workflow's writers (loadWorkflow's run 3).
func finishFlow(id int64, status rowtype.JobStatus) op {
	return op{fmt.Sprintf("finish %s %d (with dependents)", status, id), func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: id, Attempt: 1, Status: status, Error: "boom", RunID: runOfFlow, Dependents: 1})
		return err
	}}
}

var (
	cancelRunOfFlow = op{"cancel run 3", func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.RunCancel(ctx, runOfFlow)
		return err
	}}
	cancelFlowJob = op{"cancel job 2997 (with dependents)", func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobCancel(ctx, flowRunA)
		return err
	}}
	retryFlowFailed = op{"retry job 2995 (revives 2996)", func(ctx context.Context, ex driver.Executor) error {
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
var insertWorkflow = op{"insert a workflow", func(ctx context.Context, ex driver.Executor) error {
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
	return op{fmt.Sprintf("enqueue unique as %d", id), func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobInsertUnique(ctx, 0, driver.JobInsertParams{Queue: "default", Kind: "k", Args: []byte(`{}`), MaxAttempts: 5, UniqueKey: uniqueKey(id), UniqueStates: 3})
		return err
	}}
}

// pruneFailed is retention deleting FAILED jobs (job 2 among them).
var pruneFailed = op{"prune FAILED", func(ctx context.Context, ex driver.Executor) error {
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
var completeMany = op{"complete many 5500", func(ctx context.Context, ex driver.Executor) error {
	_, err := ex.JobCompleteMany(ctx, []driver.JobRef{{ID: running, Attempt: 1}})
	return err
}}

func finish(status rowtype.JobStatus, snooze bool) op {
	name := "finish " + string(status)
	if snooze {
		name = "snooze"
	}
	return op{name + " 5500", func(ctx context.Context, ex driver.Executor) error {
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

// pausePoints runs a in a transaction that is rolled back, recording its
// statements, and returns where A can pause holding locks: before each
// statement that follows its first locking one, and at its end ("").
func pausePoints(t *testing.T, s server, a op) []string {
	ctx := context.Background()
	var names []string
	tr := &driver.StatementTrace{Before: func(_ context.Context, name string) error {
		names = append(names, name)
		return nil
	}}
	loadAlmostDone(t, s)
	tx, err := s.drv.Begin(ctx)
	require.NoError(t, err)
	err = a.run(driver.WithStatementTrace(ctx, tr), tx)
	require.NoError(t, tx.Rollback())
	require.NoError(t, err)
	var points []string
	locked := false
	for _, n := range names {
		if locked && !slices.Contains(points, n) {
			points = append(points, n)
		}
		if st, ok := s.drv.Catalog().Lookup(n); ok && st.Locks {
			locked = true
		}
	}
	return append(points, "")
}

// sessionA runs a inside a transaction, pausing before statement pauseAt
// (or after its last statement, when pauseAt is ""), then commits.
func sessionA(s server, a op, pauseAt string) locktest.SessionA {
	return func(ctx context.Context, pause func()) error {
		tx, err := s.drv.Begin(ctx)
		if err != nil {
			return err
		}
		var mu sync.Mutex
		tr := &driver.StatementTrace{Before: func(_ context.Context, name string) error {
			mu.Lock()
			hit := name == pauseAt
			mu.Unlock()
			if hit {
				pause()
			}
			return nil
		}}
		if err := a.run(driver.WithStatementTrace(ctx, tr), tx); err != nil {
			_ = tx.Rollback()
			return err
		}
		if pauseAt == "" {
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
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			for _, p := range pairs() {
				for _, at := range pausePoints(t, s, p.a) {
					where := "at its end"
					if at != "" {
						where = "before " + at
					}
					t.Run(fmt.Sprintf("%s × %s, A paused %s", p.a.name, p.b.name, where), func(t *testing.T) {
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
						if at == "" {
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
		})
	}
}
