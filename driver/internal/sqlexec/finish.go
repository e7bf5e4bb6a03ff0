package sqlexec

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// JobFinish writes a worker's result by primary key, fenced on the attempt.
func (e *Executor) JobFinish(ctx context.Context, p *driver.JobFinishParams) (bool, error) {
	var name catalog.Name
	var args []any
	switch {
	case p.Status == rowtype.StatusDone:
		name, args = catalog.JobFinishDone, []any{jsonArg(p.Output), p.ID, p.Attempt}
	case p.Status == rowtype.StatusFailed:
		name, args = catalog.JobFinishFailed, []any{p.Error, historyEntry(p.Attempt, p.Error), p.ID, p.Attempt}
	case p.Status == rowtype.StatusPending && p.Snooze:
		name, args = catalog.JobFinishSnooze, []any{micros(p.RetryAfter), p.ID, p.Attempt}
	case p.Status == rowtype.StatusPending:
		name, args = catalog.JobFinishRetry, []any{micros(p.RetryAfter), p.Error, historyEntry(p.Attempt, p.Error), p.ID, p.Attempt}
	default:
		return false, fmt.Errorf("finish job %d: status %q is not a result", p.ID, p.Status)
	}
	if p.Dependents > 0 && p.RunID != 0 && p.Status.Final() {
		// The end of a job others depend on: the run row shared, the job,
		// then its dependents upwards, in one transaction.
		var wrote bool
		err := e.inTx(ctx, func(q Querier) error {
			if _, _, err := e.lockRun(ctx, q, p.RunID, false); err != nil {
				return err
			}
			res, err := e.exec(ctx, q, name, e.cat().Get(name).SQL, args...)
			if err != nil {
				return err
			}
			if wrote = res.RowsAffected == 1; !wrote {
				return nil
			}
			if p.Flow != nil {
				*p.Flow = driver.FlowCounts{} // a retried transaction counts afresh
			}
			return e.propagate(ctx, q, p.RunID, map[int64]rowtype.JobStatus{p.ID: p.Status}, p.Flow)
		})
		if err != nil {
			return false, e.wrap(fmt.Sprintf("finish job %d", p.ID), err)
		}
		return wrote, e.released(ctx, wrote, []leftKey{{p.Queue, p.LimitKey}})
	}
	res, err := e.exec(ctx, e.q, name, e.cat().Get(name).SQL, args...)
	if err != nil {
		return false, e.wrap(fmt.Sprintf("finish job %d", p.ID), err)
	}
	wrote := res.RowsAffected == 1
	return wrote, e.released(ctx, wrote, []leftKey{{p.Queue, p.LimitKey}})
}

// released runs afterLeave once a write that moved jobs out of RUNNING has
// committed; its error is a *driver.ReleaseError: the write stands.
func (e *Executor) released(ctx context.Context, wrote bool, left []leftKey) error {
	if !wrote {
		return nil
	}
	if err := e.afterLeave(ctx, left); err != nil {
		return &driver.ReleaseError{Err: err}
	}
	return nil
}

// JobCompleteMany writes DONE for a batch of attempts, one statement per
// attempt number (nearly always one) and chunk, each its own transaction
// that locks its rows by primary key in ascending id order. Where the
// statement returns the ids it changed (PostgreSQL, SQLite) that is all.
// On MySQL, which cannot return them, each statement runs alone in
// autocommit, and a row count short of the batch is followed by a read of
// which rows are DONE at the attempt (completeChecked).
func (e *Executor) JobCompleteMany(ctx context.Context, jobs []driver.JobRef) ([]driver.JobRef, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	want := make(map[int64]int, len(jobs))
	for _, j := range jobs {
		want[j.ID] = j.Attempt
	}
	st := e.cat().Get(catalog.JobFinishDoneMany)
	chunk := e.chunkSize()
	groups := groupByAttempt(want)
	attempts := make([]int, 0, len(groups))
	for a := range groups {
		attempts = append(attempts, a)
	}
	slices.Sort(attempts)
	var written []driver.JobRef
	for _, a := range attempts {
		ids := sortedUnique(groups[a])
		for start := 0; start < len(ids); start += chunk {
			part := ids[start:min(start+chunk, len(ids))]
			var got []int64
			var err error
			if st.Returning {
				sqlText, args := e.cat().BindIDs(st, part, a)
				got, err = e.queryIDs(ctx, e.q, st.Name, sqlText, args...)
			} else {
				got, err = e.completeChecked(ctx, part, a)
			}
			if err != nil {
				return nil, e.wrap(fmt.Sprintf("complete %d jobs", len(jobs)), err)
			}
			for _, id := range got {
				written = append(written, driver.JobRef{ID: id, Attempt: a})
			}
		}
	}
	slices.SortFunc(written, func(x, y driver.JobRef) int { return cmpInt64(x.ID, y.ID) })
	// The written refs are the caller's, queue and key included.
	var left []leftKey
	if len(written) > 0 {
		byID := make(map[int64]driver.JobRef, len(jobs))
		for _, j := range jobs {
			byID[j.ID] = j
		}
		for i, w := range written {
			j := byID[w.ID]
			written[i].Queue, written[i].LimitKey = j.Queue, j.LimitKey
			if j.LimitKey != "" {
				left = append(left, leftKey{j.Queue, j.LimitKey})
			}
		}
	}
	return written, e.released(ctx, len(left) > 0, left)
}

// completeChecked is the batched DONE where the statement cannot say which
// rows it changed (MySQL has no UPDATE ... RETURNING). It is one statement
// in autocommit — one round trip where BEGIN, UPDATE and COMMIT took three
// — taking the same row locks in the same order as it did alone in a
// transaction. Its count says how many fences held. When it falls short
// (a job cancelled or reaped meanwhile) and is not zero, the rows it wrote
// are among those now DONE at this attempt: only the process holding an
// attempt writes its DONE (a reap returns the job at the same attempt, and
// the next claim adds one), so a plain read by primary key finds them.
// That read also finds a row an earlier try of the same batch wrote
// before it failed, which the caller has not been told of either — but
// only when this statement wrote some row: a count of zero reads nothing,
// and such rows are reported as not written (their DONE stands).
func (e *Executor) completeChecked(ctx context.Context, ids []int64, attempt int) ([]int64, error) {
	n, err := e.execIDs(ctx, e.q, catalog.JobFinishDoneMany, ids, attempt)
	switch {
	case err != nil:
		return nil, err
	case n == int64(len(ids)):
		return ids, nil
	case n == 0:
		return nil, nil
	}
	st, err := e.states(ctx, e.q, ids)
	if err != nil {
		return nil, err
	}
	var done []int64
	for _, id := range ids {
		if s, ok := st[id]; ok && s.status == rowtype.StatusDone && s.attempt == attempt {
			done = append(done, id)
		}
	}
	return done, nil
}

// jobState is a job's status and attempt, as job.state_many reads them.
type jobState struct {
	status  rowtype.JobStatus
	attempt int
}

// states reads the status and attempt of each of ids that exists, by
// primary key, without locking.
func (e *Executor) states(ctx context.Context, q Querier, ids []int64) (map[int64]jobState, error) {
	out := make(map[int64]jobState, len(ids))
	chunk := e.chunkSize()
	for start := 0; start < len(ids); start += chunk {
		part := ids[start:min(start+chunk, len(ids))]
		sqlText, args := e.cat().BindIDs(e.cat().Get(catalog.JobStateMany), part)
		rows, err := e.query(ctx, q, catalog.JobStateMany, sqlText, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id, att int64
			var status string
			if err := rows.Scan(&id, &status, &att); err != nil {
				rows.Close()
				return nil, err
			}
			out[id] = jobState{rowtype.JobStatus(status), int(att)}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func groupByAttempt(attempts map[int64]int) map[int][]int64 {
	out := map[int][]int64{}
	for id, a := range attempts {
		out[a] = append(out[a], id)
	}
	return out
}

// lockMany locks job rows by primary key in ascending id order, through
// the dialect's locking read (LockIDsFirst: job.lock_ids on PostgreSQL;
// LockMany: job.lock_many on MySQL); SQLite has one writer and needs none.
func (e *Executor) lockMany(ctx context.Context, q Querier, ids []int64) error {
	var st catalog.Statement
	switch caps := e.caps(); {
	case caps.LockIDsFirst:
		st = e.cat().Get(catalog.JobLockIDs)
	case caps.LockMany:
		st = e.cat().Get(catalog.JobLockMany)
	default:
		return nil
	}
	chunk := e.chunkSize()
	for start := 0; start < len(ids); start += chunk {
		if err := e.lockRows(ctx, q, st, ids[start:min(start+chunk, len(ids))]); err != nil {
			return err
		}
	}
	return nil
}

// JobHeartbeat refreshes heartbeats by primary key in ascending id order
// and reports the attempts this worker no longer owns.
func (e *Executor) JobHeartbeat(ctx context.Context, jobs []driver.JobRef) ([]driver.JobRef, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	want := make(map[int64]int, len(jobs))
	ids := make([]int64, 0, len(jobs))
	for _, j := range jobs {
		want[j.ID] = j.Attempt
		ids = append(ids, j.ID)
	}
	ids = sortedUnique(ids)
	owned := map[int64]bool{}
	err := e.inTx(ctx, func(q Querier) error {
		if _, err := e.execIDs(ctx, q, catalog.JobHeartbeat, ids); err != nil {
			return err
		}
		sqlText, args := e.cat().BindIDs(e.cat().Get(catalog.JobStateMany), ids)
		rows, err := e.query(ctx, q, catalog.JobStateMany, sqlText, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		clear(owned)
		for rows.Next() {
			var id, attempts int64
			var status string
			if err := rows.Scan(&id, &status, &attempts); err != nil {
				return err
			}
			owned[id] = rowtype.JobStatus(status) == rowtype.StatusRunning && int(attempts) == want[id]
		}
		return rows.Err()
	})
	if err != nil {
		return nil, e.wrap("heartbeat", err)
	}
	var lost []driver.JobRef
	for _, j := range jobs {
		if !owned[j.ID] {
			lost = append(lost, j)
		}
	}
	return lost, nil
}
