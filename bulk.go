package lockstep

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockstep-queue/lockstep/rowtype"
)

// Bulk actions retry, cancel or delete many jobs: the ones an operator
// selected, or every job matching a filter ("retry every FAILED job of
// kind X that finished in the last hour"). They run in bounded batches
// that keep the one lock order: the matching ids are read without locks,
// a window of the primary key at a time, and each batch is written in its
// own transaction, runs before jobs and jobs by primary key in ascending
// id order, each job's status re-checked as it is written.
type (
	BulkAction = rowtype.BulkAction
	BulkResult = rowtype.BulkResult
	JobFilter  = rowtype.JobFilter
)

// The bulk actions.
const (
	// BulkRetry puts FAILED jobs back to PENDING, as RetryJob does.
	BulkRetry = rowtype.BulkRetry
	// BulkCancel cancels WAITING, PENDING, BLOCKED and RUNNING jobs, as
	// CancelJob does.
	BulkCancel = rowtype.BulkCancel
	// BulkDelete deletes DONE, FAILED and CANCELLED jobs, as retention
	// does (never one whose worker still runs it).
	BulkDelete = rowtype.BulkDelete
)

// DefaultBulkBatchSize is how many jobs one batch writes, in one
// transaction, unless BulkParams.BatchSize says otherwise.
const DefaultBulkBatchSize = 500

// MaxBulkBatchSize bounds BulkParams.BatchSize: a batch is one
// transaction, and its locks are held until it commits.
const MaxBulkBatchSize = 5_000

// BulkParams says what a bulk action does and to which jobs.
type BulkParams struct {
	Action BulkAction
	// IDs are the jobs an operator selected. When set, Filter is not read.
	IDs []int64
	// Filter selects every matching job, oldest first.
	Filter JobFilter
	// BatchSize is how many jobs one transaction writes (default
	// DefaultBulkBatchSize, at most MaxBulkBatchSize).
	BatchSize int
	// Progress, if set, is called after each batch with the totals so far.
	Progress func(BulkProgress)
}

// BulkProgress is a bulk action's totals after a batch.
type BulkProgress struct {
	BulkResult
	// Through is the highest id the scan has passed; Last is the highest
	// id it will read (both 0 for a list of selected ids).
	Through, Last int64
}

func (p *BulkParams) validate() error {
	if _, err := rowtype.ParseBulkAction(string(p.Action)); err != nil {
		return err
	}
	switch {
	case p.BatchSize == 0:
		p.BatchSize = DefaultBulkBatchSize
	case p.BatchSize < 0 || p.BatchSize > MaxBulkBatchSize:
		return fmt.Errorf("bulk %s: a batch is 1 to %d jobs, got %d", p.Action, MaxBulkBatchSize, p.BatchSize)
	}
	return nil
}

// BulkCount is the preview of a bulk action over a filter: how many jobs
// it would select now, read without locks, counted to the end. Over
// statuses a table holds few of — FAILED, and the live ones — it counts
// each through the status-led index where the dialect has one (MySQL,
// MariaDB); otherwise, and over DONE jobs (most of a table), every window
// of the primary key, so its cost grows with the table (see
// BENCHMARKS.md). BulkPreview bounds it by a time budget.
func (c *Client) BulkCount(ctx context.Context, action BulkAction, f JobFilter) (int64, error) {
	p, err := c.BulkPreview(ctx, BulkPreviewParams{Action: action, Filter: f})
	return p.Jobs, err
}

// BulkPreviewParams says which count BulkPreview makes.
type BulkPreviewParams struct {
	Action BulkAction
	Filter JobFilter
	// Budget bounds a count that reads the primary key window by window:
	// it reads the newest window first and goes on to older ones only
	// while the next would end within the budget (timed as the slowest
	// so far), so a preview on a big table answers in about
	// the budget and says "at least". Zero counts every window.
	Budget time.Duration
	// Window is how many ids one read covers. Default 100,000.
	Window int
}

// BulkPreviewResult is what a bulk action would select now.
type BulkPreviewResult struct {
	// Jobs: how many, exactly when Exact, else at least this many (the
	// budget ran out first).
	Jobs  int64
	Exact bool
	// IDsRead and IDsTotal: the span of ids the count read, newest first,
	// and the table's (equal when exact).
	IDsRead, IDsTotal int64
}

// BulkPreview counts what a bulk action over a filter would select now,
// without locks, within p.Budget when set (see BulkCount for the reads).
func (c *Client) BulkPreview(ctx context.Context, p BulkPreviewParams) (BulkPreviewResult, error) {
	var out BulkPreviewResult
	if _, err := rowtype.ParseBulkAction(string(p.Action)); err != nil {
		return out, err
	}
	if p.Budget < 0 || p.Window < 0 {
		return out, fmt.Errorf("bulk %s: a preview's budget and window must not be negative", p.Action)
	}
	statuses := p.Action.Statuses()
	if p.Filter.Status != "" {
		statuses = []rowtype.JobStatus{p.Filter.Status}
	}
	if c.drv.Catalog().Capabilities().StatusIndex && !slices.Contains(statuses, rowtype.StatusDone) {
		// One bounded read a status: a range of the status-led index.
		for _, st := range statuses {
			k, err := c.exec.JobMatchCount(ctx, &rowtype.JobMatchParams{Action: p.Action, Filter: p.Filter, ByStatus: st})
			if err != nil {
				return out, err
			}
			out.Jobs += k
		}
		out.Exact = true
		return out, nil
	}
	lo, hi, err := c.exec.JobIDBounds(ctx)
	if err != nil {
		return out, err
	}
	if hi == 0 {
		out.Exact = true // no job
		return out, nil
	}
	window := int64(orDefaultInt(p.Window, bulkCountWindow))
	start := time.Now()
	var slowest time.Duration
	out.IDsTotal = max(0, hi-lo+1)
	// Newest first: the jobs an operator just saw fail are counted before
	// the budget can run out.
	for end := hi; end >= lo; end -= window {
		if p.Budget > 0 && out.IDsRead > 0 && time.Since(start)+slowest > p.Budget {
			return out, nil
		}
		began := time.Now()
		after := max(end-window, lo-1)
		k, err := c.exec.JobMatchCount(ctx, &rowtype.JobMatchParams{Action: p.Action, Filter: p.Filter, AfterID: after, Window: int(end - after)})
		if err != nil {
			return out, err
		}
		slowest = max(slowest, time.Since(began))
		out.Jobs += k
		out.IDsRead += end - after
	}
	out.Exact = true
	return out, nil
}

// bulkCountWindow is the executor's default window: BulkCount steps by it.
const bulkCountWindow = 100_000

func orDefaultInt(v, d int) int {
	if v <= 0 {
		return d
	}
	return v
}

// Bulk runs a bulk action to its end (or ctx's) and returns its totals.
// Each batch commits on its own: a cancelled context or an error stops the
// action between batches, with the batches before it written (and
// counted in the result returned with the error).
func (c *Client) Bulk(ctx context.Context, p BulkParams) (BulkResult, error) {
	var total BulkResult
	if err := p.validate(); err != nil {
		return total, err
	}
	batch := func(ids []int64, through, last int64) error {
		var res *rowtype.BulkResult
		err := c.retryDB(ctx, "bulk "+string(p.Action), func(ctx context.Context) error {
			var err error
			res, err = c.exec.JobBulk(ctx, p.Action, ids)
			return err
		})
		if err != nil {
			return err
		}
		total.Add(*res)
		if p.Progress != nil {
			p.Progress(BulkProgress{BulkResult: total, Through: through, Last: last})
		}
		return nil
	}
	if len(p.IDs) > 0 {
		ids := sortedIDs(p.IDs)
		for start := 0; start < len(ids); start += p.BatchSize {
			if err := ctx.Err(); err != nil {
				return total, err
			}
			if err := batch(ids[start:min(start+p.BatchSize, len(ids))], 0, 0); err != nil {
				return total, fmt.Errorf("bulk %s: %w", p.Action, err)
			}
		}
		c.wakeAfterBulk(p.Action, total)
		return total, nil
	}
	lo, hi, err := c.exec.JobIDBounds(ctx)
	if err != nil {
		return total, err
	}
	for after := lo - 1; after < hi; {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		m, err := c.exec.JobMatch(ctx, &rowtype.JobMatchParams{Action: p.Action, Filter: p.Filter, AfterID: after, Limit: p.BatchSize})
		if err != nil {
			return total, err
		}
		if len(m.IDs) > 0 {
			if err := batch(m.IDs, min(m.Next, hi), hi); err != nil {
				return total, fmt.Errorf("bulk %s: %w", p.Action, err)
			}
		}
		after = m.Next
	}
	c.wakeAfterBulk(p.Action, total)
	return total, nil
}

// wakeAfterBulk wakes this process's producers after a retry, whose jobs
// are PENDING now (other processes learn it from the wake-up the
// executor sends, or their next poll).
func (c *Client) wakeAfterBulk(a BulkAction, r BulkResult) {
	if a != BulkRetry || r.Changed == 0 {
		return
	}
	c.mu.Lock()
	queues := make([]string, 0, len(c.wake))
	for q := range c.wake {
		queues = append(queues, q)
	}
	c.mu.Unlock()
	for _, q := range queues {
		c.wakeQueue(q)
	}
}

func sortedIDs(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}
