package sqlexec

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// Defaults of the bounded reads.
const (
	defaultPageLimit  = 50
	defaultPageWindow = 10_000
	defaultCountLimit = 100_000
	defaultQueueLimit = 1_000
	defaultWindow     = time.Minute
)

// allStatuses is the order counts are read and shown in. WAITING and
// BLOCKED are counted like the others, by their own ranges of the
// queue/status index.
var allStatuses = [...]rowtype.JobStatus{
	rowtype.StatusWaiting, rowtype.StatusPending, rowtype.StatusBlocked, rowtype.StatusRunning, rowtype.StatusDone, rowtype.StatusFailed, rowtype.StatusCancelled,
}

// JobRetry puts a FAILED job back to PENDING. A job of a run locks the run
// row in share mode first — the run before its jobs, as an enqueue into the
// run does — so a retry cannot revive a job of a run being cancelled.
func (e *Executor) JobRetry(ctx context.Context, id int64) (bool, error) {
	var ok bool
	err := e.inTx(ctx, func(q Querier) error {
		job, err := e.getJob(ctx, q, id)
		if err != nil {
			return err
		}
		if job.Status != rowtype.StatusFailed {
			return nil
		}
		flow := job.RunID != 0 && job.Dependents > 0
		if job.RunID != 0 {
			// A job its dependents wait for takes the run row exclusively:
			// bringing them back recounts their dependencies, and no job of
			// the run may end meanwhile.
			status, _, err := e.lockRun(ctx, q, job.RunID, flow)
			if err != nil {
				return err
			}
			if status == rowtype.RunCancelled {
				return fmt.Errorf("run %d: %w", job.RunID, rowtype.ErrRunCancelled)
			}
		}
		res, err := e.exec(ctx, q, catalog.JobRetry, e.cat().Get(catalog.JobRetry).SQL, id)
		if err != nil {
			return err
		}
		ok = res.RowsAffected == 1
		if ok && flow {
			if err := e.revive(ctx, q, id); err != nil {
				return err
			}
		}
		if ok && e.wake().dueQueue(job.Queue) {
			return e.notify(ctx, q, []string{job.Queue})
		}
		return nil
	})
	if err != nil {
		return false, e.wrap(fmt.Sprintf("retry job %d", id), err)
	}
	return ok, nil
}

// getJob reads one job with a plain, non-locking read.
func (e *Executor) getJob(ctx context.Context, q Querier, id int64) (*rowtype.JobRow, error) {
	rows, err := e.query(ctx, q, catalog.JobGet, e.cat().Get(catalog.JobGet).SQL, id)
	if err != nil {
		return nil, err
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("job %d: %w", id, rowtype.ErrNotFound)
	}
	return jobs[0], nil
}

// JobPage lists jobs newest first in two bounded steps: the floor of the
// window (the Window-th id below BeforeID, read from the index alone), then
// the filtered rows between the floor and BeforeID.
func (e *Executor) JobPage(ctx context.Context, p *rowtype.JobPageParams) (*rowtype.JobPage, error) {
	limit := orDefault(p.Limit, defaultPageLimit)
	window := orDefault(p.Window, defaultPageWindow)
	before := p.BeforeID
	if before <= 0 {
		before = math.MaxInt64
	}
	floorArgs := []any{before, window}
	floorName, pageName := catalog.JobPageFloor, catalog.JobPage
	if p.RunID != 0 {
		floorArgs = []any{p.RunID, before, window}
		floorName, pageName = catalog.JobPageFloorByRun, catalog.JobPageByRun
	}
	var examined, floor int64
	if err := e.queryRow(ctx, floorName, floorArgs, &examined, &floor); err != nil {
		return nil, e.wrap("list jobs", err)
	}
	page := &rowtype.JobPage{Examined: int(examined)}
	if examined == 0 {
		return page, nil
	}
	filter, err := pageFilterArgs(p.Status, p.Queue, p.Kind, p.View, p.Search)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	args := append(append([]any{before, floor}, filter...), limit)
	if p.RunID != 0 {
		args = append([]any{p.RunID}, args...)
	}
	rows, err := e.query(ctx, e.q, pageName, e.cat().Get(pageName).SQL, args...)
	if err != nil {
		return nil, e.wrap("list jobs", err)
	}
	if page.Jobs, err = scanJobs(rows); err != nil {
		return nil, e.wrap("list jobs", err)
	}
	if p.Search != "" && p.RunID == 0 && len(page.Jobs) < limit && examined == int64(window) {
		// The window did not fill the page and there are older ids: a
		// search goes on through the text index where there is one,
		// rather than leave the operator paging window by window.
		if ok, err := e.searchBelow(ctx, p, page, floor, limit, filter); err != nil {
			return nil, e.wrap("search jobs", err)
		} else if ok {
			return page, nil
		}
	}
	switch {
	case len(page.Jobs) == limit:
		page.Next = page.Jobs[len(page.Jobs)-1].ID
	case examined == int64(window):
		page.Next = floor
	}
	return page, nil
}

// pageFilterArgs binds the job page's filter (shared by the bulk actions'
// windows) in the catalogue's order: status, queue and kind (each twice),
// the two view flags, the search and its LIKE pattern (twice).
func pageFilterArgs(status rowtype.JobStatus, queue, kind string, view rowtype.JobView, search string) ([]any, error) {
	var scheduled, retrying int
	switch view {
	case "":
	case rowtype.ViewScheduled:
		scheduled = 1
	case rowtype.ViewRetrying:
		retrying = 1
	default:
		return nil, fmt.Errorf("unknown view %q: use %q or %q", view, rowtype.ViewScheduled, rowtype.ViewRetrying)
	}
	if len(search) > rowtype.MaxSearchLen {
		return nil, fmt.Errorf("a search is at most %d bytes, got %d", rowtype.MaxSearchLen, len(search))
	}
	pattern := ""
	if search != "" {
		// Lower-cased for the dialects that lower the column (MySQL);
		// the others compare without case anyway.
		pattern = "%" + likeEscaper.Replace(strings.ToLower(search)) + "%"
	}
	st := string(status)
	return []any{st, st, queue, queue, kind, kind, scheduled, retrying, search, pattern, pattern}, nil
}

// likeEscaper escapes a search for the page statements' LIKE ... ESCAPE
// '!': the same escape character in every dialect (a backslash means
// different things in MySQL's and PostgreSQL's string literals).
var likeEscaper = strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")

// queryRow runs a one-row catalogue statement on the executor's querier.
func (e *Executor) queryRow(ctx context.Context, name catalog.Name, args []any, dest ...any) error {
	rows, err := e.query(ctx, e.q, name, e.cat().Get(name).SQL, args...)
	if err != nil {
		return err
	}
	found := rows.Next()
	if found {
		err = rows.Scan(dest...)
	}
	if err := errors.Join(err, rows.Err(), rows.Close()); err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("%s returned no row", name)
	}
	return nil
}

// RunList lists runs newest first.
func (e *Executor) RunList(ctx context.Context, p *rowtype.RunListParams) ([]*rowtype.RunRow, error) {
	before := p.BeforeID
	if before <= 0 {
		before = math.MaxInt64
	}
	rows, err := e.query(ctx, e.q, catalog.RunList, e.cat().Get(catalog.RunList).SQL, before, orDefault(p.Limit, defaultPageLimit))
	if err != nil {
		return nil, e.wrap("list runs", err)
	}
	defer rows.Close()
	var out []*rowtype.RunRow
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, e.wrap("list runs", err)
		}
		out = append(out, r)
	}
	return out, e.wrap("list runs", rows.Err())
}

// RunCountsBounded counts the first Limit jobs of a run by status.
func (e *Executor) RunCountsBounded(ctx context.Context, p *rowtype.RunCountsBoundedParams) (*rowtype.BoundedRunCounts, error) {
	limit := orDefault(p.Limit, defaultCountLimit)
	rows, err := e.query(ctx, e.q, catalog.RunCountsBounded, e.cat().Get(catalog.RunCountsBounded).SQL, p.RunID, limit)
	if err != nil {
		return nil, e.wrap(fmt.Sprintf("count run %d", p.RunID), err)
	}
	defer rows.Close()
	out := &rowtype.BoundedRunCounts{Counts: rowtype.RunCounts{}}
	total := 0
	for rows.Next() {
		var status string
		var n int64
		if err := rows.Scan(&status, &n); err != nil {
			return nil, e.wrap(fmt.Sprintf("count run %d", p.RunID), err)
		}
		out.Counts[rowtype.JobStatus(status)] = int(n)
		total += int(n)
	}
	if err := rows.Err(); err != nil {
		return nil, e.wrap(fmt.Sprintf("count run %d", p.RunID), err)
	}
	if total == limit {
		// Exactly limit, or more? Count one id past the limit, from the
		// run index alone.
		var ids, floor int64
		if err := e.queryRow(ctx, catalog.JobPageFloorByRun, []any{p.RunID, int64(math.MaxInt64), limit + 1}, &ids, &floor); err != nil {
			return nil, e.wrap(fmt.Sprintf("count run %d", p.RunID), err)
		}
		out.Capped = ids > int64(limit)
	}
	return out, nil
}

// QueueList lists the queues that have jobs, in name order.
func (e *Executor) QueueList(ctx context.Context, p *rowtype.QueueListParams) ([]string, error) {
	rows, err := e.query(ctx, e.q, catalog.QueueList, e.cat().Get(catalog.QueueList).SQL, orDefault(p.Limit, defaultQueueLimit))
	if err != nil {
		return nil, e.wrap("list queues", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var q string
		if err := rows.Scan(&q); err != nil {
			return nil, e.wrap("list queues", err)
		}
		out = append(out, q)
	}
	return out, e.wrap("list queues", rows.Err())
}

// QueueStats reads a queue's numbers with plain reads, each bounded by
// CountLimit index entries. They are not one snapshot; each is exact up to
// its bound at the moment it was read.
func (e *Executor) QueueStats(ctx context.Context, p *rowtype.QueueStatsParams) (*rowtype.QueueStats, error) {
	limit := orDefault(p.CountLimit, defaultCountLimit)
	window := p.Window
	if window <= 0 {
		window = defaultWindow
	}
	out := &rowtype.QueueStats{
		Queue: p.Queue, Window: window,
		Counts:   map[rowtype.JobStatus]rowtype.BoundedCount{},
		Finished: map[rowtype.JobStatus]rowtype.BoundedCount{},
	}
	wrap := func(err error) error { return e.wrap(fmt.Sprintf("stats of queue %q", p.Queue), err) }
	// Each count reads one entry past the limit, to tell "exactly limit"
	// from "more".
	bounded := func(n int64) rowtype.BoundedCount {
		if n > int64(limit) {
			return rowtype.BoundedCount{N: int64(limit), Capped: true}
		}
		return rowtype.BoundedCount{N: n}
	}
	for _, st := range allStatuses {
		var n int64
		if err := e.queryRow(ctx, catalog.QueueCount, []any{p.Queue, string(st), limit + 1}, &n); err != nil {
			return nil, wrap(err)
		}
		out.Counts[st] = bounded(n)
	}
	for _, st := range []rowtype.JobStatus{rowtype.StatusDone, rowtype.StatusFailed} {
		var n int64
		if err := e.queryRow(ctx, catalog.QueueFinished, []any{p.Queue, string(st), micros(window), limit + 1}, &n); err != nil {
			return nil, wrap(err)
		}
		out.Finished[st] = bounded(n)
	}
	var available int64
	if err := e.queryRow(ctx, catalog.QueueOldest, []any{p.Queue, limit + 1}, nullTime{&out.OldestAvailableAt}, nullTime{&out.Now}, &available); err != nil {
		return nil, wrap(err)
	}
	out.OldestCapped = available > int64(limit)
	out.Ready = bounded(available)
	return out, nil
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// JobGet reads one job.
func (e *Executor) JobGet(ctx context.Context, id int64) (*rowtype.JobRow, error) {
	job, err := e.getJob(ctx, e.q, id)
	if err != nil {
		return nil, e.wrap(fmt.Sprintf("get job %d", id), err)
	}
	return job, nil
}

// JobList lists jobs by id, optionally of one run and one status.
func (e *Executor) JobList(ctx context.Context, p *rowtype.JobListParams) ([]*rowtype.JobRow, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	var rows Rows
	var err error
	if p.RunID != 0 {
		rows, err = e.query(ctx, e.q, catalog.JobListByRun, e.cat().Get(catalog.JobListByRun).SQL, p.RunID, p.AfterID, string(p.Status), string(p.Status), limit)
	} else {
		rows, err = e.query(ctx, e.q, catalog.JobList, e.cat().Get(catalog.JobList).SQL, p.AfterID, string(p.Status), string(p.Status), limit)
	}
	if err != nil {
		return nil, e.wrap("list jobs", err)
	}
	jobs, err := scanJobs(rows)
	return jobs, e.wrap("list jobs", err)
}
