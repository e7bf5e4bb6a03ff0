package lockstep

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// A workflow is a run whose jobs depend on one another: InsertRun takes
// jobs that name, by Key, the jobs of the same call they wait for. A job
// with dependencies is WAITING — never claimed — until the last of them is
// DONE; then it becomes PENDING, once, in the transaction that wrote that
// last DONE. What a FAILED or CANCELLED dependency does is the job's
// DependencyPolicy. A run can also carry callbacks: jobs that fire when
// every job is DONE, when one FAILED, or when all have ended.

// DependencyPolicy is what a job does when a job it depends on ends FAILED
// or CANCELLED.
type DependencyPolicy int

const (
	// DependencyDefault takes the run's policy (RunOpts), itself
	// CancelOnDependencyFailure unless set.
	DependencyDefault DependencyPolicy = iota
	// CancelOnDependencyFailure cancels the job, and its own dependents in
	// turn. Retrying the failed dependency brings them back.
	CancelOnDependencyFailure
	// RunOnDependencyFailure runs the job once every dependency has ended,
	// whatever its status.
	RunOnDependencyFailure
)

func (p DependencyPolicy) String() string {
	switch p {
	case DependencyDefault:
		return "default"
	case CancelOnDependencyFailure:
		return "cancel"
	case RunOnDependencyFailure:
		return "run"
	}
	return fmt.Sprintf("DependencyPolicy(%d)", int(p))
}

// CallbackOn is the condition a run's callback fires on.
type CallbackOn string

// The callback conditions.
const (
	// CallbackOnSuccess fires once every job of the run is DONE; it is
	// cancelled as soon as one ends FAILED or CANCELLED.
	CallbackOnSuccess CallbackOn = "success"
	// CallbackOnFailure fires when the first job of the run ends FAILED; it
	// is cancelled once every job has ended without a failure.
	CallbackOnFailure CallbackOn = "failure"
	// CallbackOnComplete fires once every job of the run has ended, DONE,
	// FAILED or CANCELLED.
	CallbackOnComplete CallbackOn = "complete"
)

// RunCallback is a job a run enqueues, exactly once across all processes,
// when its condition first holds. Its worker receives CallbackArgs[T]: the
// run, the condition, the run's job counts at that moment, and Args.
type RunCallback struct {
	On   CallbackOn
	Args JobArgs
	Opts *InsertOpts
}

// CallbackArgs are the args a callback's worker receives: register its
// worker as Worker[CallbackArgs[T]], where T is the type of
// RunCallback.Args; its kind is T's.
type CallbackArgs[T JobArgs] struct {
	RunID int64      `json:"run_id"`
	On    CallbackOn `json:"on"`
	// Counts are the run's jobs by status when the callback fired, the
	// callbacks themselves not counted.
	Counts RunCounts `json:"counts"`
	Data   T         `json:"data"`
}

// Kind is T's kind.
func (a CallbackArgs[T]) Kind() string {
	var t T
	return t.Kind()
}

// DependencyOutput is one dependency of a running job: its id, kind,
// status and recorded output.
type DependencyOutput = rowtype.DependencyOutput

// maxDependencyOutputs bounds DependencyOutputs' one read.
const maxDependencyOutputs = 1000

// DependencyOutputs reads the outputs the running job's dependencies
// recorded (RecordOutput), lowest id first: one bounded read of at most
// 1,000 dependencies. ctx must be a running job's.
func DependencyOutputs(ctx context.Context) ([]DependencyOutput, error) {
	out, ok := ctx.Value(outputKey{}).(*jobOutput)
	if !ok || out.c == nil {
		return nil, fmt.Errorf("dependency outputs: %w", ErrNoJobContext)
	}
	deps, err := out.c.exec.JobDependencyOutputs(ctx, out.jobID, maxDependencyOutputs)
	if err != nil {
		return nil, fmt.Errorf("dependency outputs: %w", err)
	}
	return deps, nil
}

// workflowOf checks the dependencies and callbacks of an InsertRun and
// returns the rows in the order they are inserted — every job after the
// jobs it depends on, callbacks last — with each row's DependsOn naming
// positions in that order, and order[k], the input position of the k-th
// row (-1 for a callback).
func (c *Client) workflowOf(params []InsertManyParams, rows []driver.JobInsertParams, opts *RunOpts) ([]driver.JobInsertParams, []int, error) {
	runPolicy := CancelOnDependencyFailure
	var callbacks []RunCallback
	if opts != nil {
		if opts.OnDependencyFailure != DependencyDefault {
			runPolicy = opts.OnDependencyFailure
		}
		callbacks = opts.Callbacks
	}
	if runPolicy != CancelOnDependencyFailure && runPolicy != RunOnDependencyFailure {
		return nil, nil, invalidJob(fmt.Errorf("run: unknown dependency policy %d", int(runPolicy)))
	}
	keys := map[string]int{}
	flow := len(callbacks) > 0
	for i, p := range params {
		if p.Key != "" {
			if _, dup := keys[p.Key]; dup {
				return nil, nil, invalidJob(fmt.Errorf("job %d: key %q is used twice", i, p.Key))
			}
			keys[p.Key] = i
		}
		flow = flow || len(p.DependsOn) > 0
	}
	if !flow {
		for i, p := range params {
			if p.OnDependencyFailure != DependencyDefault {
				return nil, nil, invalidJob(fmt.Errorf("job %d: OnDependencyFailure is set but the job depends on nothing", i))
			}
		}
		return rows, nil, nil
	}
	deps := make([][]int, len(params))
	depended := make([]bool, len(params))
	for i, p := range params {
		seen := map[int]bool{}
		for _, k := range p.DependsOn {
			d, ok := keys[k]
			switch {
			case !ok:
				return nil, nil, invalidJob(fmt.Errorf("job %d depends on %q, which names no job of this run (a dependency must be a job of the same InsertRun)", i, k))
			case d == i:
				return nil, nil, invalidJob(fmt.Errorf("job %d (%q) depends on itself", i, k))
			case seen[d]:
				continue
			}
			seen[d] = true
			deps[i] = append(deps[i], d)
			depended[d] = true
		}
		switch p.OnDependencyFailure {
		case DependencyDefault, CancelOnDependencyFailure, RunOnDependencyFailure:
		default:
			return nil, nil, invalidJob(fmt.Errorf("job %d: unknown dependency policy %d", i, int(p.OnDependencyFailure)))
		}
	}
	for i := range params {
		if rows[i].UniqueKey != "" && (len(deps[i]) > 0 || depended[i] || len(callbacks) > 0) {
			return nil, nil, invalidJob(fmt.Errorf("job %d: a unique job cannot be part of a workflow or a run with callbacks (a duplicate would stay where it is, outside this run)", i))
		}
	}
	order, err := topoOrder(params, deps)
	if err != nil {
		return nil, nil, invalidJob(err)
	}
	at := make([]int, len(params)) // input position → inserted position
	for k, i := range order {
		at[i] = k
	}
	out := make([]driver.JobInsertParams, 0, len(params)+len(callbacks))
	for _, i := range order {
		r := rows[i]
		for _, d := range deps[i] {
			r.DependsOn = append(r.DependsOn, at[d])
		}
		pol := params[i].OnDependencyFailure
		if pol == DependencyDefault {
			pol = runPolicy
		}
		if pol == RunOnDependencyFailure {
			r.DepPolicy = driver.DepRun
		}
		out = append(out, r)
	}
	if len(callbacks) > 0 && len(params) == 0 {
		return nil, nil, invalidJob(errors.New("a run with callbacks needs at least one job"))
	}
	all := make([]int, len(out))
	for k := range all {
		all[k] = k
	}
	for n, cb := range callbacks {
		row, err := c.callbackRow(cb)
		if err != nil {
			return nil, nil, invalidJob(fmt.Errorf("callback %d: %w", n, err))
		}
		row.DependsOn = all
		out = append(out, row)
		order = append(order, -1)
	}
	return out, order, nil
}

// callbackRow encodes a callback as a job: its Args are the data its
// CallbackArgs will carry.
func (c *Client) callbackRow(cb RunCallback) (driver.JobInsertParams, error) {
	var policy driver.DepPolicy
	switch cb.On {
	case CallbackOnSuccess:
		policy = driver.DepCancel
	case CallbackOnFailure:
		policy = driver.DepFire
	case CallbackOnComplete:
		policy = driver.DepRun
	default:
		return driver.JobInsertParams{}, fmt.Errorf("unknown condition %q (want %s, %s or %s)", cb.On, CallbackOnSuccess, CallbackOnFailure, CallbackOnComplete)
	}
	if cb.Opts != nil && (cb.Opts.RunID != 0 || cb.Opts.Unique != nil) {
		return driver.JobInsertParams{}, errors.New("a callback's InsertOpts must name no RunID and no Unique")
	}
	row, err := c.encodeJob(InsertManyParams{Args: cb.Args, Opts: cb.Opts})
	if err != nil {
		return driver.JobInsertParams{}, err
	}
	row.DepPolicy, row.Callback = policy, string(cb.On)
	return row, nil
}

// topoOrder orders jobs so that each comes after those it depends on,
// keeping the input order wherever the dependencies allow, or names a
// cycle.
func topoOrder(params []InsertManyParams, deps [][]int) ([]int, error) {
	n := len(params)
	indeg := make([]int, n)
	children := make([][]int, n)
	for i, ds := range deps {
		indeg[i] = len(ds)
		for _, d := range ds {
			children[d] = append(children[d], i)
		}
	}
	// Kahn's algorithm, taking the lowest ready input position each time
	// (n is a run's size; a linear scan per step is fine up to thousands,
	// and a heap would only matter far beyond).
	ready := make([]bool, n)
	for i := range indeg {
		ready[i] = indeg[i] == 0
	}
	order := make([]int, 0, n)
	done := make([]bool, n)
	next := 0
	for len(order) < n {
		for next < n && (done[next] || !ready[next]) {
			next++
		}
		if next == n {
			break
		}
		i := next
		done[i], ready[i] = true, false
		order = append(order, i)
		for _, ch := range children[i] {
			if indeg[ch]--; indeg[ch] == 0 {
				ready[ch] = true
				if ch < next {
					next = ch
				}
			}
		}
	}
	if len(order) < n {
		return nil, fmt.Errorf("the dependencies form a cycle (→: depends on): %s", cycleOf(params, deps, done))
	}
	return order, nil
}

// cycleOf names one cycle among the jobs not ordered, by key: a → b → a.
func cycleOf(params []InsertManyParams, deps [][]int, done []bool) string {
	start := -1
	for i := range done {
		if !done[i] {
			start = i
			break
		}
	}
	name := func(i int) string {
		if params[i].Key != "" {
			return fmt.Sprintf("%q", params[i].Key)
		}
		return fmt.Sprintf("job %d", i)
	}
	// Walk dependencies among the unordered jobs until one repeats.
	pos := map[int]int{}
	var path []int
	for i := start; i >= 0; {
		if p, ok := pos[i]; ok {
			var b strings.Builder
			for _, j := range path[p:] {
				b.WriteString(name(j) + " → ")
			}
			b.WriteString(name(i))
			return b.String()
		}
		pos[i] = len(path)
		path = append(path, i)
		next := -1
		for _, d := range deps[i] {
			if !done[d] {
				next = d
				break
			}
		}
		i = next
	}
	return name(start)
}
