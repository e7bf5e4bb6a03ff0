package lockstep

import (
	"context"
	"time"

	"github.com/lockstep-queue/lockstep/driver"
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
	c.mu.Lock()
	refs := make([]driver.JobRef, 0, len(c.running))
	for id, r := range c.running {
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
		if r := c.running[l.ID]; r != nil && r.attempt == l.Attempt {
			c.logger.Info("lockstep: job cancelled or reclaimed elsewhere; cancelling its context", "job", l.ID, "attempt", l.Attempt)
			r.cancel(ErrJobLost)
		}
	}
}

func (c *Client) reapLoop(ctx context.Context) {
	every(ctx, c.cfg.ReapInterval, func(ctx context.Context) {
		if _, err := c.Reap(ctx); err != nil && ctx.Err() == nil {
			c.logger.Error("lockstep: reap failed", "err", err)
		}
	})
}

// Reap returns RUNNING jobs whose heartbeat is older than Config.ReapAfter
// to PENDING (FAILED when they have no attempt left), and reports them. It
// is safe to run in every process at once.
func (c *Client) Reap(ctx context.Context) ([]driver.ReapResult, error) {
	var out []driver.ReapResult
	err := c.retryDBIdempotent(ctx, "reap", func(ctx context.Context) error {
		var err error
		out, err = c.exec.JobReap(ctx, &driver.JobReapParams{StaleAfter: c.cfg.ReapAfter, Max: 1000})
		return err
	})
	for _, r := range out {
		c.emit(Event{Kind: EventReaped, Status: r.Status})
		c.logger.Warn("lockstep: reaped a job whose worker stopped heartbeating", "job", r.ID, "attempt", r.Attempt, "now", r.Status)
	}
	return out, err
}
