package lockstep

import (
	"context"
	"fmt"

	"github.com/lockstep-queue/lockstep/rowtype"
)

// Jobs are read through bounded pages: every listing is newest-first and
// examines a bounded window of ids, so none costs a scan of a large table.
type (
	JobPageParams = rowtype.JobPageParams
	JobPage       = rowtype.JobPage
	JobListParams = rowtype.JobListParams
	// JobView is an operator's view of PENDING jobs (JobPageParams.View).
	JobView = rowtype.JobView
)

// MaxSearchLen bounds JobPageParams.Search.
const MaxSearchLen = rowtype.MaxSearchLen

// The views of JobPageParams.View.
const (
	// ViewScheduled: PENDING jobs available later.
	ViewScheduled = rowtype.ViewScheduled
	// ViewRetrying: PENDING jobs after a failed attempt, waiting for the
	// next (their available_at is the next attempt's time).
	ViewRetrying = rowtype.ViewRetrying
)

// JobPage lists jobs newest first, filtered, examining a bounded window of
// ids per page (see JobPageParams).
func (c *Client) JobPage(ctx context.Context, p JobPageParams) (*JobPage, error) {
	// The executor's error already says "list jobs".
	return c.exec.JobPage(ctx, &p)
}

// RetryJob puts a FAILED job back to PENDING, available now, with one more
// attempt if it had none left. It reports false when the job was not
// FAILED, and ErrRunCancelled for a job of a cancelled run.
func (c *Client) RetryJob(ctx context.Context, id int64) (bool, error) {
	var ok bool
	err := c.retryDB(ctx, "retry job", func(ctx context.Context) error {
		var err error
		ok, err = c.exec.JobRetry(ctx, id)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("retry job: %w", err)
	}
	if ok {
		if j, err := c.exec.JobGet(ctx, id); err == nil {
			c.wakeQueue(j.Queue)
		}
	}
	return ok, nil
}

// CancelJob cancels one PENDING or RUNNING job; false if it was in neither
// state.
func (c *Client) CancelJob(ctx context.Context, id int64) (bool, error) {
	var ok bool
	err := c.retryDBIdempotent(ctx, "cancel job", func(ctx context.Context) error {
		var err error
		ok, err = c.exec.JobCancel(ctx, id)
		return c.released("cancel job", err)
	})
	if err != nil {
		return false, fmt.Errorf("cancel job: %w", err)
	}
	if ok {
		c.cancelLocal(id)
		c.emit(Event{Kind: EventCancelled, Count: 1})
		if c.history != nil {
			// Its queue and kind, for the history (best effort: a cancel
			// is rare, and the job may be pruned already).
			if j, err := c.exec.JobGet(ctx, id); err == nil {
				c.recordCancel(j.Queue, j.Kind)
			}
			c.mu.Lock()
			started := c.started
			c.mu.Unlock()
			if !started {
				// No flush loop here (a CLI's client): now.
				_ = c.FlushHistory(ctx)
			}
		}
	}
	return ok, nil
}

// Job reads one job.
func (c *Client) Job(ctx context.Context, id int64) (*JobRow, error) {
	return c.exec.JobGet(ctx, id)
}

// Jobs lists jobs by ascending id.
func (c *Client) Jobs(ctx context.Context, p JobListParams) ([]*JobRow, error) {
	return c.exec.JobList(ctx, &p)
}
