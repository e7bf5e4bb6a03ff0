package rowtype

import "time"

// HistoryRow is one minute of one queue's and kind's finished work, as the
// clients flushed it into the history rollup: the jobs done, failed (for
// good), retried (a failed attempt with attempts left) and cancelled, and
// the summed run time of the attempts counted.
type HistoryRow struct {
	// Bucket is the minute, UTC, with its seconds zero.
	Bucket    time.Time `json:"bucket"`
	Queue     string    `json:"queue"`
	Kind      string    `json:"kind"`
	Done      int64     `json:"done"`
	Failed    int64     `json:"failed"`
	Retried   int64     `json:"retried"`
	Cancelled int64     `json:"cancelled"`
	// RunMillis is the sum of the run times, in milliseconds, of the
	// attempts counted in Done, Failed and Retried.
	RunMillis int64 `json:"run_ms"`
}

// Add adds o's counts to h's.
func (h *HistoryRow) Add(o HistoryRow) {
	h.Done += o.Done
	h.Failed += o.Failed
	h.Retried += o.Retried
	h.Cancelled += o.Cancelled
	h.RunMillis += o.RunMillis
}

// Attempts is how many attempts the row counts a run time for: its done,
// failed and retried.
func (h HistoryRow) Attempts() int64 { return h.Done + h.Failed + h.Retried }

// Zero reports whether the row counts nothing.
func (h HistoryRow) Zero() bool {
	return h.Done == 0 && h.Failed == 0 && h.Retried == 0 && h.Cancelled == 0 && h.RunMillis == 0
}

// HistoryParams selects history rows: the minutes from Since (inclusive)
// to Until (exclusive; zero: no end), optionally of one queue and one
// kind (empty: all).
type HistoryParams struct {
	Since, Until time.Time
	Queue, Kind  string
}

// HistoryBucket truncates t to its minute, in UTC: the bucket it counts in.
func HistoryBucket(t time.Time) time.Time { return t.UTC().Truncate(time.Minute) }

// HistorySeries sums rows into buckets of step from from (inclusive) to to
// (exclusive), every queue's and kind's together: one row per step, in
// time order, a step without rows all zero. Bucket is each step's start;
// Queue and Kind are empty.
func HistorySeries(rows []HistoryRow, from, to time.Time, step time.Duration) []HistoryRow {
	from = from.UTC().Truncate(step)
	n := int(to.Sub(from) / step)
	if to.Sub(from)%step != 0 {
		n++
	}
	if n <= 0 {
		return nil
	}
	out := make([]HistoryRow, n)
	for i := range out {
		out[i].Bucket = from.Add(time.Duration(i) * step)
	}
	for _, r := range rows {
		i := int(r.Bucket.Sub(from) / step)
		if r.Bucket.Before(from) || i >= n {
			continue
		}
		out[i].Add(r)
	}
	return out
}
