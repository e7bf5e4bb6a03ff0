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
	err := e.inTx(ctx, func(q Querier) error {
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
		if ok = res.RowsAffected == 1; ok && flow {
			return e.propagate(ctx, q, job.RunID, map[int64]rowtype.JobStatus{id: rowtype.StatusCancelled}, nil)
		}
		return nil
	})
	if err != nil {
		return false, e.wrap(fmt.Sprintf("cancel job %d", id), err)
	}
	return ok, nil
}

// RunCancel is the cancel of the measured write-up of the claim/cancel
// deadlock, written the safe way and with the run first: lock and mark the
// run row by primary key (so no job can be enqueued into it), read the ids
// of its live jobs without locking, then cancel them by primary key in
// ascending id order, re-checking their status. A claim that meets it then
// meets it on a job's primary key first, never through a secondary index.
func (e *Executor) RunCancel(ctx context.Context, id int64) (*rowtype.RunCancelResult, error) {
	var out *rowtype.RunCancelResult
	err := e.inTx(ctx, func(q Querier) error {
		if _, err := e.exec(ctx, q, catalog.RunCancel, e.cat().Get(catalog.RunCancel).SQL, id); err != nil {
			return err
		}
		run, err := e.getRun(ctx, q, id)
		if err != nil {
			return err
		}
		ids, err := e.queryIDs(ctx, q, catalog.JobIDsLiveByRun, e.cat().Get(catalog.JobIDsLiveByRun).SQL, id)
		if err != nil {
			return err
		}
		ids = sortedUnique(ids)
		if _, err := e.execIDs(ctx, q, catalog.JobCancelMany, ids); err != nil {
			return err
		}
		out = &rowtype.RunCancelResult{Run: run, Cancelled: ids}
		return nil
	})
	if err != nil {
		if errors.Is(err, rowtype.ErrNotFound) {
			return nil, err
		}
		return nil, e.wrap(fmt.Sprintf("cancel run %d", id), err)
	}
	return out, nil
}
