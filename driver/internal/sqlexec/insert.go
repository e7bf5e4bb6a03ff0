package sqlexec

import (
	"context"
	"fmt"
	"slices"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// JobInsertMany inserts jobs in batches, one statement per batch. When the
// dialect wakes listeners and a queue is due a wake-up, the inserts and
// "job.notify" share one transaction (the executor's own on a pool).
func (e *Executor) JobInsertMany(ctx context.Context, jobs []driver.JobInsertParams) ([]int64, error) {
	queues := e.wake().due(jobs)
	if isFlow(jobs) {
		var ids []int64
		err := e.inTx(ctx, func(q Querier) error {
			var err error
			if ids, err = e.insertFlow(ctx, q, jobs); err != nil {
				return err
			}
			return e.notify(ctx, q, queues)
		})
		return ids, e.wrap("insert jobs", err)
	}
	if len(queues) == 0 {
		ids, err := e.insertJobs(ctx, e.q, jobs)
		return ids, e.wrap("insert jobs", err)
	}
	var ids []int64
	err := e.inTx(ctx, func(q Querier) error {
		var err error
		if ids, err = e.insertJobs(ctx, q, jobs); err != nil {
			return err
		}
		return e.notify(ctx, q, queues)
	})
	return ids, e.wrap("insert jobs", err)
}

// isFlow reports whether an insert carries a workflow: dependencies or a
// run's callbacks.
func isFlow(jobs []driver.JobInsertParams) bool {
	for _, j := range jobs {
		if len(j.DependsOn) > 0 || j.Callback != "" {
			return true
		}
	}
	return false
}

func (e *Executor) insertJobs(ctx context.Context, q Querier, jobs []driver.JobInsertParams) ([]int64, error) {
	const batch = 1000
	ids := make([]int64, 0, len(jobs))
	for start := 0; start < len(jobs); start += batch {
		part := jobs[start:min(start+batch, len(jobs))]
		got, err := e.insertBatch(ctx, q, part)
		if err != nil {
			return nil, err
		}
		ids = append(ids, got...)
	}
	return ids, nil
}

func (e *Executor) insertBatch(ctx context.Context, q Querier, jobs []driver.JobInsertParams) ([]int64, error) {
	st := e.cat().Get(catalog.JobInsert)
	var sqlText string
	var args []any
	if e.d.ColumnarInsert != nil {
		sqlText, args = st.SQL, e.d.ColumnarInsert(jobs)
	} else {
		sqlText = e.cat().BindRows(st, len(jobs))
		args = make([]any, 0, len(jobs)*8)
		for _, j := range jobs {
			args = e.rowArgs(args, j)
		}
	}
	return e.insertedIDs(ctx, q, st, sqlText, args, len(jobs))
}

// insertedIDs runs a multi-row insert of n jobs and returns their ids in
// input order.
func (e *Executor) insertedIDs(ctx context.Context, q Querier, st catalog.Statement, sqlText string, args []any, n int) ([]int64, error) {
	if !st.Returning {
		// No INSERT ... RETURNING (MySQL): LastInsertId is the first row's
		// id, and InnoDB reserves a multi-row VALUES insert's ids as one
		// block, in input order, whatever innodb_autoinc_lock_mode says
		// (interleaving is for inserts whose row count is unknown, such
		// as INSERT ... SELECT): first, first + step, first + 2·step, ...
		res, err := e.exec(ctx, q, st.Name, sqlText, args...)
		if err != nil {
			return nil, err
		}
		if res.RowsAffected != int64(n) || res.LastInsertID == 0 {
			return nil, fmt.Errorf("insert reported %d rows, first id %d, for %d jobs", res.RowsAffected, res.LastInsertID, n)
		}
		step := max(e.d.InsertIDStep, 1)
		ids := make([]int64, n)
		for i := range ids {
			ids[i] = res.LastInsertID + int64(i)*step
		}
		return ids, nil
	}
	ids, err := e.queryIDs(ctx, q, st.Name, sqlText, args...)
	if err != nil {
		return nil, err
	}
	if len(ids) != n {
		return nil, fmt.Errorf("insert returned %d ids for %d jobs", len(ids), n)
	}
	// RETURNING order is not guaranteed everywhere; ids are assigned in
	// insertion order within one statement, so sorted ids are input order.
	slices.Sort(ids)
	return ids, nil
}

// rowArgs appends one job's values in the column order of job.insert's
// rows (and the start of job.insert_unique's): run (NULL for none), queue,
// kind, args, priority, max attempts, time, metadata.
func (e *Executor) rowArgs(args []any, j driver.JobInsertParams) []any {
	var run any
	if j.RunID != 0 {
		run = j.RunID
	}
	return append(args, run, j.Queue, j.Kind, string(j.Args), j.Priority, j.MaxAttempts, e.timeArg(j.ScheduledAt), jsonArg(j.Metadata), keyArg(j.LimitKey))
}

// JobInsertIntoRun locks the run row first — the run before its jobs, the
// same order as RunCancel — so no job can slip into a run being cancelled.
func (e *Executor) JobInsertIntoRun(ctx context.Context, runID int64, jobs []driver.JobInsertParams) ([]int64, error) {
	queues := e.wake().due(jobs)
	var ids []int64
	err := e.inTx(ctx, func(q Querier) error {
		var err error
		if ids, err = e.insertIntoRun(ctx, q, runID, jobs); err != nil {
			return err
		}
		return e.notify(ctx, q, queues)
	})
	return ids, e.wrap("insert jobs into run", err)
}

func (e *Executor) insertIntoRun(ctx context.Context, q Querier, runID int64, jobs []driver.JobInsertParams) ([]int64, error) {
	if err := e.lockRunShared(ctx, q, runID); err != nil {
		return nil, err
	}
	withRun := make([]driver.JobInsertParams, len(jobs))
	for i, j := range jobs {
		j.RunID = runID
		withRun[i] = j
	}
	return e.insertJobs(ctx, q, withRun)
}

// lockRunShared locks a run row in share mode — the run before its jobs —
// and refuses a missing or cancelled run, and a run with callbacks: they
// were armed with the run's jobs at its creation.
func (e *Executor) lockRunShared(ctx context.Context, q Querier, runID int64) error {
	status, callbacks, err := e.lockRun(ctx, q, runID, false)
	if err != nil {
		return err
	}
	if status == rowtype.RunCancelled {
		return fmt.Errorf("run %d: %w", runID, rowtype.ErrRunCancelled)
	}
	if callbacks {
		return fmt.Errorf("run %d: %w", runID, rowtype.ErrRunClosed)
	}
	return nil
}
