package lockstep

import (
	"context"
	"time"

	"github.com/lockstep-queue/lockstep/driver"
)

// listenRetryMax caps the wait between attempts to re-establish a lost
// wake-up listener.
const listenRetryMax = 5 * time.Second

// startListener subscribes to the driver's wake-ups (PostgreSQL's
// LISTEN/NOTIFY) when the driver can send them, the client serves queues
// and Config.DisableNotify is not set. The first subscription is made
// before Start returns, so a job enqueued elsewhere after Start wakes this
// client; if it fails, the client polls alone until a retry succeeds. The
// listener stops with the producers.
func (c *Client) startListener(startCtx, ctx context.Context) {
	n, ok := c.drv.(driver.Notifier)
	if !ok || c.cfg.DisableNotify || len(c.cfg.Queues) == 0 {
		return
	}
	lctx, cancel := context.WithTimeout(startCtx, 10*time.Second)
	l, err := n.Listen(lctx)
	cancel()
	if err != nil {
		c.logger.Warn("lockstep: cannot listen for wake-ups; polling alone until a retry succeeds", "err", err)
		l = nil
	} else {
		c.logger.Debug("lockstep: listening for wake-ups")
	}
	c.producers.Add(1)
	go func() {
		defer c.producers.Done()
		c.listenLoop(ctx, n, l, err != nil)
	}()
}

// listenLoop relays wake-ups to the producers, and re-establishes a lost
// subscription with backoff. Polling goes on meanwhile: wake-ups only
// shorten a wait, they are never needed for a job to run.
func (c *Client) listenLoop(ctx context.Context, n driver.Notifier, l driver.Listener, failed bool) {
	failures := 0
	if failed {
		failures = 1
	}
	for {
		if l == nil {
			if !sleepCtx(ctx, listenBackoff(failures)) {
				return
			}
			var err error
			if l, err = n.Listen(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				failures++
				c.logger.Warn("lockstep: re-establishing the wake-up listener failed; polling meanwhile",
					"tries", failures, "retry_in", listenBackoff(failures), "err", err)
				l = nil
				continue
			}
			c.logger.Info("lockstep: wake-up listener re-established")
			// Jobs enqueued while no one listened: look now.
			c.wakeAll()
		}
		connected := time.Now()
		err := c.relayWakeups(ctx, l)
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = l.Close(closeCtx)
		cancel()
		l = nil
		if ctx.Err() != nil {
			return
		}
		// A connection that lived a while earns an immediate retry; one
		// that keeps failing at once backs off.
		if time.Since(connected) >= time.Minute {
			failures = 0
		} else {
			failures++
		}
		c.logger.Warn("lockstep: lost the wake-up listener connection; polling meanwhile, reconnecting",
			"retry_in", listenBackoff(failures), "err", err)
	}
}

// relayWakeups wakes the producer of each queue named by a wake-up until
// the listener fails or ctx ends.
func (c *Client) relayWakeups(ctx context.Context, l driver.Listener) error {
	for {
		queue, err := l.Wait(ctx)
		if err != nil {
			return err
		}
		c.wakeQueue(queue)
	}
}

// wakeAll wakes every producer of this client.
func (c *Client) wakeAll() {
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

// listenBackoff is the wait before the next attempt after failures
// consecutive ones: none after the first loss, then 100ms doubling to
// listenRetryMax, ±20%.
func listenBackoff(failures int) time.Duration {
	if failures <= 0 {
		return 0
	}
	return jitter(min(100*time.Millisecond<<min(failures-1, 10), listenRetryMax), 0.2)
}

// sleepCtx waits d, or less if ctx ends first; it reports whether ctx is
// still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
