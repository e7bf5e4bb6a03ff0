package lockstep

import (
	"context"
	"fmt"
	"time"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// heartbeatLoop refreshes the heartbeat of this client's running jobs and
// cancels the context of any job it no longer owns (cancelled, or reaped
// and claimed again), so a cancelled job stops at the next beat at the
// latest.
func (c *Client) heartbeatLoop(ctx context.Context) {
	every(ctx, c.cfg.HeartbeatInterval, c.Heartbeat)
}

// every runs fn each interval until ctx ends.
func every(ctx context.Context, interval time.Duration, fn func(context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fn(ctx)
	}
}

// Heartbeat runs one heartbeat now. The loop calls it; tests and tools may.
func (c *Client) Heartbeat(ctx context.Context) {
	defer c.writes.start()()
	now := time.Now()
	c.mu.Lock()
	refs := make([]driver.JobRef, 0, len(c.running))
	for id, r := range c.running {
		if !r.finishingSince.IsZero() && now.Sub(r.finishingSince) < c.cfg.HeartbeatInterval {
			continue // its write is young: see runningJob
		}
		refs = append(refs, driver.JobRef{ID: id, Attempt: r.attempt})
	}
	c.mu.Unlock()
	if len(refs) == 0 {
		return
	}
	var lost []driver.JobRef
	err := c.retryDBIdempotent(ctx, "heartbeat", func(ctx context.Context) error {
		var err error
		lost, err = c.exec.JobHeartbeat(ctx, refs)
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			c.logger.Error("lockstep: heartbeat failed", "jobs", len(refs), "err", err)
		}
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range lost {
		if r := c.running[l.ID]; r != nil && r.attempt == l.Attempt && r.finishingSince.IsZero() {
			c.logger.Info("lockstep: job cancelled or reclaimed elsewhere; cancelling its context", "job", l.ID, "attempt", l.Attempt)
			r.cancel(ErrJobLost)
		}
	}
}

func (c *Client) reapLoop(ctx context.Context) {
	every(ctx, c.cfg.ReapInterval, func(ctx context.Context) {
		if late, wait := c.writes.delayed(time.Now()); late {
			// Every writer's heartbeat may have waited as long as ours:
			// a stale heartbeat now says nothing about its worker.
			c.logger.Info("lockstep: reap deferred: this process's heartbeat writes are waiting on the database", "wait", wait.Round(time.Millisecond))
		} else if _, err := c.Reap(ctx); err != nil && ctx.Err() == nil {
			c.logger.Error("lockstep: reap failed", "err", err)
		}
		c.limitSweep(ctx)
	})
}

// ReapResult is a reaped job and where it went (PENDING, or FAILED when it
// had no attempts left).
type ReapResult = rowtype.ReapResult

// Reap returns RUNNING jobs whose heartbeat is older than Config.ReapAfter
// to PENDING (FAILED when they have no attempt left), and reports them. It
// is safe to run in every process at once.
func (c *Client) Reap(ctx context.Context) ([]ReapResult, error) {
	var out []rowtype.ReapResult
	err := c.retryDBIdempotent(ctx, "reap", func(ctx context.Context) error {
		var err error
		out, err = c.exec.JobReap(ctx, &driver.JobReapParams{StaleAfter: c.cfg.ReapAfter, Max: 1000})
		return c.released("reap", err)
	})
	for _, r := range out {
		c.emit(Event{Kind: EventReaped, Status: r.Status})
		c.logger.Warn("lockstep: reaped a job whose worker stopped heartbeating", "job", r.ID, "attempt", r.Attempt, "now", r.Status)
	}
	return out, err
}

// retentionBatch is how many jobs one prune deletes: one short transaction
// over rows locked by primary key in ascending id order.
const retentionBatch = 1000

// maxRetentionBatches bounds one pass per queue and status, so a backlog
// of old jobs is worked off over several passes, not in one long burst.
const maxRetentionBatches = 100

func (c *Client) retentionLoop(ctx context.Context) {
	every(ctx, c.cfg.RetentionInterval, func(ctx context.Context) {
		if _, err := c.Prune(ctx); err != nil && ctx.Err() == nil {
			c.logger.Error("lockstep: retention failed", "err", err)
		}
		if _, err := c.PruneProcesses(ctx); err != nil && ctx.Err() == nil {
			c.logger.Error("lockstep: retention of dead processes failed", "err", err)
		}
		if n, err := c.PruneHistory(ctx); err != nil && ctx.Err() == nil {
			c.logger.Error("lockstep: history retention failed", "err", err)
		} else if n > 0 {
			c.logger.Info("lockstep: retention deleted old history", "rows", n)
		}
	})
}

// Prune runs one retention pass now: in each queue, DONE, CANCELLED and
// FAILED jobs older than Config.RetainDone, RetainCancelled and
// RetainFailed are deleted in batches, by primary key in ascending id
// order. It never deletes a PENDING or RUNNING job, and is safe to run in
// every process at once. It returns how many jobs it deleted.
func (c *Client) Prune(ctx context.Context) (int, error) {
	var queues []string
	err := c.retryDBIdempotent(ctx, "retention: list queues", func(ctx context.Context) error {
		var err error
		queues, err = c.exec.QueueList(ctx, &rowtype.QueueListParams{})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("retention: %w", err)
	}
	total := 0
	for _, q := range queues {
		for _, r := range []struct {
			status rowtype.JobStatus
			age    time.Duration
		}{{rowtype.StatusDone, c.cfg.RetainDone}, {rowtype.StatusCancelled, c.cfg.RetainCancelled}, {rowtype.StatusFailed, c.cfg.RetainFailed}} {
			if r.age < 0 {
				continue
			}
			for range maxRetentionBatches {
				var ids []int64
				err := c.retryDBIdempotent(ctx, "retention", func(ctx context.Context) error {
					var err error
					ids, err = c.exec.JobPrune(ctx, &driver.JobPruneParams{Queue: q, Status: r.status, OlderThan: r.age, Max: retentionBatch})
					return err
				})
				if err != nil {
					return total, fmt.Errorf("retention: queue %q, %s: %w", q, r.status, err)
				}
				total += len(ids)
				if len(ids) > 0 {
					c.logger.Debug("lockstep: retention deleted jobs", "queue", q, "status", r.status, "jobs", len(ids))
				}
				if len(ids) < retentionBatch {
					break
				}
			}
		}
	}
	if total > 0 {
		c.logger.Info("lockstep: retention deleted old jobs", "jobs", total)
	}
	return total, nil
}
