package lockstep

import (
	"context"
	"fmt"
	"time"

	"github.com/lockstep-queue/lockstep/rowtype"
)

// The read model of the CLI, the dashboard and the metrics: every listing is
// newest-first and paged, and every count is bounded, so none of them costs
// a scan of a large table.
type (
	JobPageParams    = rowtype.JobPageParams
	JobPage          = rowtype.JobPage
	RunListParams    = rowtype.RunListParams
	BoundedCount     = rowtype.BoundedCount
	BoundedRunCounts = rowtype.BoundedRunCounts
	QueueStats       = rowtype.QueueStats
)

// StatsParams bounds Stats.
type StatsParams struct {
	// CountLimit bounds each count (a status of a queue); a count that
	// reaches it is reported Capped. Default 100,000.
	CountLimit int
	// Window is how far back the finished counts look. Default 1 minute.
	Window time.Duration
	// MaxQueues bounds how many queues are read. Default 1,000.
	MaxQueues int
}

// RunSummary is a run with its (bounded) job counts.
type RunSummary struct {
	*Run
	Counts BoundedRunCounts
}

// Stats reads every queue's counts by status, its oldest available PENDING
// job and its finished counts over the window.
func (c *Client) Stats(ctx context.Context, p *StatsParams) ([]*QueueStats, error) {
	if p == nil {
		p = &StatsParams{}
	}
	queues, err := c.exec.QueueList(ctx, &rowtype.QueueListParams{Limit: p.MaxQueues})
	if err != nil {
		return nil, fmt.Errorf("stats: %w", err)
	}
	out := make([]*QueueStats, 0, len(queues))
	for _, q := range queues {
		st, err := c.exec.QueueStats(ctx, &rowtype.QueueStatsParams{Queue: q, CountLimit: p.CountLimit, Window: p.Window})
		if err != nil {
			return nil, fmt.Errorf("stats: %w", err)
		}
		out = append(out, st)
	}
	return out, nil
}

// QueueStats reads one queue's numbers.
func (c *Client) QueueStats(ctx context.Context, queue string, p *StatsParams) (*QueueStats, error) {
	if p == nil {
		p = &StatsParams{}
	}
	st, err := c.exec.QueueStats(ctx, &rowtype.QueueStatsParams{Queue: queue, CountLimit: p.CountLimit, Window: p.Window})
	if err != nil {
		return nil, fmt.Errorf("queue stats: %w", err)
	}
	return st, nil
}

// JobPage lists jobs newest first, filtered, examining a bounded window of
// ids per page (see JobPageParams).
func (c *Client) JobPage(ctx context.Context, p JobPageParams) (*JobPage, error) {
	// The executor's error already says "list jobs".
	return c.exec.JobPage(ctx, &p)
}

// Runs lists runs newest first, each with its job counts (bounded by
// countLimit per run; 0 means 100,000).
func (c *Client) Runs(ctx context.Context, p RunListParams, countLimit int) ([]*RunSummary, error) {
	runs, err := c.exec.RunList(ctx, &p)
	if err != nil {
		return nil, err // the executor's error already says "list runs"
	}
	out := make([]*RunSummary, 0, len(runs))
	for _, r := range runs {
		counts, err := c.exec.RunCountsBounded(ctx, &rowtype.RunCountsBoundedParams{RunID: r.ID, Limit: countLimit})
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		out = append(out, &RunSummary{Run: r, Counts: *counts})
	}
	return out, nil
}

// RunSummary reads one run with its bounded job counts.
func (c *Client) RunSummary(ctx context.Context, id int64, countLimit int) (*RunSummary, error) {
	run, err := c.exec.RunGet(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("get run: %w", err)
	}
	counts, err := c.exec.RunCountsBounded(ctx, &rowtype.RunCountsBoundedParams{RunID: id, Limit: countLimit})
	if err != nil {
		return nil, fmt.Errorf("get run: %w", err)
	}
	return &RunSummary{Run: run, Counts: *counts}, nil
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
