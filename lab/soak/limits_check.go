package soak

import (
	"fmt"
	"slices"
	"time"

	"github.com/lockstep-queue/lockstep/rowtype"
)

// The limited queues' checks after the drain (limits.go says what runs).

// interval is one execution, by the soak's clock.
type interval struct {
	r          ref
	start, end time.Time
}

// maxOverlap is the most intervals that overlap at one instant, and one
// such instant's intervals; an interval ending when another starts does
// not overlap it.
func maxOverlap(ivs []interval) (int, []ref) {
	type edge struct {
		at    time.Time
		delta int
		r     ref
	}
	edges := make([]edge, 0, 2*len(ivs))
	for _, iv := range ivs {
		edges = append(edges, edge{iv.start, +1, iv.r}, edge{iv.end, -1, iv.r})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // ends first
	})
	best, n := 0, 0
	open := map[ref]bool{}
	var at []ref
	for _, e := range edges {
		n += e.delta
		if e.delta > 0 {
			open[e.r] = true
		} else {
			delete(open, e.r)
		}
		if n > best {
			best = n
			at = at[:0]
			for r := range open {
				at = append(at, r)
			}
		}
	}
	slices.SortFunc(at, func(a, b ref) int { return cmpRef(a, b) })
	return best, at
}

func cmpRef(a, b ref) int {
	if a.id != b.id {
		if a.id < b.id {
			return -1
		}
		return 1
	}
	return a.attempt - b.attempt
}

// maxStarts is the most starts in any window (t-period, t], t a start:
// what a rate limit of that period bounds (the claim counts the starts
// after its own clock less the period).
func maxStarts(starts []time.Time, period time.Duration) (int, time.Time) {
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	best, at, lo := 0, time.Time{}, 0
	for i, t := range starts {
		for !starts[lo].After(t.Add(-period)) {
			lo++
		}
		if n := i - lo + 1; n > best {
			best, at = n, t
		}
	}
	return best, at
}

// limitChecks checks the limited queues and returns what each saw.
func (c *checker) limitChecks(s *soak, final map[int64]*rowtype.JobRow, audit map[int64][]transition) []LimitedQueue {
	st := s.limitStats
	st.mu.Lock()
	defer st.mu.Unlock()
	c.res.LimitSamples, c.res.LimitSampleErrors, c.res.LimitViolations = st.samples, st.errors, st.violations
	c.res.LimitBlockedEvents, c.res.LimitDeferred = c.l.limitBlockedEvents, c.l.limitDeferred

	out := make([]LimitedQueue, 0, len(s.limited))
	for _, q := range s.limited {
		lq := LimitedQueue{Queue: q.name, Limits: limitsText(q.limits),
			MaxRunning: st.maxTotal[q.name], MaxKeyRunning: st.maxKey[q.name], MaxBlocked: st.maxBlocked[q.name], SamplesAtLimit: st.atLimit[q.name]}
		var jobs []*rowtype.JobRow
		for _, j := range final {
			if j.Queue == q.name {
				jobs = append(jobs, j)
			}
		}
		slices.SortFunc(jobs, func(a, b *rowtype.JobRow) int { return cmpRef(ref{a.ID, 0}, ref{b.ID, 0}) })
		lq.Jobs = len(jobs)
		// The executions, per key ("" for the queue), without those of
		// attempts reaped while their workers ran (LiveReaps): the reaper
		// gave their slots back on purpose.
		byKey := map[string][]interval{}
		var all []interval
		execsOf := map[int64][]interval{}
		for _, j := range jobs {
			switch j.Status {
			case rowtype.StatusDone:
				lq.Done++
			case rowtype.StatusFailed:
				lq.Failed++
			case rowtype.StatusCancelled:
				lq.Cancelled++
			}
			for _, t := range audit[j.ID] {
				switch stepOf(t) {
				case stepClaim:
					lq.Claims++
				case stepBlock:
					lq.Blocks++
				case stepUnblock:
					lq.Unblocks++
				case stepReap, stepReapFailed:
					lq.Reaps++
				case stepCancel:
					switch t.From {
					case rowtype.StatusBlocked:
						lq.BlockedCancelled++
					case rowtype.StatusRunning:
						lq.CancelledRunning++
					}
				}
			}
			if j.LimitKey == "" && q.keyLimit() > 0 {
				c.problem("job %d in the keyed queue %s has no limit key", j.ID, q.name)
			}
		}
		for r, e := range c.l.execs {
			j := final[r.id]
			if j == nil || j.Queue != q.name {
				continue
			}
			lq.Executions++
			if k := c.ended[r]; (k == stepReap || k == stepReapFailed) && !c.l.deadClaims[r] {
				continue
			}
			if e.end.IsZero() {
				c.problem("job %d attempt %d in queue %s: its execution never recorded its end", r.id, r.attempt, q.name)
				continue
			}
			iv := interval{r: r, start: e.start, end: e.end}
			byKey[j.LimitKey] = append(byKey[j.LimitKey], iv)
			all = append(all, iv)
			execsOf[r.id] = append(execsOf[r.id], iv)
		}
		if kl := q.keyLimit(); kl > 0 {
			for _, k := range sortedKeys(byKey) {
				n, at := maxOverlap(byKey[k])
				lq.MaxOverlap = max(lq.MaxOverlap, n)
				if n > kl {
					c.problem("key %q of queue %s (limit %d) had %d executions at once: %s", k, q.name, kl, n, refsText(at))
				}
			}
		}
		if cl := q.limits.Concurrency; cl > 0 {
			n, at := maxOverlap(all)
			lq.MaxOverlap = n
			if n > cl {
				c.problem("queue %s (limit %d) had %d executions at once: %s", q.name, cl, n, refsText(at))
			}
		}
		if q.limits.Sequence != 0 {
			c.sequenceOrder(q.name, jobs, execsOf, audit)
		}
		if q.limits.Rate > 0 && q.limits.RateByKey {
			starts := map[string][]time.Time{}
			claims := map[string][]claimAt{}
			for _, j := range jobs {
				for _, t := range audit[j.ID] {
					if stepOf(t) == stepClaim {
						starts[j.LimitKey] = append(starts[j.LimitKey], t.StartedAt)
						claims[j.LimitKey] = append(claims[j.LimitKey], claimAt{ref{j.ID, t.Attempts}, t})
					}
				}
			}
			for _, k := range sortedKeys(starts) {
				n, at := maxStarts(starts[k], q.limits.RatePeriod)
				lq.MaxStartsPerPeriod = max(lq.MaxStartsPerPeriod, n)
				if n > q.limits.Rate {
					c.problem("key %q of queue %s started %d jobs in the %s up to %s (database clock), above its rate of %d: %s",
						k, q.name, n, q.limits.RatePeriod, at.Format("15:04:05.000000"), q.limits.Rate, c.startsText(claims[k], at.Add(-q.limits.RatePeriod), at))
				}
			}
		}
		out = append(out, lq)
	}
	return out
}

// sequenceOrder checks that each key of a sequence queue ran its jobs one
// after another in id order (one enqueuer inserts a key's jobs, one at a
// time, so id order is insert order): by the soak's clock, every execution
// of a job began after every execution of the key's earlier jobs had
// ended; by the database's (the audit's), a job's first claim came after
// the change that ended each earlier job. A retry or a snooze keeps its
// job first in line: it is no exception.
func (c *checker) sequenceOrder(queue string, jobs []*rowtype.JobRow, execs map[int64][]interval, audit map[int64][]transition) {
	type mark struct {
		id int64
		at time.Time
	}
	lastEnd := map[string]mark{}   // the latest execution end of the key's jobs so far
	lastFinal := map[string]mark{} // the latest final change of the key's jobs so far
	for _, j := range jobs {       // ascending id
		k := j.LimitKey
		first := time.Time{}
		var firstRef ref
		for _, iv := range execs[j.ID] {
			if first.IsZero() || iv.start.Before(first) {
				first, firstRef = iv.start, iv.r
			}
		}
		if prev, ok := lastEnd[k]; ok && !first.IsZero() && first.Before(prev.at) {
			c.problem("sequence %q of queue %s: job %d attempt %d began at %s, before job %d's execution ended at %s",
				k, queue, j.ID, firstRef.attempt, first.Format("15:04:05.000000"), prev.id, prev.at.Format("15:04:05.000000"))
		}
		for _, iv := range execs[j.ID] {
			if m := lastEnd[k]; iv.end.After(m.at) {
				lastEnd[k] = mark{j.ID, iv.end}
			}
		}
		var claim, end time.Time
		for _, t := range audit[j.ID] {
			if stepOf(t) == stepClaim && claim.IsZero() {
				claim = t.ChangedAt
			}
			if t.To.Final() {
				end = t.ChangedAt
			}
		}
		if prev, ok := lastFinal[k]; ok && !claim.IsZero() && claim.Before(prev.at) {
			c.problem("sequence %q of queue %s: job %d was first claimed at %s (database clock), before job %d ended at %s",
				k, queue, j.ID, claim.Format("15:04:05.000000"), prev.id, prev.at.Format("15:04:05.000000"))
		}
		if m := lastFinal[k]; end.After(m.at) {
			lastFinal[k] = mark{j.ID, end}
		}
	}
}

func refsText(rs []ref) string {
	out := ""
	for i, r := range rs {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("job %d attempt %d", r.id, r.attempt)
	}
	return out
}

// claimAt is one audited claim.
type claimAt struct {
	r ref
	t transition
}

// startsText names the claims that started in (from, to]: each one's
// start (the claim's clock, which the rate counts), the audit's time of
// its change, and who claimed it.
func (c *checker) startsText(claims []claimAt, from, to time.Time) string {
	slices.SortFunc(claims, func(a, b claimAt) int { return a.t.StartedAt.Compare(b.t.StartedAt) })
	out := ""
	for _, cl := range claims {
		if !cl.t.StartedAt.After(from) || cl.t.StartedAt.After(to) {
			continue
		}
		who := "a pool"
		if c.l.deadClaims[cl.r] {
			who = "the dead worker"
		}
		if out != "" {
			out += "; "
		}
		out += fmt.Sprintf("job %d attempt %d started %s (written %s, audit seq %d) by %s",
			cl.r.id, cl.r.attempt, cl.t.StartedAt.Format("15:04:05.000000"), cl.t.ChangedAt.Format("15:04:05.000000"), cl.t.Seq, who)
	}
	return out
}
