package soak

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// historyFlushInterval is the pools' history flush under the soak: often,
// so that the pools' flushes meet each other (and retention's deletes)
// under the load, not only at Stop.
const historyFlushInterval = 500 * time.Millisecond

// onHistoryEvent counts, per queue, the finishes the pools reported as
// written: the same outcomes each client counts for the history rollup
// (a DONE, a FAILED, a retry; not a snooze, nor a discarded result).
func (l *ledger) onHistoryEvent(e lockstep.Event) {
	if e.Kind != lockstep.EventJobFinished || e.Discarded || e.Snoozed {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.historyEvents[e.Queue]
	switch {
	case e.Status == lockstep.StatusDone:
		r.Done++
	case e.Status == lockstep.StatusFailed:
		r.Failed++
	case e.Retry:
		r.Retried++
	default:
		return
	}
	l.historyEvents[e.Queue] = r
}

// readHistory reads the rollup's rows of the soak's minutes, summed per
// queue.
func (s *soak) readHistory(ctx context.Context) (map[string]rowtype.HistoryRow, error) {
	rows, err := s.own.Executor().HistoryRange(ctx, &rowtype.HistoryParams{Since: s.start.Add(-time.Minute)})
	if err != nil {
		return nil, fmt.Errorf("soak: read history: %w", err)
	}
	out := map[string]rowtype.HistoryRow{}
	for _, r := range rows {
		q := out[r.Queue]
		q.Add(r)
		out[r.Queue] = q
	}
	return out, nil
}

// historyCheck: every pool stopped cleanly, so each flushed all it
// counted: per queue, the rollup holds exactly the done, failed and
// retried finishes the pools reported, and never more done than the
// table's DONE jobs of the queue (the dead worker's finishes, written
// without a client, are in the table only; a FAILED job may be retried
// and end otherwise, so failures have no such bound).
func (c *checker) historyCheck(hist map[string]rowtype.HistoryRow, final map[int64]*rowtype.JobRow) {
	if hist == nil {
		return
	}
	inTable := map[string]rowtype.HistoryRow{}
	for _, j := range final {
		r := inTable[j.Queue]
		if j.Status == rowtype.StatusDone {
			r.Done++
		}
		inTable[j.Queue] = r
	}
	queues := map[string]bool{}
	for q := range hist {
		queues[q] = true
	}
	for q := range c.l.historyEvents {
		queues[q] = true
	}
	names := make([]string, 0, len(queues))
	for q := range queues {
		names = append(names, q)
	}
	slices.Sort(names)
	for _, q := range names {
		h, e, t := hist[q], c.l.historyEvents[q], inTable[q]
		c.res.HistoryDone += h.Done
		if h.Done != e.Done || h.Failed != e.Failed || h.Retried != e.Retried {
			c.problem("history of queue %s: the rollup has %d done, %d failed, %d retried; the pools reported %d, %d, %d",
				q, h.Done, h.Failed, h.Retried, e.Done, e.Failed, e.Retried)
		}
		if h.Done > t.Done {
			c.problem("history of queue %s: the rollup has %d done, more than the table's %d DONE jobs", q, h.Done, t.Done)
		}
	}
}
