package sqlexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// Workflows: a job that depends on others waits in WAITING until they end,
// and a run's callbacks are jobs that depend on every other job of the run.
//
// The lock order is the queue's one order, extended:
//
//   - the run row first: shared by every write that ends a job with
//     dependents (finish, cancel, reap), exclusive by the retry that brings
//     dependents back and by the run's cancel;
//   - then job rows by primary key in ascending id order: the ending job,
//     then its dependents, locked together by job.lock_flow. A dependent is
//     always inserted after its dependencies (the client orders a workflow
//     so), so its id is larger, and the whole transaction locks upwards;
//   - the edges (lockstep_job_deps) are written once with their jobs and
//     read without locks.
//
// Each dependent is then written alone by primary key, re-checking the
// status it was read in under that lock. A dependency's end reaches each
// dependent exactly once because the write that ends it is fenced (on the
// attempt, or on the status) and the dependents are counted down in the
// same transaction.

// flowEdge is one edge of a workflow: job depends on dependsOn.
type flowEdge struct{ job, dependsOn int64 }

// flowRow is a dependent as job.lock_flow reads it.
type flowRow struct {
	status    rowtype.JobStatus
	waitingOn int
	policy    driver.DepPolicy
	blockedBy int64
	callback  string
}

// insertFlow inserts a workflow's jobs as they start — WAITING with their
// count of dependencies, or PENDING — with their dependents counted, then
// the edges between them. Writing each job's status at its insert, rather
// than inserting it PENDING and changing it, leaves no dead entries in the
// claim index's range for claims to step over until purge or vacuum.
func (e *Executor) insertFlow(ctx context.Context, q Querier, jobs []driver.JobInsertParams) ([]int64, error) {
	rows := slices.Clone(jobs)
	for i, j := range rows {
		rows[i].Dependents = 0
		for _, d := range j.DependsOn {
			if d < 0 || d >= i {
				return nil, fmt.Errorf("job %d of the insert depends on position %d: a job may depend only on jobs before it", i, d)
			}
		}
	}
	for _, j := range rows {
		for _, d := range j.DependsOn {
			rows[d].Dependents++
		}
	}
	const batch = 1000
	ids := make([]int64, 0, len(rows))
	for start := 0; start < len(rows); start += batch {
		got, err := e.insertFlowBatch(ctx, q, rows[start:min(start+batch, len(rows))])
		if err != nil {
			return nil, err
		}
		ids = append(ids, got...)
	}
	var edges []flowEdge
	for i, j := range rows {
		for _, d := range j.DependsOn {
			edges = append(edges, flowEdge{job: ids[i], dependsOn: ids[d]})
		}
	}
	return ids, e.insertEdges(ctx, q, edges)
}

// insertFlowBatch is insertBatch for job.insert_flow.
func (e *Executor) insertFlowBatch(ctx context.Context, q Querier, jobs []driver.JobInsertParams) ([]int64, error) {
	st := e.cat().Get(catalog.JobInsertFlow)
	var sqlText string
	var args []any
	if e.d.ColumnarFlow != nil {
		sqlText, args = st.SQL, e.d.ColumnarFlow(jobs)
	} else {
		sqlText = e.cat().BindRows(st, len(jobs))
		args = make([]any, 0, len(jobs)*13)
		for _, j := range jobs {
			var run, cb any
			if j.RunID != 0 {
				run = j.RunID
			}
			if j.Callback != "" {
				cb = j.Callback
			}
			status := rowtype.StatusPending
			if len(j.DependsOn) > 0 {
				status = rowtype.StatusWaiting
			}
			args = append(args, run, j.Queue, j.Kind, string(j.Args), string(status), j.Priority, j.MaxAttempts, e.timeArg(j.ScheduledAt), jsonArg(j.Metadata),
				len(j.DependsOn), j.Dependents, int(j.DepPolicy), cb, keyArg(j.LimitKey))
		}
	}
	return e.insertedIDs(ctx, q, st, sqlText, args, len(jobs))
}

// insertEdges writes edges in batches: as rows, or as two arrays where the
// dialect binds arrays.
func (e *Executor) insertEdges(ctx context.Context, q Querier, edges []flowEdge) error {
	st := e.cat().Get(catalog.DepInsert)
	const batch = 1000
	for start := 0; start < len(edges); start += batch {
		part := edges[start:min(start+batch, len(edges))]
		var sqlText string
		var args []any
		if st.Rows {
			sqlText = e.cat().BindRows(st, len(part))
			args = make([]any, 0, 2*len(part))
			for _, ed := range part {
				args = append(args, ed.job, ed.dependsOn)
			}
		} else {
			jobs, on := make([]int64, len(part)), make([]int64, len(part))
			for i, ed := range part {
				jobs[i], on[i] = ed.job, ed.dependsOn
			}
			sqlText, args = st.SQL, []any{jobs, on}
		}
		if _, err := e.exec(ctx, q, st.Name, sqlText, args...); err != nil {
			return err
		}
	}
	return nil
}

// lockRun locks a run row, shared or exclusive, and returns its status and
// whether it has callbacks.
func (e *Executor) lockRun(ctx context.Context, q Querier, runID int64, exclusive bool) (rowtype.RunStatus, bool, error) {
	certify := e.cat().Capabilities().CertifyLocks
	name := catalog.RunLockShared
	if exclusive || certify {
		// A Galera node certifies the lock by writing the row, which needs
		// it exclusive: taken so at once, never upgraded from shared.
		name = catalog.RunLock
	}
	rows, err := e.query(ctx, q, name, e.cat().Get(name).SQL, runID)
	if err != nil {
		return "", false, err
	}
	var status string
	var callbacks int64
	found := rows.Next()
	if found {
		err = rows.Scan(&status, nullInt64{&callbacks})
	}
	if err := errors.Join(err, rows.Err(), rows.Close()); err != nil {
		return "", false, err
	}
	if !found {
		return "", false, fmt.Errorf("run %d: %w", runID, rowtype.ErrNotFound)
	}
	if certify {
		if err := e.certify(ctx, q, catalog.RunCertify, runID); err != nil {
			return "", false, err
		}
	}
	return rowtype.RunStatus(status), callbacks > 0, nil
}

// queryEdges runs dep.dependents or dep.dependencies over ids.
func (e *Executor) queryEdges(ctx context.Context, q Querier, name catalog.Name, ids []int64) ([]flowEdge, error) {
	st := e.cat().Get(name)
	var out []flowEdge
	chunk := e.chunkSize()
	for start := 0; start < len(ids); start += chunk {
		sqlText, args := e.cat().BindIDs(st, ids[start:min(start+chunk, len(ids))])
		rows, err := e.query(ctx, q, name, sqlText, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var ed flowEdge
			if err := rows.Scan(&ed.job, &ed.dependsOn); err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, ed)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// downstream reads, without locks, the dependents of ids, and with deep
// their dependents in turn: every job an end can reach.
func (e *Executor) downstream(ctx context.Context, q Querier, ids []int64, deep bool) ([]flowEdge, error) {
	var all []flowEdge
	seen := map[int64]bool{}
	frontier := sortedUnique(ids)
	for len(frontier) > 0 {
		edges, err := e.queryEdges(ctx, q, catalog.DepDependents, frontier)
		if err != nil {
			return nil, err
		}
		all = append(all, edges...)
		if !deep {
			break
		}
		var next []int64
		for _, ed := range edges {
			if !seen[ed.job] {
				seen[ed.job] = true
				next = append(next, ed.job)
			}
		}
		frontier = sortedUnique(next)
	}
	return all, nil
}

// lockFlow locks the dependents by primary key in ascending id order and
// reads what the propagation needs of them.
func (e *Executor) lockFlow(ctx context.Context, q Querier, ids []int64) (map[int64]*flowRow, error) {
	st := e.cat().Get(catalog.JobLockFlow)
	out := make(map[int64]*flowRow, len(ids))
	chunk := e.chunkSize()
	for start := 0; start < len(ids); start += chunk {
		sqlText, args := e.cat().BindIDs(st, ids[start:min(start+chunk, len(ids))])
		rows, err := e.query(ctx, q, st.Name, sqlText, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id, waiting, policy, blocked int64
			var status, callback string
			if err := rows.Scan(&id, &status, nullInt64{&waiting}, nullInt64{&policy}, nullInt64{&blocked}, nullString{&callback}); err != nil {
				rows.Close()
				return nil, err
			}
			out[id] = &flowRow{status: rowtype.JobStatus(status), waitingOn: int(waiting), policy: driver.DepPolicy(policy), blockedBy: blocked, callback: callback}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// propagate tells the dependents of jobs that just ended (ends: id → the
// status it ended in, written by this transaction) and, through the
// dependents it cancels, theirs. The caller holds the run row shared and
// the ended jobs' rows.
func (e *Executor) propagate(ctx context.Context, q Querier, runID int64, ends map[int64]rowtype.JobStatus, fc *driver.FlowCounts) error {
	if fc == nil {
		fc = &driver.FlowCounts{}
	}
	deep := false
	for _, s := range ends {
		deep = deep || s != rowtype.StatusDone
	}
	// A DONE reaches only direct dependents; a failure or a cancel may
	// cancel them and so reach theirs, and every job it can reach is
	// locked now, in one ascending pass, never after a larger id.
	edges, err := e.downstream(ctx, q, slices.Collect(maps.Keys(ends)), deep)
	if err != nil {
		return err
	}
	if len(edges) == 0 {
		return nil
	}
	children := map[int64][]int64{} // dependency → dependents
	var ids []int64
	for _, ed := range edges {
		children[ed.dependsOn] = append(children[ed.dependsOn], ed.job)
		ids = append(ids, ed.job)
	}
	ids = sortedUnique(ids)
	rows, err := e.lockFlow(ctx, q, ids)
	if err != nil {
		return err
	}
	type event struct {
		from   int64
		status rowtype.JobStatus
	}
	incoming := map[int64][]event{}
	tell := func(from int64, status rowtype.JobStatus) {
		for _, d := range children[from] {
			incoming[d] = append(incoming[d], event{from, status})
		}
	}
	for _, from := range slices.Sorted(maps.Keys(ends)) {
		tell(from, ends[from])
	}
	var callbacks []int64
	for _, id := range ids {
		evs, r := incoming[id], rows[id]
		if len(evs) == 0 || r == nil || r.status != rowtype.StatusWaiting {
			continue
		}
		var failed, blocking *event
		for i := range evs {
			if evs[i].status == rowtype.StatusFailed && failed == nil {
				failed = &evs[i]
			}
			if evs[i].status != rowtype.StatusDone && blocking == nil {
				blocking = &evs[i]
			}
		}
		left := r.waitingOn - len(evs)
		var next rowtype.JobStatus
		var cause *event
		switch {
		case r.policy == driver.DepCancel && blocking != nil:
			next, cause = rowtype.StatusCancelled, blocking
		case r.policy == driver.DepFire && failed != nil:
			next = rowtype.StatusPending
		case left > 0:
			next = rowtype.StatusWaiting
		case r.policy == driver.DepFire:
			// Every dependency ended and none failed: the failure callback
			// never fires.
			next = rowtype.StatusCancelled
		default:
			next = rowtype.StatusPending
		}
		switch next {
		case rowtype.StatusWaiting:
			if err := e.execOne(ctx, q, catalog.JobSetWaiting, left, id); err != nil {
				return err
			}
			r.waitingOn = left
		case rowtype.StatusPending:
			if r.callback != "" {
				// Written last, with the run's counts once every other
				// write of this transaction is in them.
				callbacks = append(callbacks, id)
				continue
			}
			if err := e.execOne(ctx, q, catalog.JobPromote, nil, id); err != nil {
				return err
			}
			r.status = rowtype.StatusPending
			fc.Promoted++
		case rowtype.StatusCancelled:
			msg, by := "every dependency ended without a failure", any(nil)
			if cause != nil {
				msg, by = fmt.Sprintf("dependency %d ended %s", cause.from, cause.status), cause.from
			}
			if err := e.execOne(ctx, q, catalog.JobCancelWaiting, msg, by, id); err != nil {
				return err
			}
			r.status = rowtype.StatusCancelled
			fc.Cancelled++
			tell(id, rowtype.StatusCancelled)
		}
	}
	fc.Promoted += len(callbacks)
	fc.Callbacks += len(callbacks)
	return e.fireCallbacks(ctx, q, runID, rows, callbacks)
}

// fireCallbacks makes a run's callback jobs PENDING with the run's counts
// in their args: the data they were created with, wrapped in CallbackArgs.
// Every callback of the run depends on every other job of it, so rows —
// the dependents just locked — holds all of them, and their own statuses
// are taken out of the counts.
func (e *Executor) fireCallbacks(ctx context.Context, q Querier, runID int64, rows map[int64]*flowRow, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	counts, err := e.runCounts(ctx, q, runID)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r.callback != "" {
			counts[r.status]--
			if counts[r.status] <= 0 {
				delete(counts, r.status)
			}
		}
	}
	for _, id := range ids {
		job, err := e.getJob(ctx, q, id)
		if err != nil {
			return err
		}
		b, err := json.Marshal(rowtype.CallbackArgs{RunID: runID, On: job.Callback, Counts: counts, Data: job.Args})
		if err != nil {
			return fmt.Errorf("callback %d: encode args: %w", id, err)
		}
		if err := e.execOne(ctx, q, catalog.JobPromote, string(b), id); err != nil {
			return err
		}
		rows[id].status = rowtype.StatusPending
	}
	return nil
}

// runCounts counts a run's jobs by status through the run index, on q (a
// pool, or the caller's transaction, whose own writes it then sees).
func (e *Executor) runCounts(ctx context.Context, q Querier, runID int64) (rowtype.RunCounts, error) {
	rows, err := e.query(ctx, q, catalog.RunCounts, e.cat().Get(catalog.RunCounts).SQL, runID)
	if err != nil {
		return nil, err
	}
	counts := rowtype.RunCounts{}
	for rows.Next() {
		var status string
		var n int64
		if err := rows.Scan(&status, &n); err != nil {
			rows.Close()
			return nil, err
		}
		counts[rowtype.JobStatus(status)] = int(n)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, err
	}
	return counts, nil
}

// execOne runs a one-row statement by primary key.
func (e *Executor) execOne(ctx context.Context, q Querier, name catalog.Name, args ...any) error {
	_, err := e.exec(ctx, q, name, e.cat().Get(name).SQL, args...)
	return err
}
