package sqlexec

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// BulkRefColumns are what a bulk batch reads of its jobs, without locks,
// to choose each job's path: run_id, dependents, queue and limit_key never
// change after the insert; status and whether it has finished are
// re-checked by the writes.
const BulkRefColumns = "id, run_id, dependents, queue, limit_key, status, finished_at IS NOT NULL"

// Defaults of a bulk scan's windows.
const (
	defaultMatchWindow = 100_000
	defaultMatchLimit  = 500
)

// JobIDBounds returns the lowest and the highest job id (0, 0 when the
// table is empty): where a bulk scan starts and ends.
func (e *Executor) JobIDBounds(ctx context.Context) (lo, hi int64, err error) {
	if err := e.queryRow(ctx, catalog.JobIDBounds, nil, &lo, &hi); err != nil {
		return 0, 0, e.wrap("bulk: id bounds", err)
	}
	return lo, hi, nil
}

// JobMatch reads one window of a bulk scan, without locks.
func (e *Executor) JobMatch(ctx context.Context, p *rowtype.JobMatchParams) (*rowtype.JobMatch, error) {
	window, limit := orDefault(p.Window, defaultMatchWindow), orDefault(p.Limit, defaultMatchLimit)
	args, err := e.matchArgs(p, window)
	if err != nil {
		return nil, err
	}
	ids, err := e.queryIDs(ctx, e.q, catalog.JobMatch, e.cat().Get(catalog.JobMatch).SQL, append(args, limit)...)
	if err != nil {
		return nil, e.wrap("bulk: match", err)
	}
	out := &rowtype.JobMatch{IDs: ids, Next: p.AfterID + int64(window)}
	if len(ids) == limit {
		out.Next = ids[len(ids)-1]
	}
	return out, nil
}

// JobMatchCount counts one window of a bulk scan, without locks: the
// preview of what the action would select.
func (e *Executor) JobMatchCount(ctx context.Context, p *rowtype.JobMatchParams) (int64, error) {
	name, window := catalog.JobMatchCount, orDefault(p.Window, defaultMatchWindow)
	if p.ByStatus != "" {
		if !p.Action.Applies(p.ByStatus) {
			return 0, fmt.Errorf("bulk: %s applies to %s jobs, not %s", p.Action, statusWords(p.Action.Statuses()), p.ByStatus)
		}
		if !e.caps().StatusIndex {
			return e.countWindows(ctx, p)
		}
		// Every id, through the status-led index.
		q := *p
		q.AfterID, name = 0, catalog.JobMatchCountStatus
		p, window = &q, math.MaxInt64
	}
	args, err := e.matchArgs(p, window)
	if err != nil {
		return 0, err
	}
	if p.ByStatus != "" {
		args = append(args, string(p.ByStatus))
	}
	var n int64
	if err := e.queryRow(ctx, name, args, &n); err != nil {
		return 0, e.wrap("bulk: count", err)
	}
	return n, nil
}

// countWindows counts one status's matches window by window of the
// primary key, where no index is led by every status.
func (e *Executor) countWindows(ctx context.Context, p *rowtype.JobMatchParams) (int64, error) {
	lo, hi, err := e.JobIDBounds(ctx)
	if err != nil {
		return 0, err
	}
	q := *p
	q.Filter.Status, q.ByStatus, q.Window = p.ByStatus, "", orDefault(p.Window, defaultMatchWindow)
	var n int64
	for q.AfterID = lo - 1; q.AfterID < hi; q.AfterID += int64(q.Window) {
		k, err := e.JobMatchCount(ctx, &q)
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

// matchArgs binds a window's filter in the catalogue's order: the window,
// the job page's filter, the run, the action's statuses, the finish time.
func (e *Executor) matchArgs(p *rowtype.JobMatchParams, window int) ([]any, error) {
	f := p.Filter
	if f.Status != "" && !p.Action.Applies(f.Status) {
		return nil, fmt.Errorf("bulk: %s applies to %s jobs, not %s", p.Action, statusWords(p.Action.Statuses()), f.Status)
	}
	var retry, cancel, del int
	switch p.Action {
	case rowtype.BulkRetry:
		retry = 1
	case rowtype.BulkCancel:
		cancel = 1
	case rowtype.BulkDelete:
		del = 1
	default:
		return nil, fmt.Errorf("bulk: unknown action %q: use retry, cancel or delete", p.Action)
	}
	filter, err := pageFilterArgs(f.Status, f.Queue, f.Kind, f.View, f.Search)
	if err != nil {
		return nil, fmt.Errorf("bulk: %w", err)
	}
	hasRun, hasSince := 0, 0
	if f.RunID != 0 {
		hasRun = 1
	}
	since := time.Unix(0, 0)
	if !f.FinishedAfter.IsZero() {
		hasSince, since = 1, f.FinishedAfter
	}
	args := append([]any{p.AfterID, p.AfterID + int64(window)}, filter...)
	return append(args, hasRun, f.RunID, retry, cancel, del, hasSince, e.timeArg(since)), nil
}

func statusWords(sts []rowtype.JobStatus) string {
	words := make([]string, len(sts))
	for i, s := range sts {
		words[i] = string(s)
	}
	return strings.Join(words, ", ")
}

// bulkRef is what a batch knows of a job before it writes.
type bulkRef struct {
	id, runID, dependents int64
	queue, key            string
	status                rowtype.JobStatus
	finished              bool
}

// flow: a job of a run that others depend on, whose change must reach its
// dependents in its transaction — it takes the single-job path.
func (r bulkRef) flow() bool { return r.runID != 0 && r.dependents > 0 }

// JobBulk applies action to one batch of jobs (at most a few hundred
// ids), keeping the one lock order: the jobs' run and key are read
// without locks; a job with dependents in a run takes the single-job
// path (JobRetry, JobCancel: the run row, the job, its dependents); the
// rest are written together in one transaction — the runs they belong to
// locked shared in ascending id order first (a retry, so that no job of a
// run being cancelled comes back), then the jobs by primary key in
// ascending id order, each write re-checking the status it expects.
// A delete is retention's: lock by primary key, re-check, delete.
func (e *Executor) JobBulk(ctx context.Context, action rowtype.BulkAction, ids []int64) (*rowtype.BulkResult, error) {
	ids = sortedUnique(ids)
	res := &rowtype.BulkResult{Matched: len(ids), Batches: 1}
	if len(ids) == 0 {
		return res, nil
	}
	refs, err := e.bulkRefs(ctx, ids)
	if err != nil {
		return nil, e.wrap(fmt.Sprintf("bulk %s", action), err)
	}
	var single, batch []bulkRef
	for _, r := range refs {
		switch {
		case !action.Applies(r.status) || action == rowtype.BulkDelete && !r.finished:
			// Moved on since it was matched: left alone.
		case action != rowtype.BulkDelete && r.flow():
			single = append(single, r)
		default:
			batch = append(batch, r)
		}
	}
	var changed int
	switch action {
	case rowtype.BulkRetry:
		changed, err = e.bulkRetry(ctx, batch)
	case rowtype.BulkCancel:
		changed, err = e.bulkCancel(ctx, batch)
	case rowtype.BulkDelete:
		changed, err = e.bulkDelete(ctx, batch)
	default:
		return nil, fmt.Errorf("bulk: unknown action %q: use retry, cancel or delete", action)
	}
	if err != nil {
		return nil, e.wrap(fmt.Sprintf("bulk %s", action), err)
	}
	for _, r := range single {
		var ok bool
		if action == rowtype.BulkRetry {
			ok, err = e.JobRetry(ctx, r.id)
			// Its run cancelled, or the job deleted (retention, another
			// bulk delete) since it was matched: skipped.
			if errors.Is(err, rowtype.ErrRunCancelled) || errors.Is(err, rowtype.ErrNotFound) {
				ok, err = false, nil
			}
		} else {
			ok, err = e.JobCancel(ctx, r.id)
		}
		if err != nil {
			return nil, err
		}
		if ok {
			changed++
		}
	}
	res.Changed, res.Skipped = changed, len(ids)-changed
	return res, nil
}

// bulkRefs reads the batch's jobs without locks, ascending by id.
func (e *Executor) bulkRefs(ctx context.Context, ids []int64) ([]bulkRef, error) {
	st := e.cat().Get(catalog.JobBulkRefs)
	var out []bulkRef
	chunk := e.chunkSize()
	for start := 0; start < len(ids); start += chunk {
		sqlText, args := e.cat().BindIDs(st, ids[start:min(start+chunk, len(ids))])
		rows, err := e.query(ctx, e.q, st.Name, sqlText, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var r bulkRef
			var status string
			if err := rows.Scan(&r.id, nullInt64{&r.runID}, nullInt64{&r.dependents}, &r.queue, nullString{&r.key}, &status, &r.finished); err != nil {
				rows.Close()
				return nil, err
			}
			r.status = rowtype.JobStatus(status)
			out = append(out, r)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b bulkRef) int { return cmpInt64(a.id, b.id) })
	return out, nil
}

// bulkRetry: the runs shared in ascending id order, then the jobs of the
// runs that are not cancelled (and those of no run) by primary key.
func (e *Executor) bulkRetry(ctx context.Context, refs []bulkRef) (int, error) {
	if len(refs) == 0 {
		return 0, nil
	}
	var changed int
	err := e.inTx(ctx, func(q Querier) error {
		changed = 0
		var runs []int64
		for _, r := range refs {
			if r.runID != 0 {
				runs = append(runs, r.runID)
			}
		}
		cancelled := map[int64]bool{}
		for _, run := range sortedUnique(runs) {
			status, _, err := e.lockRun(ctx, q, run, false)
			if err != nil {
				return err
			}
			cancelled[run] = status == rowtype.RunCancelled
		}
		var ids []int64
		var queues []string
		for _, r := range refs {
			if !cancelled[r.runID] {
				ids = append(ids, r.id)
				queues = append(queues, r.queue)
			}
		}
		n, err := e.execIDs(ctx, q, catalog.JobRetryMany, ids)
		if err != nil {
			return err
		}
		changed = int(n)
		var due []string
		for _, queue := range sortedUniqueStrings(queues) {
			if e.wake().dueQueue(queue) {
				due = append(due, queue)
			}
		}
		if n > 0 && len(due) > 0 {
			return e.notify(ctx, q, due)
		}
		return nil
	})
	return changed, err
}

// bulkCancel: the jobs by primary key, as a run's cancel writes its
// own; their keys are released after the commit.
func (e *Executor) bulkCancel(ctx context.Context, refs []bulkRef) (int, error) {
	if len(refs) == 0 {
		return 0, nil
	}
	ids := make([]int64, len(refs))
	var left []leftKey
	for i, r := range refs {
		ids[i] = r.id
		if r.key != "" {
			left = append(left, leftKey{r.queue, r.key})
		}
	}
	var changed int
	err := e.inTx(ctx, func(q Querier) error {
		n, err := e.execIDs(ctx, q, catalog.JobCancelMany, ids)
		changed = int(n)
		return err
	})
	if err != nil {
		return 0, err
	}
	return changed, e.released(ctx, changed > 0, left)
}

// bulkDelete deletes the batch's final jobs as retention does, one
// status at a time: locked by primary key in ascending id order and
// re-checked, then deleted with the edges into them.
func (e *Executor) bulkDelete(ctx context.Context, refs []bulkRef) (int, error) {
	byStatus := map[rowtype.JobStatus][]int64{}
	for _, r := range refs {
		byStatus[r.status] = append(byStatus[r.status], r.id)
	}
	var changed int
	for _, status := range rowtype.BulkDelete.Statuses() {
		if len(byStatus[status]) == 0 {
			continue
		}
		// Any age: the finish time is no filter here (the match read
		// applied the user's). A negative age puts the bound ahead.
		deleted, err := e.pruneIDs(ctx, status, -24*time.Hour, byStatus[status])
		if err != nil {
			return changed, err
		}
		changed += len(deleted)
	}
	return changed, nil
}

func sortedUniqueStrings(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}
