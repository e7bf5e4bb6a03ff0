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

// JobClaim takes up to Max ready jobs of a queue in one short transaction,
// from the queue's head or, with After, from after that key. Both lock the
// same way (claim-index entries and their rows in index order, SKIP
// LOCKED, stopping at the limit); the second only starts further on.
func (e *Executor) JobClaim(ctx context.Context, p *driver.JobClaimParams) ([]*rowtype.JobRow, error) {
	if p.Max <= 0 {
		return nil, nil
	}
	if e.caps().OneStatementClaim {
		// One statement locks (SKIP LOCKED), updates and returns the rows.
		st, args := e.cat().Get(catalog.JobClaim), []any{p.Queue, p.Max, keyArg(p.ProcessID)}
		if k := p.After; k != nil {
			st, args = e.cat().Get(catalog.JobClaimAfter), append(args, k.Priority, e.timeArg(k.AvailableAt), k.ID)
		}
		rows, err := e.query(ctx, e.q, st.Name, st.SQL, args...)
		if err != nil {
			return nil, e.wrap("claim", err)
		}
		jobs, err := scanJobs(rows)
		if err != nil {
			// The statement did not complete, so nothing was claimed.
			return nil, e.wrap("claim", err)
		}
		slices.SortFunc(jobs, func(a, b *rowtype.JobRow) int { return cmpInt64(a.ID, b.ID) })
		return jobs, nil
	}
	// MySQL: no UPDATE ... RETURNING. Lock the rows through the claim index
	// with SKIP LOCKED, then move them to RUNNING by primary key.
	var jobs []*rowtype.JobRow
	err := e.inTx(ctx, func(q Querier) error {
		st, args := e.cat().Get(catalog.JobClaimSelect), []any{p.Queue, p.Max}
		if k := p.After; k != nil {
			at := e.timeArg(k.AvailableAt)
			st, args = e.cat().Get(catalog.JobClaimSelectAfter), []any{p.Queue, k.Priority, k.Priority, at, at, k.ID, p.Max}
		}
		rows, err := e.query(ctx, q, st.Name, st.SQL, args...)
		if err != nil {
			return err
		}
		var now time.Time
		jobs = jobs[:0]
		for rows.Next() {
			j, err := scanJob(rows, nullTime{&now})
			if err != nil {
				rows.Close()
				return err
			}
			jobs = append(jobs, j)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		if len(jobs) == 0 {
			return nil
		}
		ids := make([]int64, len(jobs))
		for i, j := range jobs {
			ids[i] = j.ID
			j.Status, j.Attempts, j.StartedAt, j.HeartbeatAt = rowtype.StatusRunning, j.Attempts+1, now, now
			j.ClaimedBy = p.ProcessID
		}
		ids = sortedUnique(ids)
		n, err := e.execIDs(ctx, q, catalog.JobClaimUpdate, ids, e.timeArg(now), e.timeArg(now), keyArg(p.ProcessID))
		if err != nil {
			return err
		}
		if n != int64(len(ids)) {
			// The rows are locked by this transaction; anything else is a bug
			// worth failing loudly on rather than running a job twice.
			return fmt.Errorf("claim updated %d of %d locked rows", n, len(ids))
		}
		return nil
	})
	if err != nil {
		return nil, e.wrap("claim", err)
	}
	slices.SortFunc(jobs, func(a, b *rowtype.JobRow) int { return cmpInt64(a.ID, b.ID) })
	return jobs, nil
}
