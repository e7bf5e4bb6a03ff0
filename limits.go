package lockstep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// Limits: how many of a queue's jobs run at once across every process, per
// key, one at a time in order (sequences), and how many start per period.
// They are the queue's shared settings, enforced by the claim: a claim
// counts the slots in use from the jobs themselves (RUNNING ones), so a
// slot is free the moment the write that moves its job out of RUNNING
// commits, whatever moved it — a finish, a retry, a snooze, the reaper, a
// cancel. See docs/features.md.

type (
	// QueueLimits are a queue's limits; a zero field sets none.
	QueueLimits = rowtype.QueueLimits
	// SequencePolicy is whether a queue's keys are sequences, and what a
	// FAILED job does to the jobs after it.
	SequencePolicy = rowtype.SequencePolicy
)

// The sequence policies.
const (
	SequenceNone    = rowtype.SequenceNone
	SequenceRelease = rowtype.SequenceRelease
	SequenceHold    = rowtype.SequenceHold
)

// Bounds on limits: beyond them a setting is a typo, not a plan.
const (
	// MaxLimitKeyLen is the longest LimitKey, in bytes.
	MaxLimitKeyLen = 255
	// MinRatePeriod is the shortest rate period: the database clock's
	// precision on SQLite is a millisecond.
	MinRatePeriod = time.Millisecond
	// MaxRatePeriod is the longest rate period.
	MaxRatePeriod = 7 * 24 * time.Hour
	// MaxLimit bounds each count of a QueueLimits: the columns are 32-bit.
	MaxLimit = math.MaxInt32
)

// validLimitKey refuses a key the databases would not store as given.
func validLimitKey(k string) error {
	switch {
	case len(k) > MaxLimitKeyLen:
		return fmt.Errorf("limit key is %d bytes; the limit is %d", len(k), MaxLimitKeyLen)
	case !utf8.ValidString(k):
		return errors.New("limit key is not valid UTF-8")
	case strings.ContainsRune(k, 0):
		return errors.New(`limit key contains the character U+0000, which PostgreSQL's text cannot store`)
	}
	return nil
}

// validLimits refuses limits that cannot mean what they say.
func validLimits(l QueueLimits) error {
	switch {
	case l.Concurrency < 0, l.KeyConcurrency < 0, l.Rate < 0:
		return errors.New("limits must be 0 (none) or positive")
	case l.Concurrency > MaxLimit, l.KeyConcurrency > MaxLimit, l.Rate > MaxLimit:
		return fmt.Errorf("limits must be at most %d", MaxLimit)
	case l.Sequence < SequenceNone || l.Sequence > SequenceHold:
		return fmt.Errorf("unknown sequence policy %d", l.Sequence)
	case l.Rate > 0 && (l.RatePeriod < MinRatePeriod || l.RatePeriod > MaxRatePeriod):
		return fmt.Errorf("a rate limit needs a period between %s and %s, got %s", MinRatePeriod, MaxRatePeriod, l.RatePeriod)
	case l.Rate == 0 && (l.RatePeriod != 0 || l.RateByKey):
		return errors.New("a rate period or per-key rate without a rate")
	}
	return nil
}

// SetQueueLimits sets a queue's limits in every process; a zero
// QueueLimits clears them. Each process's claims follow them within
// Config.QueueSettingsInterval, this one's at once. Jobs already running
// are not stopped: a lower limit takes effect as they finish.
func (c *Client) SetQueueLimits(ctx context.Context, queue string, l QueueLimits) error {
	if err := validLimits(l); err != nil {
		return fmt.Errorf("set queue limits: %w: %w", ErrInvalidQueueSetting, err)
	}
	if err := c.setQueue(ctx, "set queue limits", queue, func(ctx context.Context) error {
		return c.exec.QueueSetLimits(ctx, queue, l)
	}); err != nil {
		return err
	}
	// Looser limits, or none: what the old ones held back is released now
	// (a key's next job to end would release only its own key's).
	if _, err := c.exec.LimitSweep(ctx, queue); err != nil {
		return fmt.Errorf("set queue limits: set, but releasing the jobs the old limits held back failed (the sweep will): %w", err)
	}
	c.wakeQueue(queue)
	return nil
}

// applyConfiguredLimits writes the limits of queues configured with them.
func (c *Client) applyConfiguredLimits(ctx context.Context) error {
	for name, qc := range c.cfg.Queues {
		if qc.Limits == nil {
			continue
		}
		l := *qc.Limits
		if err := c.retryDBIdempotent(ctx, "set queue limits", func(ctx context.Context) error {
			return c.exec.QueueSetLimits(ctx, name, l)
		}); err != nil {
			return fmt.Errorf("queue %q: set limits: %w", name, err)
		}
	}
	return nil
}

// queueLimits are the queue's limits by the last settings read.
func (c *Client) queueLimits(queue string) QueueLimits {
	return c.loadSettings()[queue].Limits
}

// released turns the failure of the release that follows a committed
// write into a log line: the write stands, and the key's BLOCKED jobs are
// released by the next job of theirs to end, or by the sweep.
func (c *Client) released(op string, err error) error {
	var rel *driver.ReleaseError
	if errors.As(err, &rel) {
		c.logger.Warn("lockstep: "+op+" written; releasing blocked jobs failed, the sweep will", "err", rel.Err)
		return nil
	}
	return err
}

// limitSweep releases the BLOCKED jobs of every queue this client serves
// whose keys have room: the net under the release each job's end does, for
// a process that died in between, and for limits loosened or removed while
// their jobs were BLOCKED. A queue without BLOCKED jobs costs one read of an
// empty range of the queue/status index.
func (c *Client) limitSweep(ctx context.Context) {
	for name := range c.cfg.Queues {
		n, err := c.exec.LimitSweep(ctx, name)
		if err != nil {
			if ctx.Err() == nil {
				c.logger.Warn("lockstep: limit sweep failed", "queue", name, "err", err)
			}
			continue
		}
		if n > 0 {
			c.logger.Info("lockstep: released blocked jobs whose keys had room", "queue", name, "released", n)
			c.wakeQueue(name)
		}
	}
}

// releaseCancelled frees the slot of a job cancelled while it ran, now
// that its worker has returned: without it, the slot stays taken until
// the job's last heartbeat is ReapAfter old.
func (c *Client) releaseCancelled(job *JobRow) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.FinishTimeout)
	defer cancel()
	err := c.retryDBIdempotent(ctx, "release", func(ctx context.Context) error {
		return c.released("release", c.exec.JobRelease(ctx, driver.JobRef{ID: job.ID, Attempt: job.Attempts, Queue: job.Queue, LimitKey: job.LimitKey}))
	})
	if err != nil {
		c.logger.Warn("lockstep: freeing a cancelled job's slot failed; it frees at the reap limit", "job", job.ID, "err", err)
	}
}
