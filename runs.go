package lockstep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// A run's counts are bounded like every other count of the read model.
type (
	RunListParams    = rowtype.RunListParams
	BoundedRunCounts = rowtype.BoundedRunCounts
)

// RunCancelResult reports a cancelled run and the jobs it cancelled.
type RunCancelResult = rowtype.RunCancelResult

// RunOpts are a run's options.
type RunOpts struct {
	// Metadata is stored with the run as JSON.
	Metadata any
	// OnDependencyFailure is the run's dependency policy, which each job
	// may override; default CancelOnDependencyFailure.
	OnDependencyFailure DependencyPolicy
	// Callbacks are jobs the run enqueues when its jobs succeed, when one
	// fails, or when all have ended (RunCallback). A run with callbacks
	// takes no jobs after InsertRun: adding one returns ErrRunClosed.
	Callbacks []RunCallback
}

// InsertRun creates a run and its jobs in one transaction and returns the
// run and each job's result in input order. A unique job that is a
// duplicate stays where it is (in another run, or in none) and is flagged
// in its result.
//
// Jobs may depend on other jobs of the same call (InsertManyParams.Key and
// DependsOn): a workflow. A dependency on a key that names no job of the
// call, or a cycle, is refused with ErrInvalidJob before anything is
// written. The run's callbacks (RunOpts.Callbacks) are inserted after its
// jobs, WAITING until their condition holds; their ids are not among the
// results.
func (c *Client) InsertRun(ctx context.Context, name string, opts *RunOpts, jobs ...InsertManyParams) (*Run, []InsertResult, error) {
	if name == "" || len(name) > 255 {
		return nil, nil, fmt.Errorf("create run: %w: name must be 1 to 255 bytes, got %d", ErrInvalidJob, len(name))
	}
	if strings.ContainsFunc(name, func(r rune) bool { return unicode.IsControl(r) || r == utf8.RuneError }) {
		return nil, nil, fmt.Errorf("create run: %w: name %q contains a control or invalid character", ErrInvalidJob, name)
	}
	var meta []byte
	if opts != nil && opts.Metadata != nil {
		var err error
		if meta, err = json.Marshal(opts.Metadata); err != nil {
			return nil, nil, fmt.Errorf("create run: encode metadata: %w", err)
		}
	}
	var rows []driver.JobInsertParams
	var order []int // inserted position → input position; nil: the same
	if len(jobs) > 0 {
		plain := make([]InsertManyParams, len(jobs))
		for i, j := range jobs {
			plain[i] = InsertManyParams{Args: j.Args, Opts: j.Opts}
		}
		var runID int64
		var err error
		if rows, runID, err = c.prepareInsert(plain); err != nil {
			return nil, nil, fmt.Errorf("create run: %w", err)
		}
		if runID != 0 {
			return nil, nil, fmt.Errorf("create run: %w: jobs of a new run must not name a RunID", ErrInvalidJob)
		}
	}
	if opts != nil && len(opts.Callbacks) > 0 && len(jobs) == 0 {
		return nil, nil, fmt.Errorf("create run: %w: a run with callbacks needs at least one job", ErrInvalidJob)
	}
	if len(jobs) > 0 {
		var err error
		if rows, order, err = c.workflowOf(jobs, rows, opts); err != nil {
			return nil, nil, fmt.Errorf("create run: %w", err)
		}
	}
	callbacks := 0
	if opts != nil {
		callbacks = len(opts.Callbacks)
	}
	var run *Run
	write := func(ctx context.Context) ([]InsertResult, error) {
		var res []InsertResult
		err := c.retryDB(ctx, "create run", func(ctx context.Context) error {
			tx, err := c.drv.Begin(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback() }()
			if run, err = tx.RunInsert(ctx, &driver.RunInsertParams{Name: name, Metadata: meta, Callbacks: callbacks}); err != nil {
				return err
			}
			if len(rows) > 0 {
				withRun := make([]driver.JobInsertParams, len(rows))
				for i, r := range rows {
					r.RunID = run.ID
					withRun[i] = r
				}
				// The run is new and invisible to others until commit, so
				// there is no run lock to take first.
				if res, err = c.insertRows(ctx, tx, false, 0, withRun); err != nil {
					return err
				}
			}
			return tx.Commit()
		})
		if err != nil {
			return nil, err
		}
		c.wakeFor(rows, res)
		c.emitEnqueued(rows, res)
		return res, nil
	}
	var res []InsertResult
	var err error
	if len(rows) == 0 {
		// A run without jobs inserts none: nothing for the insert
		// middleware to see.
		res, err = write(ctx)
	} else {
		res, err = c.runInsertMiddleware(ctx, runArgs(jobs, order, opts), rows, write)
	}
	if err == nil && run == nil {
		// A middleware returned results without calling next: there is no
		// run to return.
		err = errors.New("an insert middleware returned without creating the run")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("create run: %w", err)
	}
	if order != nil {
		// Back to input order; the callbacks' results are not returned.
		in := make([]InsertResult, len(jobs))
		for k, i := range order {
			if i >= 0 {
				in[i] = res[k]
			}
		}
		res = in
	}
	return run, res, nil
}

// runArgs lists the args of an InsertRun's rows in the order they are
// inserted (order, as workflowOf returns it), its callbacks last.
func runArgs(jobs []InsertManyParams, order []int, opts *RunOpts) []JobArgs {
	if order == nil {
		return argsOf(jobs)
	}
	args := make([]JobArgs, len(order))
	callback := 0
	for k, i := range order {
		if i >= 0 {
			args[k] = jobs[i].Args
			continue
		}
		args[k] = opts.Callbacks[callback].Args
		callback++
	}
	return args
}

// CancelRun marks the run CANCELLED and cancels its PENDING and RUNNING
// jobs, by primary key in ascending id order after reading their ids
// without locking — the fix for the claim/cancel deadlock, with the run row
// first. Running jobs' contexts are cancelled: at once in this process, at
// their next heartbeat elsewhere. Their late results change nothing.
func (c *Client) CancelRun(ctx context.Context, runID int64) (*RunCancelResult, error) {
	var res *RunCancelResult
	err := c.retryDBIdempotent(ctx, "cancel run", func(ctx context.Context) error {
		var err error
		res, err = c.exec.RunCancel(ctx, runID)
		return c.released("cancel run", err)
	})
	if err != nil {
		return nil, fmt.Errorf("cancel run: %w", err)
	}
	c.cancelLocal(res.Cancelled...)
	c.emit(Event{Kind: EventCancelled, Count: len(res.Cancelled)})
	return res, nil
}

// Run reads one run and counts its jobs by status.
func (c *Client) Run(ctx context.Context, id int64) (*Run, RunCounts, error) {
	run, err := c.exec.RunGet(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	counts, err := c.exec.RunCounts(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	return run, counts, nil
}

// RunSummary is a run with its (bounded) job counts.
type RunSummary struct {
	*Run
	Counts BoundedRunCounts
}

// The run states: the one vocabulary for what a run is.
const (
	RunStateActive    = rowtype.RunStateActive
	RunStateDone      = rowtype.RunStateDone
	RunStateFailed    = rowtype.RunStateFailed
	RunStateCancelled = rowtype.RunStateCancelled
)

// RunStateOf is the state of a run stored with status whose jobs count
// counts: CANCELLED if it was cancelled; ACTIVE while a job has not ended
// (or it has none, or the counts are a bound); else FAILED if a job
// FAILED, DONE if none did.
func RunStateOf(status RunStatus, counts RunCounts, capped bool) RunState {
	return rowtype.RunStateOf(status, counts, capped)
}

// State is the run's state from its bounded counts.
func (s *RunSummary) State() RunState {
	return RunStateOf(s.Status, s.Counts.Counts, s.Counts.Capped)
}

// Runs lists runs newest first, each with its job counts (bounded by
// countLimit per run; 0 means 100,000).
func (c *Client) Runs(ctx context.Context, p RunListParams, countLimit int) ([]*RunSummary, error) {
	runs, err := c.exec.RunList(ctx, &p)
	if err != nil {
		return nil, err // the executor's error already says "list runs"
	}
	out := make([]*RunSummary, 0, len(runs))
	for _, r := range runs {
		counts, err := c.exec.RunCountsBounded(ctx, &rowtype.RunCountsBoundedParams{RunID: r.ID, Limit: countLimit})
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		out = append(out, &RunSummary{Run: r, Counts: *counts})
	}
	return out, nil
}

// RunSummary reads one run with its bounded job counts.
func (c *Client) RunSummary(ctx context.Context, id int64, countLimit int) (*RunSummary, error) {
	run, err := c.exec.RunGet(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("get run: %w", err)
	}
	counts, err := c.exec.RunCountsBounded(ctx, &rowtype.RunCountsBoundedParams{RunID: id, Limit: countLimit})
	if err != nil {
		return nil, fmt.Errorf("get run: %w", err)
	}
	return &RunSummary{Run: run, Counts: *counts}, nil
}
