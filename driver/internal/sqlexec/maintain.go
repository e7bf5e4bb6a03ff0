package sqlexec

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// JobReap returns RUNNING jobs with a stale heartbeat to PENDING (FAILED
// when no attempt is left). Candidates come from a non-locking read; each
// is then updated alone by primary key, in ascending id order, re-checking
// that it is still the same stale attempt.
func (e *Executor) JobReap(ctx context.Context, p *driver.JobReapParams) ([]rowtype.ReapResult, error) {
	limit := p.Max
	if limit <= 0 {
		limit = 1000
	}
	// One cutoff, on the database's clock as the reap begins, for the
	// candidates and for each one's fenced UPDATE: an UPDATE that waits
	// for a lock (SQLite's single writer, a row another transaction
	// holds) must not measure staleness at the end of its wait, which
	// every live job's heartbeat spent waiting too.
	now, err := e.clock(ctx, e.q)
	if err != nil {
		return nil, e.wrap("reap: read the clock", err)
	}
	cutoff := e.timeArg(now.Add(-p.StaleAfter))
	rows, err := e.query(ctx, e.q, catalog.JobReapSelect, e.cat().Get(catalog.JobReapSelect).SQL, cutoff, limit)
	if err != nil {
		return nil, e.wrap("reap: select", err)
	}
	type cand struct {
		id                  int64
		attempts, maxAttmpt int64
		runID, dependents   int64
		queue, key          string
	}
	var cands []cand
	for rows.Next() {
		var c cand
		if err := rows.Scan(&c.id, &c.attempts, &c.maxAttmpt, nullInt64{&c.runID}, nullInt64{&c.dependents}, &c.queue, nullString{&c.key}); err != nil {
			rows.Close()
			return nil, e.wrap("reap: select", err)
		}
		cands = append(cands, c)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, e.wrap("reap: select", err)
	}
	slices.SortFunc(cands, func(a, b cand) int { return cmpInt64(a.id, b.id) })
	st := e.cat().Get(catalog.JobReap)
	var out []rowtype.ReapResult
	var left []leftKey
	for _, c := range cands {
		msg := fmt.Sprintf("heartbeat lost: no heartbeat for over %s (worker presumed dead)", p.StaleAfter)
		args := []any{msg, historyEntry(int(c.attempts), msg), c.id, c.attempts, cutoff}
		var affected int64
		if c.dependents > 0 && c.runID != 0 && c.attempts >= c.maxAttmpt {
			// Reaped to FAILED, with dependents: written with theirs, the
			// run row shared first, as a worker's failure would be.
			err = e.inTx(ctx, func(q Querier) error {
				if _, _, err := e.lockRun(ctx, q, c.runID, false); err != nil {
					return err
				}
				res, err := e.exec(ctx, q, st.Name, st.SQL, args...)
				if err != nil {
					return err
				}
				if affected = res.RowsAffected; affected != 1 {
					return nil
				}
				return e.propagate(ctx, q, c.runID, map[int64]rowtype.JobStatus{c.id: rowtype.StatusFailed}, nil)
			})
		} else {
			var res Result
			res, err = e.exec(ctx, e.q, st.Name, st.SQL, args...)
			affected = res.RowsAffected
		}
		if err != nil {
			return out, e.wrap(fmt.Sprintf("reap job %d", c.id), err)
		}
		if affected == 1 {
			status := rowtype.StatusPending
			if c.attempts >= c.maxAttmpt {
				status = rowtype.StatusFailed
			}
			out = append(out, rowtype.ReapResult{ID: c.id, Attempt: int(c.attempts), Status: status})
			left = append(left, leftKey{c.queue, c.key})
		}
	}
	return out, e.released(ctx, len(left) > 0, left)
}

// JobPrune implements driver.Executor: the candidates are read without
// locks through the queue-status index; then, in one transaction per
// call, each chunk is locked by primary key in ascending id order and
// checked again (a retried FAILED job is PENDING now), and what still
// qualifies is deleted by primary key.
func (e *Executor) JobPrune(ctx context.Context, p *driver.JobPruneParams) ([]int64, error) {
	switch p.Status {
	case rowtype.StatusDone, rowtype.StatusCancelled, rowtype.StatusFailed:
	default:
		return nil, fmt.Errorf("prune: status %q is not a final status", p.Status)
	}
	limit := p.Max
	if limit <= 0 {
		limit = 1000
	}
	cands, err := e.queryIDs(ctx, e.q, catalog.JobPruneSelect, e.cat().Get(catalog.JobPruneSelect).SQL, p.Queue, string(p.Status), micros(p.OlderThan), limit)
	if err != nil {
		return nil, e.wrap("prune: select", err)
	}
	if len(cands) == 0 {
		return nil, nil
	}
	deleted, err := e.pruneIDs(ctx, p.Status, p.OlderThan, cands)
	if err != nil {
		return nil, e.wrap("prune", err)
	}
	return deleted, nil
}

// pruneIDs deletes those of cands still in status and older than
// olderThan, in one transaction: each chunk locked by primary key in
// ascending id order and checked again (a retried FAILED job is PENDING
// now), then deleted by primary key with the edges into it. Retention and
// the bulk delete share it.
func (e *Executor) pruneIDs(ctx context.Context, status rowtype.JobStatus, olderThan time.Duration, cands []int64) ([]int64, error) {
	cands = sortedUnique(cands)
	lock, del := e.cat().Get(catalog.JobPruneLock), e.cat().Get(catalog.JobDeleteMany)
	var deleted []int64
	err := e.inTx(ctx, func(q Querier) error {
		deleted = deleted[:0]
		chunk := e.chunkSize()
		for start := 0; start < len(cands); start += chunk {
			sqlText, args := e.cat().BindIDs(lock, cands[start:min(start+chunk, len(cands))], string(status), micros(olderThan))
			still, err := e.queryIDs(ctx, q, lock.Name, sqlText, args...)
			if err != nil {
				return err
			}
			if len(still) == 0 {
				continue
			}
			slices.Sort(still)
			sqlText, args = e.cat().BindIDs(del, still)
			if _, err := e.exec(ctx, q, del.Name, sqlText, args...); err != nil {
				return err
			}
			// Their edges go with them (those into them; an edge out of a
			// pruned job stays until its dependent is pruned, and a
			// dependency that is gone ended long ago).
			dep := e.cat().Get(catalog.DepDeleteMany)
			sqlText, args = e.cat().BindIDs(dep, still)
			if _, err := e.exec(ctx, q, dep.Name, sqlText, args...); err != nil {
				return err
			}
			deleted = append(deleted, still...)
		}
		return nil
	})
	return deleted, err
}
