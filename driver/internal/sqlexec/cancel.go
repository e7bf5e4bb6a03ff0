package sqlexec

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// JobCancel cancels one job by primary key. A job others depend on is
// cancelled with the run row shared first and its dependents after it, in
// one transaction, as a finish writes them.
func (e *Executor) JobCancel(ctx context.Context, id int64) (bool, error) {
	var ok bool
	var left []leftKey
	err := e.inTx(ctx, func(q Querier) error {
		left = nil
		// run_id and dependents never change after the insert: a read
		// without locks is enough to choose the path.
		job, err := e.getJob(ctx, q, id)
		if errors.Is(err, rowtype.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		flow := job.Dependents > 0 && job.RunID != 0
		if flow {
			if _, _, err := e.lockRun(ctx, q, job.RunID, false); err != nil {
				return err
			}
		}
		res, err := e.exec(ctx, q, catalog.JobCancel, e.cat().Get(catalog.JobCancel).SQL, id)
		if err != nil {
			return err
		}
		if ok = res.RowsAffected == 1; ok && job.LimitKey != "" {
			left = []leftKey{{job.Queue, job.LimitKey}}
		}
		if ok && flow {
			return e.propagate(ctx, q, job.RunID, map[int64]rowtype.JobStatus{id: rowtype.StatusCancelled}, nil)
		}
		return nil
	})
	if err != nil {
		return false, e.wrap(fmt.Sprintf("cancel job %d", id), err)
	}
	return ok, e.released(ctx, ok, left)
}

// RunCancel is the cancel of the measured write-up of the claim/cancel
// deadlock, written the safe way and with the run first: lock and mark the
// run row by primary key (so no job can be enqueued into it), read the ids
// of its live jobs without locking, then cancel them by primary key in
// ascending id order, re-checking their status. A claim that meets it then
// meets it on a job's primary key first, never through a secondary index.
func (e *Executor) RunCancel(ctx context.Context, id int64) (*rowtype.RunCancelResult, error) {
	var out *rowtype.RunCancelResult
	var left []leftKey
	err := e.inTx(ctx, func(q Querier) error {
		if _, err := e.exec(ctx, q, catalog.RunCancel, e.cat().Get(catalog.RunCancel).SQL, id); err != nil {
			return err
		}
		run, err := e.getRun(ctx, q, id)
		if err != nil {
			return err
		}
		st := e.cat().Get(catalog.JobIDsLiveByRun)
		rows, err := e.query(ctx, q, st.Name, st.SQL, id)
		if err != nil {
			return err
		}
		var ids []int64
		left = left[:0]
		for rows.Next() {
			var jid int64
			var l leftKey
			if err := rows.Scan(&jid, &l.queue, nullString{&l.key}); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, jid)
			if l.key != "" {
				left = append(left, l)
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		ids = sortedUnique(ids)
		if len(ids) == 0 {
			// The run row is ours: no job can join it now, so "no live
			// job" is final unless the run has no job at all (an empty
			// run may be cancelled to keep jobs out of it). Refused, the
			// cancel is rolled back; a repeat cancel is told apart below.
			has, err := e.runHasJobs(ctx, q, id)
			if err != nil {
				return err
			}
			if has {
				return rowtype.ErrRunFinished
			}
		}
		if _, err := e.execIDs(ctx, q, catalog.JobCancelMany, ids); err != nil {
			return err
		}
		out = &rowtype.RunCancelResult{Run: run, Cancelled: ids}
		return nil
	})
	if errors.Is(err, rowtype.ErrRunFinished) {
		// A run is only ever ACTIVE → CANCELLED, so one read now tells a
		// repeat cancel (which succeeds, cancelling nothing) from a run
		// that ended on its own (which keeps its history).
		run, gerr := e.getRun(ctx, e.q, id)
		switch {
		case gerr != nil:
			return nil, e.wrap(fmt.Sprintf("cancel run %d", id), gerr)
		case run.Status == rowtype.RunCancelled:
			return &rowtype.RunCancelResult{Run: run}, nil
		}
		return nil, err
	}
	if err != nil {
		if errors.Is(err, rowtype.ErrNotFound) {
			return nil, err
		}
		return nil, e.wrap(fmt.Sprintf("cancel run %d", id), err)
	}
	return out, e.released(ctx, len(left) > 0, left)
}

// runHasJobs reports whether run id has any job, reading at most one row
// of the run index without locks (run.counts_bounded, limit 1).
func (e *Executor) runHasJobs(ctx context.Context, q Querier, id int64) (bool, error) {
	rows, err := e.query(ctx, q, catalog.RunCountsBounded, e.cat().Get(catalog.RunCountsBounded).SQL, id, 1)
	if err != nil {
		return false, err
	}
	has := rows.Next()
	return has, errors.Join(rows.Err(), rows.Close())
}
