package sqlexec

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// JobCancel cancels one job by primary key.
func (e *Executor) JobCancel(ctx context.Context, id int64) (bool, error) {
	res, err := e.exec(ctx, e.q, catalog.JobCancel, e.cat().Get(catalog.JobCancel).SQL, id)
	if err != nil {
		return false, e.wrap(fmt.Sprintf("cancel job %d", id), err)
	}
	return res.RowsAffected == 1, nil
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
