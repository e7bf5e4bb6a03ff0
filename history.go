package lockstep

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/lockstep-queue/lockstep/rowtype"
)

// HistoryRow is one minute of one queue's and kind's finished work in the
// history rollup (see Client.History).
type HistoryRow = rowtype.HistoryRow

// HistoryParams selects a time range of the history rollup, optionally of
// one queue and one kind.
type HistoryParams = rowtype.HistoryParams

// DefaultHistoryFlushInterval is how often a client adds the counts of the
// jobs it finished to the history rollup, unless Config says otherwise.
const DefaultHistoryFlushInterval = 10 * time.Second

// DefaultHistoryRetention is how long the rollup keeps a minute's rows,
// unless Config says otherwise.
const DefaultHistoryRetention = 30 * 24 * time.Hour

// maxHistoryPending bounds the rows a client keeps while its flushes fail:
// past it, the oldest minutes are dropped with a warning.
const maxHistoryPending = 50_000

// historyPruneBatch is about how many rollup rows one retention delete
// removes; maxHistoryPruneBatches bounds one pass.
const (
	historyPruneBatch      = 1000
	maxHistoryPruneBatches = 100
)

type historyKey struct {
	bucket      int64 // unix minute
	queue, kind string
}

// historyAgg counts a client's finishes per (minute, queue, kind) until
// the next flush. Job transactions never touch the rollup: a flush adds
// what was counted in a short transaction of its own, rows in primary-key
// order.
type historyAgg struct {
	mu      sync.Mutex
	pending map[historyKey]*rowtype.HistoryRow
	// flushMu makes flushes one at a time: a flush that fails puts its
	// rows back before the next one takes them.
	flushMu sync.Mutex
}

func newHistoryAgg() *historyAgg {
	return &historyAgg{pending: map[historyKey]*rowtype.HistoryRow{}}
}

// add counts one outcome at t.
func (h *historyAgg) add(t time.Time, queue, kind string, d rowtype.HistoryRow) {
	b := rowtype.HistoryBucket(t)
	k := historyKey{bucket: b.Unix() / 60, queue: queue, kind: kind}
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.pending[k]
	if r == nil {
		r = &rowtype.HistoryRow{Bucket: b, Queue: queue, Kind: kind}
		h.pending[k] = r
	}
	r.Add(d)
}

// take removes and returns what is pending, in primary-key order.
func (h *historyAgg) take() []rowtype.HistoryRow {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.pending) == 0 {
		return nil
	}
	out := make([]rowtype.HistoryRow, 0, len(h.pending))
	for _, r := range h.pending {
		out = append(out, *r)
	}
	clear(h.pending)
	slices.SortFunc(out, compareHistoryKey)
	return out
}

// putBack returns the rows of a failed flush, adding to what arrived
// since, and drops the oldest minutes past maxHistoryPending.
func (h *historyAgg) putBack(rows []rowtype.HistoryRow) (dropped int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range rows {
		k := historyKey{bucket: r.Bucket.Unix() / 60, queue: r.Queue, kind: r.Kind}
		if p := h.pending[k]; p != nil {
			p.Add(r)
		} else {
			r := r
			h.pending[k] = &r
		}
	}
	if over := len(h.pending) - maxHistoryPending; over > 0 {
		keys := slices.SortedFunc(maps.Keys(h.pending), func(a, b historyKey) int { return int(a.bucket - b.bucket) })
		for _, k := range keys[:over] {
			delete(h.pending, k)
		}
		return over
	}
	return 0
}

func compareHistoryKey(a, b rowtype.HistoryRow) int {
	if c := a.Bucket.Compare(b.Bucket); c != 0 {
		return c
	}
	if a.Queue != b.Queue {
		if a.Queue < b.Queue {
			return -1
		}
		return 1
	}
	switch {
	case a.Kind < b.Kind:
		return -1
	case a.Kind > b.Kind:
		return 1
	}
	return 0
}

// recordFinish counts a written result in the history: DONE, FAILED, or
// a retry (PENDING after a failed attempt); a snooze counts nothing.
func (c *Client) recordFinish(job *JobRow, status JobStatus, snoozed bool, ran time.Duration) {
	if c.history == nil || snoozed {
		return
	}
	d := rowtype.HistoryRow{RunMillis: ran.Milliseconds()}
	switch status {
	case StatusDone:
		d.Done = 1
	case StatusFailed:
		d.Failed = 1
	case StatusPending:
		d.Retried = 1
	default:
		return
	}
	c.history.add(time.Now(), job.Queue, job.Kind, d)
}

// recordCancel counts a cancelled job in the history.
func (c *Client) recordCancel(queue, kind string) {
	if c.history == nil {
		return
	}
	c.history.add(time.Now(), queue, kind, rowtype.HistoryRow{Cancelled: 1})
}

// FlushHistory adds the counts this client has gathered since its last
// flush to the history rollup now, in one short transaction of its own.
// A failed flush keeps the counts for the next. The flush loop calls it
// every Config.HistoryFlushInterval, and Stop once more; tests and tools
// may.
func (c *Client) FlushHistory(ctx context.Context) error {
	if c.history == nil {
		return nil
	}
	c.history.flushMu.Lock()
	defer c.history.flushMu.Unlock()
	rows := c.history.take()
	if len(rows) == 0 {
		return nil
	}
	// A conflict (a deadlock victim, a lost certification on Galera, where
	// every node's clients flush the same minutes) rolled the flush back
	// for certain: retried. A lost connection is not: a commit whose
	// outcome was lost would count twice. What still fails waits for the
	// next flush, with newer counts.
	err := c.retryDB(ctx, "history", func(ctx context.Context) error { return c.exec.HistoryAdd(ctx, rows) })
	if err != nil {
		if dropped := c.history.putBack(rows); dropped > 0 {
			c.logger.Warn("lockstep: history flushes keep failing; dropped the oldest counts", "rows", dropped)
		}
		return err
	}
	return nil
}

func (c *Client) historyLoop(ctx context.Context) {
	every(ctx, c.cfg.HistoryFlushInterval, func(ctx context.Context) {
		// Stop cancels ctx: a flush it interrupted may have committed
		// with only the cancellation reported, and its rows, put back,
		// would be counted again by Stop's last flush. A flush that has
		// begun runs to its end (bounded by the finish timeout); Stop
		// waits for this loop before it flushes.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.FinishTimeout)
		defer cancel()
		if err := c.FlushHistory(fctx); err != nil {
			c.logger.Warn("lockstep: history flush failed; its counts wait for the next", "err", err)
		}
	})
}

// History reads the history rollup's rows of a time range, in order of
// minute, queue and kind. Minutes without a row counted nothing.
func (c *Client) History(ctx context.Context, p HistoryParams) ([]HistoryRow, error) {
	var out []HistoryRow
	err := c.retryDBIdempotent(ctx, "history", func(ctx context.Context) error {
		var err error
		out, err = c.exec.HistoryRange(ctx, &p)
		return err
	})
	return out, err
}

// PruneHistory deletes the history rollup's minutes older than
// Config.HistoryRetention, in batches of about a thousand rows, each a
// primary-key range of its own. Retention calls it; it returns how many
// rows it deleted.
func (c *Client) PruneHistory(ctx context.Context) (int64, error) {
	if c.cfg.HistoryRetention < 0 {
		return 0, nil
	}
	before := time.Now().Add(-c.cfg.HistoryRetention)
	var total int64
	for range maxHistoryPruneBatches {
		var n int64
		err := c.retryDBIdempotent(ctx, "history retention", func(ctx context.Context) error {
			var err error
			n, err = c.exec.HistoryPrune(ctx, before, historyPruneBatch)
			return err
		})
		total += n
		if err != nil {
			return total, err
		}
		if n == 0 {
			break
		}
	}
	return total, nil
}
