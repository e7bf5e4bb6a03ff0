package sqlexec

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// revive runs after a retry has put the FAILED job id back to PENDING: the
// jobs its failure cancelled come back, WAITING again (or PENDING if
// nothing is left to wait for), and the jobs still waiting downstream are
// recounted — a complete callback waits for the retried job once more.
//
// The caller holds the run row exclusively, so no job of the run ends while
// the dependencies' statuses are read: a finish or cancel of the run holds
// the row shared for its whole transaction. The downstream jobs are locked
// in ascending id order, above the retried job's own id.
func (e *Executor) revive(ctx context.Context, q Querier, id int64) error {
	edges, err := e.downstream(ctx, q, []int64{id}, true)
	if err != nil || len(edges) == 0 {
		return err
	}
	var ids []int64
	for _, ed := range edges {
		ids = append(ids, ed.job)
	}
	ids = sortedUnique(ids)
	rows, err := e.lockFlow(ctx, q, ids)
	if err != nil {
		return err
	}
	// Every dependency of every downstream job, and their statuses: read
	// without locks, stable under the run's exclusive lock, and kept up to
	// date below as this transaction writes.
	up, err := e.queryEdges(ctx, q, catalog.DepDependencies, ids)
	if err != nil {
		return err
	}
	depsOf := map[int64][]int64{}
	var all []int64
	for _, ed := range up {
		depsOf[ed.job] = append(depsOf[ed.job], ed.dependsOn)
		all = append(all, ed.dependsOn)
	}
	status, err := e.statuses(ctx, q, sortedUnique(all))
	if err != nil {
		return err
	}
	for jid, r := range rows {
		status[jid] = r.status
	}
	status[id] = rowtype.StatusPending
	for _, jid := range ids {
		r := rows[jid]
		if r == nil {
			continue
		}
		// A job a dependency's failure cancelled (blocked_by set; a
		// user's or the run's cancel leaves it NULL) is reconsidered
		// whichever dependency is retried: after two failures it records
		// only the first, and retrying them one by one must bring it back
		// once neither blocks it.
		waiting := r.status == rowtype.StatusWaiting
		if !waiting && !(r.status == rowtype.StatusCancelled && r.blockedBy != 0) {
			continue
		}
		left, blocked := 0, false
		for _, d := range depsOf[jid] {
			st, ok := status[d]
			if !ok {
				// A dependency retention deleted ended long ago.
				continue
			}
			switch r.policy {
			case driver.DepCancel:
				blocked = blocked || st == rowtype.StatusFailed || st == rowtype.StatusCancelled
				if st != rowtype.StatusDone {
					left++
				}
			default:
				if !st.Final() {
					left++
				}
			}
		}
		switch {
		case blocked && waiting:
			// Cannot happen under DepCancel (a blocked job is cancelled
			// when its dependency ends); left as it is.
		case blocked:
			// Still cancelled by another dependency's failure.
		case waiting:
			if left != r.waitingOn {
				if err := e.execOne(ctx, q, catalog.JobSetWaiting, left, jid); err != nil {
					return err
				}
				r.waitingOn = left
			}
		default:
			next := rowtype.StatusWaiting
			if left == 0 {
				next = rowtype.StatusPending
			}
			if err := e.execOne(ctx, q, catalog.JobRevive, string(next), left, jid); err != nil {
				return err
			}
			r.status, status[jid] = next, next
		}
	}
	return nil
}

// statuses reads the status of each id, without locks.
func (e *Executor) statuses(ctx context.Context, q Querier, ids []int64) (map[int64]rowtype.JobStatus, error) {
	st := e.cat().Get(catalog.JobStateMany)
	out := make(map[int64]rowtype.JobStatus, len(ids))
	chunk := e.chunkSize()
	for start := 0; start < len(ids); start += chunk {
		sqlText, args := e.cat().BindIDs(st, ids[start:min(start+chunk, len(ids))])
		rows, err := e.query(ctx, q, st.Name, sqlText, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id, attempts int64
			var s string
			if err := rows.Scan(&id, &s, &attempts); err != nil {
				rows.Close()
				return nil, err
			}
			out[id] = rowtype.JobStatus(s)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// JobDependencyOutputs reads a job's dependencies — their kind, status and
// recorded output — without locks, at most limit of them, lowest id first.
func (e *Executor) JobDependencyOutputs(ctx context.Context, id int64, limit int) ([]rowtype.DependencyOutput, error) {
	edges, err := e.queryEdges(ctx, e.q, catalog.DepDependencies, []int64{id})
	if err != nil {
		return nil, e.wrap(fmt.Sprintf("dependency outputs of job %d", id), err)
	}
	var ids []int64
	for _, ed := range edges {
		ids = append(ids, ed.dependsOn)
	}
	ids = sortedUnique(ids)
	if limit > 0 && len(ids) > limit {
		ids = ids[:limit]
	}
	if len(ids) == 0 {
		return nil, nil
	}
	st := e.cat().Get(catalog.JobOutputsMany)
	sqlText, args := e.cat().BindIDs(st, ids)
	rows, err := e.query(ctx, e.q, st.Name, sqlText, args...)
	if err != nil {
		return nil, e.wrap(fmt.Sprintf("dependency outputs of job %d", id), err)
	}
	var out []rowtype.DependencyOutput
	for rows.Next() {
		var d rowtype.DependencyOutput
		var status string
		if err := rows.Scan(&d.ID, &d.Kind, &status, jsonBytes{&d.Output}); err != nil {
			rows.Close()
			return nil, e.wrap(fmt.Sprintf("dependency outputs of job %d", id), err)
		}
		d.Status = rowtype.JobStatus(status)
		out = append(out, d)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, e.wrap(fmt.Sprintf("dependency outputs of job %d", id), err)
	}
	return out, nil
}
