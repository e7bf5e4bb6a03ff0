package sqlexec

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// maxUniqueTries bounds the insert-or-find loop: each further try means the
// holder left its unique statuses between our insert and our read, which a
// steady stream of jobs under one key can do only so many times in a row.
const maxUniqueTries = 10

// JobInsertUnique implements driver.Executor. Where the dialect's insert
// skips a duplicate (ON CONFLICT DO NOTHING), no row back means a duplicate;
// on MySQL the duplicate is error 1062, classified by code. Either way the
// holder is then read by its key; when it has left its unique statuses
// since (finished, or cancelled), the insert is tried again.
func (e *Executor) JobInsertUnique(ctx context.Context, runID int64, job driver.JobInsertParams) (driver.UniqueInsertResult, error) {
	if job.UniqueKey == "" {
		return driver.UniqueInsertResult{}, errors.New("insert unique job: no unique key")
	}
	var res driver.UniqueInsertResult
	try := func(q Querier) error {
		if runID != 0 {
			if err := e.lockRunShared(ctx, q, runID); err != nil {
				return err
			}
		}
		for range maxUniqueTries {
			id, inserted, err := e.insertUnique(ctx, q, runID, job)
			if err != nil {
				return err
			}
			if inserted {
				res = driver.UniqueInsertResult{ID: id}
				return nil
			}
			holder, err := e.idByUniqueKey(ctx, q, job.UniqueKey)
			if err != nil {
				return err
			}
			if holder != 0 || e.pool == nil {
				// Inside the caller's transaction a snapshot may predate
				// the holder's commit; the client reads it from outside.
				res = driver.UniqueInsertResult{ID: holder, Duplicate: true}
				return nil
			}
		}
		return fmt.Errorf("key %s: the job holding it kept changing", job.UniqueKey)
	}
	var err error
	if runID != 0 {
		err = e.inTx(ctx, try)
	} else {
		err = try(e.q)
	}
	if err != nil {
		return driver.UniqueInsertResult{}, e.wrap("insert unique job", err)
	}
	if !res.Duplicate {
		if queues := e.wake().due([]driver.JobInsertParams{job}); len(queues) > 0 {
			// Best effort, outside the insert: a lost wake-up costs one
			// poll interval, never a job.
			_ = e.notify(ctx, e.q, queues)
		}
	}
	return res, nil
}

// insertUnique runs job.insert_unique once; inserted is false for a
// duplicate.
func (e *Executor) insertUnique(ctx context.Context, q Querier, runID int64, j driver.JobInsertParams) (int64, bool, error) {
	st := e.cat().Get(catalog.JobInsertUnique)
	if runID != 0 {
		j.RunID = runID
	}
	args := append(e.rowArgs(nil, j), j.UniqueKey, j.UniqueStates)
	if st.Returning {
		ids, err := e.queryIDs(ctx, q, st.Name, st.SQL, args...)
		if err != nil || len(ids) == 0 {
			return 0, false, err
		}
		return ids[0], true, nil
	}
	res, err := e.exec(ctx, q, st.Name, st.SQL, args...)
	if err != nil {
		if kind, _ := e.d.Classify(err); kind == rowtype.ErrorDuplicate {
			return 0, false, nil
		}
		return 0, false, err
	}
	return res.LastInsertID, true, nil
}

func (e *Executor) idByUniqueKey(ctx context.Context, q Querier, key string) (int64, error) {
	ids, err := e.queryIDs(ctx, q, catalog.JobIDByUniqueKey, e.cat().Get(catalog.JobIDByUniqueKey).SQL, key)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	return ids[0], nil
}

// JobIDByUniqueKey implements driver.Executor.
func (e *Executor) JobIDByUniqueKey(ctx context.Context, key string) (int64, error) {
	id, err := e.idByUniqueKey(ctx, e.q, key)
	return id, e.wrap("find unique job", err)
}
