package lockstep

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockstep-queue/lockstep/rowtype"
)

// A queue's numbers: each count is a bounded index range, so stats never
// cost a scan of a large table.
type (
	BoundedCount = rowtype.BoundedCount
	QueueStats   = rowtype.QueueStats
)

// QueueSettings are a queue's shared settings, persisted in the database:
// every process serving the queue follows them.
type QueueSettings = rowtype.QueueSettings

// MaxQueueWorkers bounds a queue's workers in one process, configured or
// set at runtime.
const MaxQueueWorkers = 10000

// ErrInvalidQueueSetting classifies a queue setting refused before it
// reached the database: an empty, too long or control-character queue
// name, or max workers out of range.
var ErrInvalidQueueSetting = errors.New("invalid queue setting")

// queueSettings is the snapshot of every queue's settings a client last
// read; producers consult it before each claim.
type queueSettings map[string]QueueSettings

// PauseQueue pauses a queue in every process: each stops claiming its jobs
// within Config.QueueSettingsInterval (default 500ms) — this client at
// once. Jobs already running finish; enqueues are still accepted. Pausing
// a paused queue keeps its first pause time.
func (c *Client) PauseQueue(ctx context.Context, queue string) error {
	return c.setQueue(ctx, "pause queue", queue, func(ctx context.Context) error {
		return c.exec.QueuePause(ctx, queue, true)
	})
}

// ResumeQueue undoes PauseQueue.
func (c *Client) ResumeQueue(ctx context.Context, queue string) error {
	return c.setQueue(ctx, "resume queue", queue, func(ctx context.Context) error {
		return c.exec.QueuePause(ctx, queue, false)
	})
}

// SetQueueMaxWorkers caps how many of the queue's jobs each process runs
// at once, overriding QueueConfig.MaxWorkers while it is set (raising it
// too, up to 10000); n = 0 clears the cap. Running jobs are not stopped: a
// lower cap takes effect as they finish.
func (c *Client) SetQueueMaxWorkers(ctx context.Context, queue string, n int) error {
	if n < 0 || n > MaxQueueWorkers {
		return fmt.Errorf("set queue max workers: %w: max workers must be between 0 (clear) and %d, got %d", ErrInvalidQueueSetting, MaxQueueWorkers, n)
	}
	return c.setQueue(ctx, "set queue max workers", queue, func(ctx context.Context) error {
		return c.exec.QueueSetMaxWorkers(ctx, queue, n)
	})
}

// ListQueueSettings returns the settings of every queue that has any.
func (c *Client) ListQueueSettings(ctx context.Context) ([]QueueSettings, error) {
	s, err := c.exec.QueueSettings(ctx)
	if err != nil {
		return nil, fmt.Errorf("list queue settings: %w", err)
	}
	return s, nil
}

func (c *Client) setQueue(ctx context.Context, op, queue string, fn func(ctx context.Context) error) error {
	if err := validName("queue", queue); err != nil {
		return fmt.Errorf("%s: %w: %w", op, ErrInvalidQueueSetting, err)
	}
	// Each is one upsert that sets an absolute value: safe to repeat.
	if err := c.retryDBIdempotent(ctx, op, fn); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	c.mu.Lock()
	started := c.started
	c.mu.Unlock()
	if started {
		if err := c.refreshQueueSettings(ctx); err != nil {
			c.logger.Warn("lockstep: queue settings not re-read; the next poll will", "err", err)
		}
	}
	return nil
}

// RemoveQueueSettings removes a queue's shared settings — its pause, max
// workers and limits — for every process (each re-reads them within
// QueueSettingsInterval), and reports whether it had any. Its jobs are
// left as they are and run as each process configures the queue; jobs its
// limits held BLOCKED are released at once. `lockstep queues remove`
// refuses a queue with live jobs first; this does not.
func (c *Client) RemoveQueueSettings(ctx context.Context, queue string) (bool, error) {
	var removed bool
	err := c.setQueue(ctx, "remove queue settings", queue, func(ctx context.Context) error {
		var err error
		removed, err = c.exec.QueueDelete(ctx, queue)
		return err
	})
	if err != nil || !removed {
		return removed, err
	}
	// No limits now: nothing may stay BLOCKED. (The reap loop's sweep is
	// the net for a process whose cached limits blocked a job since.)
	n, err := c.exec.LimitSweep(ctx, queue)
	if err != nil {
		return true, fmt.Errorf("remove queue settings: release blocked jobs: %w", err)
	}
	if n > 0 {
		c.wakeQueue(queue)
	}
	return true, nil
}

// queueLimit is whether the queue is paused and how many of its jobs this
// process may run, by the last settings read.
func (c *Client) queueLimit(queue string, configured int) (paused bool, limit int) {
	return limitOf(c.loadSettings(), queue, configured)
}

func (c *Client) loadSettings() queueSettings {
	if p := c.settings.Load(); p != nil {
		return *p
	}
	return nil
}

// refreshQueueSettings reads every queue's settings, swaps the snapshot,
// and wakes the producers of queues that resumed or may run more. The read
// and the swap happen under settingsMu, so an older read can never replace
// a newer one; events are reported after it is released, so an OnEvent
// that changes a setting does not wait for itself.
func (c *Client) refreshQueueSettings(ctx context.Context) error {
	c.settingsMu.Lock()
	list, err := c.exec.QueueSettings(ctx)
	if err != nil {
		c.settingsMu.Unlock()
		return err
	}
	next := make(queueSettings, len(list))
	for _, s := range list {
		next[s.Queue] = s
	}
	prev := c.loadSettings()
	c.settings.Store(&next)
	c.settingsMu.Unlock()
	for name, qc := range c.cfg.Queues {
		wasPaused, wasLimit := limitOf(prev, name, qc.MaxWorkers)
		paused, limit := limitOf(next, name, qc.MaxWorkers)
		if nowPaused, nowLimit := limitOf(c.loadSettings(), name, qc.MaxWorkers); nowPaused != paused || nowLimit != limit {
			continue // a newer refresh swapped in since, and reports its own change
		}
		switch {
		case paused && !wasPaused:
			c.logger.Info("lockstep: queue paused", "queue", name)
			c.emit(Event{Kind: EventQueuePaused, Queue: name})
		case !paused && wasPaused:
			c.logger.Info("lockstep: queue resumed", "queue", name)
			c.emit(Event{Kind: EventQueueResumed, Queue: name})
			c.wakeQueue(name)
		}
		if limit != wasLimit {
			c.logger.Info("lockstep: queue max workers changed", "queue", name, "max_workers", limit)
			c.emit(Event{Kind: EventQueueMaxWorkers, Queue: name, Count: limit})
			c.wakeQueue(name)
		}
	}
	return nil
}

func limitOf(s queueSettings, queue string, configured int) (bool, int) {
	q, ok := s[queue]
	if !ok {
		return false, configured
	}
	if q.MaxWorkers > 0 {
		configured = min(q.MaxWorkers, MaxQueueWorkers)
	}
	return !q.Paused.IsZero(), configured
}

// settingsLoop re-reads the queue settings every QueueSettingsInterval, so
// a pause or a new cap set by any process reaches this one within it.
func (c *Client) settingsLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.QueueSettingsInterval)
	defer t.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := c.refreshQueueSettings(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			// The last settings read stay in force while the database is
			// away.
			failures++
			if failures == 1 || failures%100 == 0 {
				c.logger.Warn("lockstep: reading queue settings failed", "failed", failures, "err", err)
			}
			continue
		}
		failures = 0
	}
}

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

// Queues lists the queues that have jobs, by name, at most limit of them
// (0 means 1,000): one bounded read of the queue index.
func (c *Client) Queues(ctx context.Context, limit int) ([]string, error) {
	names, err := c.exec.QueueList(ctx, &rowtype.QueueListParams{Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	return names, nil
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
