package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockstep-queue/lockstep"
)

// The workflow actors: one creates workflow runs, one retries failed steps
// (which revives the jobs their failure cancelled), one cancels workflow
// runs and single steps while they run.

// flowNode is one step of a shape: the input positions it depends on.
type flowNode struct{ deps []int }

// flowShape picks a workflow's shape: fan-out/fan-in of varied width,
// chains, fan-out or fan-in alone, or a random DAG.
func flowShape(rng *rand.Rand) []flowNode {
	var nodes []flowNode
	add := func(deps ...int) int {
		nodes = append(nodes, flowNode{deps: deps})
		return len(nodes) - 1
	}
	switch p := rng.IntN(100); {
	case p < 35: // 1 → w → 1
		root := add()
		var mids []int
		for range 1 + rng.IntN(16) {
			mids = append(mids, add(root))
		}
		add(mids...)
	case p < 55: // a chain
		prev := add()
		for range 1 + rng.IntN(6) {
			prev = add(prev)
		}
	case p < 65: // fan-out only
		root := add()
		for range 1 + rng.IntN(8) {
			add(root)
		}
	case p < 75: // fan-in only
		var roots []int
		for range 2 + rng.IntN(8) {
			roots = append(roots, add())
		}
		add(roots...)
	default: // a random DAG: each step depends on up to three earlier ones
		add()
		for i := 1; i < 3+rng.IntN(8); i++ {
			seen := map[int]bool{}
			var deps []int
			for range 1 + rng.IntN(3) {
				if d := rng.IntN(i); !seen[d] {
					seen[d] = true
					deps = append(deps, d)
				}
			}
			add(deps...)
		}
	}
	return nodes
}

var allCallbacks = []lockstep.CallbackOn{lockstep.CallbackOnSuccess, lockstep.CallbackOnFailure, lockstep.CallbackOnComplete}

// flowRunParams builds a workflow run: its steps' params in input order
// (shuffled at times: InsertRun orders them), what the ledger records of
// each, and the run's options.
func (a *actors) flowRunParams(rng *rand.Rand) ([]lockstep.InsertManyParams, []*flowJob, *lockstep.RunOpts, []lockstep.CallbackOn) {
	nodes := flowShape(rng)
	opts := &lockstep.RunOpts{}
	runAnyway := false
	if rng.IntN(100) < 15 {
		opts.OnDependencyFailure, runAnyway = lockstep.RunOnDependencyFailure, true
	}
	var cbs []lockstep.CallbackOn
	switch p := rng.IntN(100); {
	case p < 45:
		cbs = allCallbacks
	case p < 65:
		for _, on := range allCallbacks {
			if rng.IntN(2) == 0 {
				cbs = append(cbs, on)
			}
		}
	}
	for _, on := range cbs {
		opts.Callbacks = append(opts.Callbacks, lockstep.RunCallback{
			On: on, Args: CallbackData{On: on},
			Opts: &lockstep.InsertOpts{Queue: a.s.queues[rng.IntN(len(a.s.queues))], MaxAttempts: jobMaxAttempts},
		})
	}
	key := func(i int) string { return fmt.Sprintf("s%d", i) }
	params := make([]lockstep.InsertManyParams, len(nodes))
	notes := make([]*flowJob, len(nodes))
	for i, n := range nodes {
		args := FlowArgs{Key: key(i)}
		if rng.IntN(100) < 30 {
			args.Millis = 10 + rng.IntN(141)
		}
		if rng.IntN(100) < 10 {
			args.Fail = 1
			if rng.IntN(100) < 30 {
				args.Fail = failForever
			}
		}
		p := lockstep.InsertManyParams{
			Args: args, Key: key(i),
			Opts: &lockstep.InsertOpts{Queue: a.s.queues[rng.IntN(len(a.s.queues))], Priority: rng.IntN(3) - 1, MaxAttempts: jobMaxAttempts},
		}
		// Some steps in the global and the per-key limited queues: a
		// promotion makes them PENDING, the claim may block them. (Not in
		// a sequence: a revival would bring back a job behind later ones.)
		switch q := rng.IntN(100); {
		case q < 8:
			p.Opts.Queue = queueGlobal
		case q < 16:
			lq := a.s.limitedQueue(queueKeyed)
			p.Opts.Queue, p.Opts.LimitKey = lq.name, lq.key(rng, 0)
		}
		note := &flowJob{fail: args.Fail, runAnyway: runAnyway}
		if len(n.deps) > 0 {
			switch q := rng.IntN(100); {
			case q < 15:
				p.OnDependencyFailure, note.runAnyway = lockstep.RunOnDependencyFailure, true
			case q < 20:
				p.OnDependencyFailure, note.runAnyway = lockstep.CancelOnDependencyFailure, false
			}
		}
		for _, d := range n.deps {
			p.DependsOn = append(p.DependsOn, key(d))
		}
		params[i], notes[i] = p, note
	}
	if rng.IntN(100) < 30 {
		// Dependents before their dependencies: InsertRun must order them.
		rng.Shuffle(len(params), func(i, j int) {
			params[i], params[j] = params[j], params[i]
			notes[i], notes[j] = notes[j], notes[i]
		})
	}
	return params, notes, opts, cbs
}

// flowCreator creates workflow runs, and now and then tries to add a job
// to a run with callbacks, which must be refused.
func (a *actors) flowCreator(ctx context.Context, rng *rand.Rand) {
	l := a.s.ledger
	for seq := 0; ; seq++ {
		for a.s.backlog.Load() > int64(a.s.cfg.MaxBacklog) {
			if !a.pause(50 * time.Millisecond) {
				return
			}
		}
		c := a.client(rng)
		if rng.IntN(100) < 8 {
			a.insertIntoClosed(ctx, rng, c)
		} else {
			params, notes, opts, cbs := a.flowRunParams(rng)
			run, res, err := c.InsertRun(ctx, fmt.Sprintf("soak-flow-%d", seq), opts, params...)
			if err != nil {
				a.unexpected(ctx, "create workflow run", err)
			} else {
				ids := jobIDs(res)
				pos := map[string]int64{}
				for i, p := range params {
					pos[p.Key] = ids[i]
				}
				for i, p := range params {
					notes[i].runID = run.ID
					for _, k := range p.DependsOn {
						notes[i].deps = append(notes[i].deps, pos[k])
					}
				}
				l.flowCreated(run.ID, ids, notes, cbs)
			}
		}
		if !a.pause(time.Duration(40+rng.IntN(120)) * time.Millisecond) {
			return
		}
	}
}

func (a *actors) insertIntoClosed(ctx context.Context, rng *rand.Rand, c *lockstep.Client) {
	l := a.s.ledger
	runID, ok := l.pickFlowRun(30, true, rng.IntN)
	if !ok {
		return
	}
	_, err := c.InsertMany(ctx, []lockstep.InsertManyParams{{Args: FlowArgs{Key: "late"}, Opts: &lockstep.InsertOpts{RunID: runID, Queue: a.s.queues[0]}}})
	switch {
	case errors.Is(err, lockstep.ErrRunClosed):
		l.flowClosedRefused()
	case errors.Is(err, lockstep.ErrRunCancelled) && l.runWasCancelTried(runID):
	case err == nil:
		l.problem("a job was added to run %d, which has callbacks, after its creation", runID)
	default:
		a.unexpected(ctx, fmt.Sprintf("add a job to run %d, which has callbacks", runID), err)
	}
}

// flowRetrier retries most of the steps that failed, so that the jobs
// their failure cancelled come back and callbacks re-arm; the rest stay
// FAILED. A step seen failing by its worker may not be FAILED in the
// database yet: it is offered again a few times.
func (a *actors) flowRetrier(ctx context.Context, rng *rand.Rand) {
	l := a.s.ledger
	offered := map[int64]int{}
	var again []int64
	for a.pause(time.Duration(100+rng.IntN(300)) * time.Millisecond) {
		ids := append(again, l.takeFailed()...)
		again = nil
		for _, id := range ids {
			if offered[id] == 0 && rng.IntN(100) < 25 {
				offered[id] = -1 // left FAILED for good
				continue
			}
			if offered[id] < 0 {
				continue
			}
			l.flowRetryTried(id)
			ok, err := a.retryOne(ctx, rng, id)
			switch {
			case errors.Is(err, lockstep.ErrRunCancelled):
				l.flowRetried(id, false, true)
			case err != nil:
				a.unexpected(ctx, fmt.Sprintf("retry workflow job %d", id), err)
			case ok:
				l.flowRetried(id, true, false)
			default:
				if offered[id]++; offered[id] < 4 {
					again = append(again, id)
				}
			}
		}
	}
}

// flowCanceller cancels workflow runs and single steps at random moments:
// a step's cancel reaches its dependents (and the run's callbacks).
func (a *actors) flowCanceller(ctx context.Context, rng *rand.Rand) {
	l := a.s.ledger
	for a.pause(time.Duration(200+rng.IntN(500)) * time.Millisecond) {
		c := a.client(rng)
		if rng.IntN(100) < 30 {
			runID, ok := l.pickFlowRun(30, false, rng.IntN)
			if !ok {
				continue
			}
			l.cancelRunTried(runID)
			_, err := c.CancelRun(ctx, runID)
			switch {
			case errors.Is(err, lockstep.ErrRunFinished):
				l.cancelRunRefused(runID)
			case err != nil:
				a.unexpected(ctx, fmt.Sprintf("cancel workflow run %d", runID), err)
			}
			continue
		}
		for range 1 + rng.IntN(3) {
			id, ok := l.pickFlowJob(rng.IntN)
			if !ok {
				break
			}
			l.cancelJobTried(id)
			ok, err := c.CancelJob(ctx, id)
			if err != nil {
				a.unexpected(ctx, fmt.Sprintf("cancel workflow job %d", id), err)
				continue
			}
			if ok {
				l.cancelJobApplied(id)
			}
		}
	}
}

// retryOne retries a FAILED step by RetryJob or, every other time, as an
// operator's bulk retry of the one job selected (job.bulk_refs; the run
// row shared, then job.retry_many; or RetryJob's path for a step with
// dependents). A bulk retry does not tell a cancelled run from a job that
// is not FAILED (yet): both are skipped, and the step is offered again.
func (a *actors) retryOne(ctx context.Context, rng *rand.Rand, id int64) (bool, error) {
	c := a.client(rng)
	if rng.IntN(2) == 0 {
		return c.RetryJob(ctx, id)
	}
	res, err := c.Bulk(ctx, lockstep.BulkParams{Action: lockstep.BulkRetry, IDs: []int64{id}})
	if err != nil {
		return false, err
	}
	a.s.ledger.bulkDone(res.Batches)
	return res.Changed == 1, nil
}
