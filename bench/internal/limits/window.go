package limits

import "time"

// maxInWindow is the most starts in any window (t-period, t] — the window
// the rate limit counts (rate.window: started_at > now - period). starts
// are sorted.
func maxInWindow(starts []time.Time, period time.Duration) int {
	best, i := 0, 0
	for j, t := range starts {
		for !starts[i].After(t.Add(-period)) {
			i++
		}
		// Among equal times the last index counts them all.
		best = max(best, j-i+1)
	}
	return best
}

// startRate is the starts per second of a run under a limit of rate per
// period: the starts over their span plus one period. A limiter that
// starts rate jobs at once and every later rate one period after the ones
// before them starts n = k·rate jobs over a span of k-1 periods, so this
// is exactly rate per period for it, where n over the span alone would
// count the first burst as if it took no time; a run slower than the limit
// comes out a little under its own rate (by one period in n/rate).
func startRate(starts []time.Time, period time.Duration) float64 {
	n := len(starts)
	if n == 0 {
		return 0
	}
	return float64(n) / (starts[n-1].Sub(starts[0]) + period).Seconds()
}
