package lockstep_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/internal/clienttest"
	"github.com/lockstep-queue/lockstep/lockdiag/locktest"
	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
)

// stepArgs is a workflow step; Fail makes its worker fail for good.
type stepArgs struct {
	Name string `json:"name"`
	Fail bool   `json:"fail,omitempty"`
}

func (stepArgs) Kind() string { return "step" }

// cbData is a callback's data.
type cbData struct {
	To string `json:"to"`
}

func (cbData) Kind() string { return "report" }

// flowLedger records when each job started and ended, by the workers'
// clock: the check that no job started before its dependencies ended.
type flowLedger struct {
	mu     sync.Mutex
	starts map[int64][]time.Time
	ends   map[int64]time.Time
}

func newFlowLedger() *flowLedger {
	return &flowLedger{starts: map[int64][]time.Time{}, ends: map[int64]time.Time{}}
}

func (l *flowLedger) start(id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.starts[id] = append(l.starts[id], time.Now())
}

func (l *flowLedger) end(id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ends[id] = time.Now()
}

func jobStatus(t *testing.T, drv driver.Driver, id int64) lockstep.JobStatus {
	t.Helper()
	j, err := drv.Executor().JobGet(context.Background(), id)
	require.NoError(t, err)
	return j.Status
}

func fanParams(width int) []lockstep.InsertManyParams {
	params := []lockstep.InsertManyParams{{Args: stepArgs{Name: "root"}, Key: "root"}}
	var mids []string
	for i := range width {
		k := fmt.Sprintf("mid-%d", i)
		mids = append(mids, k)
		params = append(params, lockstep.InsertManyParams{Args: stepArgs{Name: k}, Key: k, DependsOn: []string{"root"}})
	}
	return append(params, lockstep.InsertManyParams{Args: stepArgs{Name: "join"}, Key: "join", DependsOn: mids})
}

// TestWorkflowFanOutFanIn: 1 → 1,000 → 1 across three clients (three
// pools, as three processes): every job runs once, the fan-in job last,
// and no job starts before each of its dependencies has ended.
func TestWorkflowFanOutFanIn(t *testing.T) {
	forEachDialectN(t, 3, func(t *testing.T, drvs []driver.Driver) {
		const width = 1000
		ctx := context.Background()
		ledger := newFlowLedger()
		var promoted atomic.Int64
		for _, drv := range drvs {
			ws := lockstep.NewWorkers()
			lockstep.AddWorker(ws, lockstep.WorkFunc(func(ctx context.Context, j *lockstep.Job[stepArgs]) error {
				ledger.start(j.ID)
				defer ledger.end(j.ID)
				return nil
			}))
			cfg := clienttest.FastConfig(ws)
			cfg.Queues = map[string]lockstep.QueueConfig{lockstep.DefaultQueue: {MaxWorkers: 8}}
			cfg.ReapAfter = time.Minute
			cfg.OnEvent = func(e lockstep.Event) {
				if e.Kind == lockstep.EventPromoted {
					promoted.Add(int64(e.Count))
				}
			}
			clienttest.StartClient(t, drv, cfg)
		}
		c := quietClient(t, drvs[0], lockstep.Config{})
		run, res, err := c.InsertRun(ctx, "fan", nil, fanParams(width)...)
		require.NoError(t, err)
		require.Len(t, res, width+2)
		root, join := res[0].ID, res[width+1].ID
		require.Less(t, root, res[1].ID, "a dependency is inserted before its dependents")
		require.Less(t, res[width].ID, join)

		eventually(t, 3*time.Minute, "the fan-in job DONE", func() bool {
			return jobStatus(t, drvs[0], join) == lockstep.StatusDone
		})
		_, counts, err := c.Run(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, lockstep.RunCounts{lockstep.StatusDone: width + 2}, counts)
		require.EqualValues(t, width+1, promoted.Load(), "each mid job once, by the root's end; the fan-in job once")

		ledger.mu.Lock()
		defer ledger.mu.Unlock()
		for _, r := range res {
			require.Len(t, ledger.starts[r.ID], 1, "job %d ran once", r.ID)
		}
		for _, r := range res[1 : width+1] {
			require.False(t, ledger.starts[r.ID][0].Before(ledger.ends[root]), "mid job %d started before the root ended", r.ID)
			require.False(t, ledger.starts[join][0].Before(ledger.ends[r.ID]), "the fan-in job started before mid job %d ended", r.ID)
		}
	})
}

// TestWorkflowRefusals: what InsertRun refuses before writing anything.
func TestWorkflowRefusals(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		c := quietClient(t, drv, lockstep.Config{})
		step := func(key string, deps ...string) lockstep.InsertManyParams {
			return lockstep.InsertManyParams{Args: stepArgs{Name: key}, Key: key, DependsOn: deps}
		}
		for _, tc := range []struct {
			name string
			jobs []lockstep.InsertManyParams
			opts *lockstep.RunOpts
			want string
		}{
			{"cycle", []lockstep.InsertManyParams{step("a", "c"), step("b", "a"), step("c", "b")}, nil, `cycle (→: depends on): "a" → "c" → "b" → "a"`},
			{"self", []lockstep.InsertManyParams{step("a", "a")}, nil, `job 0 ("a") depends on itself`},
			{"unknown key", []lockstep.InsertManyParams{step("a"), step("b", "elsewhere")}, nil, `depends on "elsewhere", which names no job of this run`},
			{"key twice", []lockstep.InsertManyParams{step("a"), step("a")}, nil, `key "a" is used twice`},
			{"unique in a workflow", []lockstep.InsertManyParams{
				{Args: stepArgs{Name: "u"}, Key: "u", Opts: &lockstep.InsertOpts{Unique: &lockstep.UniqueOpts{}}}, step("b", "u"),
			}, nil, "a unique job cannot be part of a workflow"},
			{"callbacks without jobs", nil, &lockstep.RunOpts{Callbacks: []lockstep.RunCallback{{On: lockstep.CallbackOnComplete, Args: cbData{}}}}, "a run with callbacks needs at least one job"},
			{"unknown condition", []lockstep.InsertManyParams{step("a")}, &lockstep.RunOpts{Callbacks: []lockstep.RunCallback{{On: "sometimes", Args: cbData{}}}}, `callback 0: unknown condition "sometimes"`},
			{"policy without dependencies", []lockstep.InsertManyParams{{Args: stepArgs{}, OnDependencyFailure: lockstep.RunOnDependencyFailure}}, nil, "OnDependencyFailure is set but the job depends on nothing"},
		} {
			_, _, err := c.InsertRun(ctx, tc.name, tc.opts, tc.jobs...)
			require.ErrorIs(t, err, lockstep.ErrInvalidJob, tc.name)
			require.ErrorContains(t, err, tc.want, tc.name)
		}
		// A dependency across runs cannot be named: keys belong to one
		// InsertRun, and Insert/InsertMany take none.
		_, err := c.InsertMany(ctx, []lockstep.InsertManyParams{step("x"), step("y", "x")})
		require.ErrorIs(t, err, lockstep.ErrInvalidJob)
		require.ErrorContains(t, err, "are for the jobs of one InsertRun")
		require.Equal(t, 0, countWhere(t, drv, "kind = ?", "step"), "nothing was written")
		var runs int
		require.NoError(t, drv.DB().QueryRow("SELECT COUNT(*) FROM lockstep_runs").Scan(&runs))
		require.Zero(t, runs)

		// A run with callbacks takes no jobs after its creation.
		run, _, err := c.InsertRun(ctx, "closed", &lockstep.RunOpts{Callbacks: []lockstep.RunCallback{{On: lockstep.CallbackOnComplete, Args: cbData{}}}}, step("a"))
		require.NoError(t, err)
		_, err = c.Insert(ctx, stepArgs{Name: "late"}, &lockstep.InsertOpts{RunID: run.ID})
		require.ErrorIs(t, err, lockstep.ErrRunClosed)
		require.False(t, errors.Is(err, lockstep.ErrInvalidJob))
	})
}

// claimFinish claims every PENDING job of the default queue through the
// executor and finishes each with status, as a worker would.
func claimAll(t *testing.T, drv driver.Driver) map[int64]*lockstep.JobRow {
	t.Helper()
	got, err := drv.Executor().JobClaim(context.Background(), &driver.JobClaimParams{Queue: lockstep.DefaultQueue, Max: 100})
	require.NoError(t, err)
	out := map[int64]*lockstep.JobRow{}
	for _, j := range got {
		out[j.ID] = j
	}
	return out
}

func finishParams(j *lockstep.JobRow, status lockstep.JobStatus) *driver.JobFinishParams {
	p := &driver.JobFinishParams{ID: j.ID, Attempt: j.Attempts, Status: status, RunID: j.RunID, Dependents: j.Dependents}
	if status == lockstep.StatusFailed {
		p.Error = "failed on purpose"
	}
	return p
}

func finish(t *testing.T, drv driver.Driver, j *lockstep.JobRow, status lockstep.JobStatus) {
	t.Helper()
	ok, err := drv.Executor().JobFinish(context.Background(), finishParams(j, status))
	require.NoError(t, err)
	require.True(t, ok, "job %d finished", j.ID)
}

// TestWorkflowFailurePolicy: a FAILED dependency cancels the dependents
// that keep the default policy (and theirs, in turn), lets those that run
// anyway become PENDING; retrying it brings the cancelled ones back.
func TestWorkflowFailurePolicy(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		c := quietClient(t, drv, lockstep.Config{})
		_, res, err := c.InsertRun(ctx, "policy", nil,
			lockstep.InsertManyParams{Args: stepArgs{Name: "a"}, Key: "a"},
			lockstep.InsertManyParams{Args: stepArgs{Name: "b"}, Key: "b", DependsOn: []string{"a"}},
			lockstep.InsertManyParams{Args: stepArgs{Name: "c"}, Key: "c", DependsOn: []string{"a"}, OnDependencyFailure: lockstep.RunOnDependencyFailure},
			lockstep.InsertManyParams{Args: stepArgs{Name: "d"}, Key: "d", DependsOn: []string{"b", "c"}},
		)
		require.NoError(t, err)
		a, b, cc, d := res[0].ID, res[1].ID, res[2].ID, res[3].ID
		for _, id := range []int64{b, cc, d} {
			require.Equal(t, lockstep.StatusWaiting, jobStatus(t, drv, id))
		}
		claimed := claimAll(t, drv)
		require.Len(t, claimed, 1, "only the job with no dependency is claimable")
		finish(t, drv, claimed[a], lockstep.StatusFailed)

		require.Equal(t, lockstep.StatusCancelled, jobStatus(t, drv, b))
		require.Equal(t, lockstep.StatusPending, jobStatus(t, drv, cc), "c runs anyway")
		require.Equal(t, lockstep.StatusCancelled, jobStatus(t, drv, d), "d's dependency b was cancelled")
		jb, err := drv.Executor().JobGet(ctx, b)
		require.NoError(t, err)
		require.Contains(t, jb.LastError, fmt.Sprintf("dependency %d ended FAILED", a))

		// c runs and is DONE; then a is retried: b and d come back, b
		// waiting for a, d for b.
		claimed = claimAll(t, drv)
		finish(t, drv, claimed[cc], lockstep.StatusDone)
		ok, err := c.RetryJob(ctx, a)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, lockstep.StatusPending, jobStatus(t, drv, a))
		require.Equal(t, lockstep.StatusWaiting, jobStatus(t, drv, b))
		require.Equal(t, lockstep.StatusWaiting, jobStatus(t, drv, d))
		jd, err := drv.Executor().JobGet(ctx, d)
		require.NoError(t, err)
		require.Equal(t, 1, jd.WaitingOn, "d waits for b only: c is DONE")

		claimed = claimAll(t, drv)
		finish(t, drv, claimed[a], lockstep.StatusDone)
		claimed = claimAll(t, drv)
		require.Contains(t, claimed, b)
		finish(t, drv, claimed[b], lockstep.StatusDone)
		claimed = claimAll(t, drv)
		require.Contains(t, claimed, d)
		finish(t, drv, claimed[d], lockstep.StatusDone)
	})
}

// TestWorkflowReviveAfterTwoFailures: a job whose two dependencies both
// failed comes back only when both have been retried, whichever first.
func TestWorkflowReviveAfterTwoFailures(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		c := quietClient(t, drv, lockstep.Config{})
		_, res, err := c.InsertRun(ctx, "two failures", nil,
			lockstep.InsertManyParams{Args: stepArgs{Name: "x"}, Key: "x"},
			lockstep.InsertManyParams{Args: stepArgs{Name: "y"}, Key: "y"},
			lockstep.InsertManyParams{Args: stepArgs{Name: "z"}, Key: "z", DependsOn: []string{"x", "y"}},
		)
		require.NoError(t, err)
		x, y, z := res[0].ID, res[1].ID, res[2].ID
		claimed := claimAll(t, drv)
		finish(t, drv, claimed[x], lockstep.StatusFailed)
		finish(t, drv, claimed[y], lockstep.StatusFailed)
		require.Equal(t, lockstep.StatusCancelled, jobStatus(t, drv, z))
		for _, id := range []int64{y, x} {
			ok, err := c.RetryJob(ctx, id)
			require.NoError(t, err)
			require.True(t, ok)
		}
		jz, err := drv.Executor().JobGet(ctx, z)
		require.NoError(t, err)
		require.Equal(t, lockstep.StatusWaiting, jz.Status, "z is back once neither dependency blocks it")
		require.Equal(t, 2, jz.WaitingOn)
	})
}

// TestWorkflowCancel: cancelling a job cancels its dependents; cancelling
// the run cancels every waiting job too.
func TestWorkflowCancel(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		c := quietClient(t, drv, lockstep.Config{})
		run, res, err := c.InsertRun(ctx, "cancel", nil, fanParams(3)...)
		require.NoError(t, err)
		ok, err := c.CancelJob(ctx, res[1].ID)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, lockstep.StatusCancelled, jobStatus(t, drv, res[4].ID), "the fan-in job lost a dependency")
		require.Equal(t, lockstep.StatusWaiting, jobStatus(t, drv, res[2].ID))

		out, err := c.CancelRun(ctx, run.ID)
		require.NoError(t, err)
		require.ElementsMatch(t, []int64{res[0].ID, res[2].ID, res[3].ID}, out.Cancelled)
		_, counts, err := c.Run(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, lockstep.RunCounts{lockstep.StatusCancelled: 5}, counts)
	})
}

// TestRunCallbacks: a run's callbacks fire once, with the run's counts:
// on success and completion when every job is DONE; on failure at the
// first FAILED job, and on completion when the last job ends.
func TestRunCallbacks(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		c := quietClient(t, drv, lockstep.Config{})
		cbs := []lockstep.RunCallback{
			{On: lockstep.CallbackOnSuccess, Args: cbData{To: "ok"}, Opts: &lockstep.InsertOpts{Queue: "callbacks"}},
			{On: lockstep.CallbackOnFailure, Args: cbData{To: "pager"}, Opts: &lockstep.InsertOpts{Queue: "callbacks"}},
			{On: lockstep.CallbackOnComplete, Args: cbData{To: "log"}, Opts: &lockstep.InsertOpts{Queue: "callbacks"}},
		}
		callbackJobs := func(runID int64) map[string]*lockstep.JobRow {
			jobs, err := c.Jobs(ctx, lockstep.JobListParams{RunID: runID, Limit: 100})
			require.NoError(t, err)
			out := map[string]*lockstep.JobRow{}
			for _, j := range jobs {
				if j.Callback != "" {
					out[j.Callback] = j
				}
			}
			require.Len(t, out, 3)
			return out
		}
		decode := func(j *lockstep.JobRow) lockstep.CallbackArgs[cbData] {
			var a lockstep.CallbackArgs[cbData]
			require.NoError(t, json.Unmarshal(j.Args, &a))
			return a
		}

		// All DONE.
		run, _, err := c.InsertRun(ctx, "all-done", &lockstep.RunOpts{Callbacks: cbs},
			lockstep.InsertManyParams{Args: stepArgs{Name: "x"}}, lockstep.InsertManyParams{Args: stepArgs{Name: "y"}})
		require.NoError(t, err)
		for _, j := range callbackJobs(run.ID) {
			require.Equal(t, lockstep.StatusWaiting, j.Status)
		}
		claimed := claimAll(t, drv)
		require.Len(t, claimed, 2)
		for _, j := range claimed {
			finish(t, drv, j, lockstep.StatusDone)
		}
		got := callbackJobs(run.ID)
		require.Equal(t, lockstep.StatusPending, got["success"].Status)
		require.Equal(t, lockstep.StatusCancelled, got["failure"].Status)
		require.Equal(t, lockstep.StatusPending, got["complete"].Status)
		a := decode(got["success"])
		require.Equal(t, run.ID, a.RunID)
		require.Equal(t, lockstep.CallbackOnSuccess, a.On)
		require.Equal(t, lockstep.RunCounts{lockstep.StatusDone: 2}, a.Counts)
		require.Equal(t, "ok", a.Data.To)
		require.Equal(t, "report", a.Kind())

		// One FAILED: the failure callback fires at once; completion
		// waits for the other job.
		run, _, err = c.InsertRun(ctx, "one-fails", &lockstep.RunOpts{Callbacks: cbs},
			lockstep.InsertManyParams{Args: stepArgs{Name: "x"}}, lockstep.InsertManyParams{Args: stepArgs{Name: "y"}})
		require.NoError(t, err)
		claimed = claimAll(t, drv)
		require.Len(t, claimed, 2)
		var first, second *lockstep.JobRow
		for _, j := range claimed {
			if first == nil || j.ID < first.ID {
				first, second = j, first
			} else {
				second = j
			}
		}
		finish(t, drv, first, lockstep.StatusFailed)
		got = callbackJobs(run.ID)
		require.Equal(t, lockstep.StatusCancelled, got["success"].Status)
		require.Equal(t, lockstep.StatusPending, got["failure"].Status)
		require.Equal(t, lockstep.StatusWaiting, got["complete"].Status)
		require.Equal(t, lockstep.RunCounts{lockstep.StatusFailed: 1, lockstep.StatusRunning: 1}, decode(got["failure"]).Counts)
		finish(t, drv, second, lockstep.StatusDone)
		got = callbackJobs(run.ID)
		require.Equal(t, lockstep.StatusPending, got["complete"].Status)
		require.Equal(t, lockstep.RunCounts{lockstep.StatusFailed: 1, lockstep.StatusDone: 1}, decode(got["complete"]).Counts)
	})
}

// endTogether ends two claimed jobs at the same moment in two processes:
// A's transaction is paused before its commit, holding what it locked; B
// is seen waiting for it on the server (SQLite, with one writer, has B
// wait in BEGIN IMMEDIATE, which no lock table shows); then A commits.
// It returns how many promotions (job.promote) the two issued.
func endTogether(t *testing.T, drvs []driver.Driver, a, b *lockstep.JobRow) int {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	promotes := 0
	count := func(_ context.Context, name string) error {
		if name == "job.promote" {
			mu.Lock()
			promotes++
			mu.Unlock()
		}
		return nil
	}
	paused, resume := make(chan struct{}), make(chan struct{})
	ctxA := driver.WithStatementTrace(ctx, &driver.StatementTrace{Before: func(ctx context.Context, name string) error {
		if name == driver.TraceCommit {
			close(paused)
			<-resume
		}
		return count(ctx, name)
	}})
	ctxB := driver.WithStatementTrace(ctx, &driver.StatementTrace{Before: count})
	doneA := make(chan error, 1)
	go func() {
		_, err := drvs[0].Executor().JobFinish(ctxA, finishParams(a, lockstep.StatusDone))
		doneA <- err
	}()
	<-paused
	doneB := make(chan error, 1)
	go func() {
		_, err := drvs[1].Executor().JobFinish(ctxB, finishParams(b, lockstep.StatusDone))
		doneB <- err
	}()
	if drvs[0].Dialect() != "sqlite" {
		flavor, err := lockview.Detect(ctx, drvs[0].DB())
		require.NoError(t, err)
		locktest.WaitForLockWait(t, drvs[0].DB(), flavor, 30*time.Second)
	}
	close(resume)
	require.NoError(t, <-doneA)
	require.NoError(t, <-doneB)
	mu.Lock()
	defer mu.Unlock()
	return promotes
}

// TestWorkflowEndsTogether: the last two dependencies of a job end at the
// same moment in two processes, and so do the last two jobs of a run with
// a callback: the dependent is promoted once, the callback fires once.
func TestWorkflowEndsTogether(t *testing.T) {
	forEachDialectN(t, 2, func(t *testing.T, drvs []driver.Driver) {
		ctx := context.Background()
		c := quietClient(t, drvs[0], lockstep.Config{})
		_, res, err := c.InsertRun(ctx, "dependencies", nil,
			lockstep.InsertManyParams{Args: stepArgs{Name: "x"}, Key: "x"},
			lockstep.InsertManyParams{Args: stepArgs{Name: "y"}, Key: "y"},
			lockstep.InsertManyParams{Args: stepArgs{Name: "z"}, Key: "z", DependsOn: []string{"x", "y"}},
		)
		require.NoError(t, err)
		claimed := claimAll(t, drvs[0])
		require.Len(t, claimed, 2)
		require.Equal(t, 1, endTogether(t, drvs, claimed[res[0].ID], claimed[res[1].ID]), "z is promoted once")
		z, err := drvs[0].Executor().JobGet(ctx, res[2].ID)
		require.NoError(t, err)
		require.Equal(t, lockstep.StatusPending, z.Status)
		require.Zero(t, z.WaitingOn)
		finish(t, drvs[0], claimAll(t, drvs[0])[z.ID], lockstep.StatusDone)

		run, res, err := c.InsertRun(ctx, "callback",
			&lockstep.RunOpts{Callbacks: []lockstep.RunCallback{{On: lockstep.CallbackOnComplete, Args: cbData{To: "log"}, Opts: &lockstep.InsertOpts{Queue: "callbacks"}}}},
			lockstep.InsertManyParams{Args: stepArgs{Name: "p"}},
			lockstep.InsertManyParams{Args: stepArgs{Name: "q"}},
		)
		require.NoError(t, err)
		claimed = claimAll(t, drvs[1])
		require.Len(t, claimed, 2)
		require.Equal(t, 1, endTogether(t, drvs, claimed[res[0].ID], claimed[res[1].ID]), "the callback fires once")
		_, counts, err := c.Run(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, lockstep.RunCounts{lockstep.StatusDone: 2, lockstep.StatusPending: 1}, counts)
		cb := claimOneFrom(t, drvs[0].Executor(), "callbacks")
		var args lockstep.CallbackArgs[cbData]
		require.NoError(t, json.Unmarshal(cb.Args, &args))
		require.Equal(t, lockstep.RunCounts{lockstep.StatusDone: 2}, args.Counts)
	})
}

// TestDependencyOutputs: a job reads what its dependencies recorded.
func TestDependencyOutputs(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		got := make(chan []lockstep.DependencyOutput, 1)
		ws := lockstep.NewWorkers()
		lockstep.AddWorker(ws, lockstep.WorkFunc(func(ctx context.Context, j *lockstep.Job[stepArgs]) error {
			if j.Args.Name == "sum" {
				outs, err := lockstep.DependencyOutputs(ctx)
				if err != nil {
					return err
				}
				got <- outs
				return nil
			}
			return lockstep.RecordOutput(ctx, map[string]string{"from": j.Args.Name})
		}))
		cfg := clienttest.FastConfig(ws)
		c := clienttest.StartClient(t, drv, cfg)
		_, res, err := c.InsertRun(ctx, "outputs", nil,
			lockstep.InsertManyParams{Args: stepArgs{Name: "p"}, Key: "p"},
			lockstep.InsertManyParams{Args: stepArgs{Name: "q"}, Key: "q"},
			lockstep.InsertManyParams{Args: stepArgs{Name: "sum"}, DependsOn: []string{"q", "p"}},
		)
		require.NoError(t, err)
		var outs []lockstep.DependencyOutput
		select {
		case outs = <-got:
		case <-time.After(time.Minute):
			t.Fatal("the dependent never ran")
		}
		require.Len(t, outs, 2)
		require.Equal(t, res[0].ID, outs[0].ID)
		require.Equal(t, lockstep.StatusDone, outs[0].Status)
		require.JSONEq(t, `{"from":"p"}`, string(outs[0].Output))
		require.JSONEq(t, `{"from":"q"}`, string(outs[1].Output))

		_, err = lockstep.DependencyOutputs(ctx)
		require.ErrorIs(t, err, lockstep.ErrNoJobContext)
	})
}
