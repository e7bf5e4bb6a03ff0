package sqlexec

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// The claim of a limited queue. Its capacity is never a counter: a queue's
// or a key's slots in use are counted from the jobs themselves (RUNNING,
// and CANCELLED while RUNNING until the worker stops), so every way a job
// leaves RUNNING frees its slot with the same write that moves it, and
// nothing can leak. What a counter's row would have serialised is
// serialised by locks taken in the one order:
//
//  1. the queue's settings row, FOR UPDATE, when the queue has a global
//     concurrency or rate limit (the claim's first lock: it holds nothing
//     else while it waits);
//  2. the candidate jobs, through the claim index, SKIP LOCKED;
//  3. the rows of the candidates' keys, ascending, SKIP LOCKED — a claim
//     never waits for a key: a key another claim is deciding on is left
//     for the next claim;
//  4. writes to the jobs it locked in 2, by primary key.
//
// A job over its key's limit, or behind earlier live jobs of its sequence,
// becomes BLOCKED (out of the claim index's range); a release (release.go)
// makes it PENDING again when its key has room.

// limitCols scans a queue's limit columns.
type limitCols struct{ conc, keyConc, seq, rate, periodUS, byKey int64 }

func (l *limitCols) dest() []any {
	return []any{nullInt64{&l.conc}, nullInt64{&l.keyConc}, nullInt64{&l.seq}, nullInt64{&l.rate}, nullInt64{&l.periodUS}, nullInt64{&l.byKey}}
}

func (l limitCols) limits() rowtype.QueueLimits {
	return rowtype.QueueLimits{
		Concurrency: int(l.conc), KeyConcurrency: int(l.keyConc), Sequence: rowtype.SequencePolicy(l.seq),
		Rate: int(l.rate), RatePeriod: time.Duration(l.periodUS) * time.Microsecond, RateByKey: l.byKey != 0,
	}
}

// nullPositive is n as a parameter, NULL when it sets no limit.
func nullPositive(n int64) any {
	if n <= 0 {
		return nil
	}
	return n
}

// QueueSetLimits implements driver.Executor.
func (e *Executor) QueueSetLimits(ctx context.Context, queue string, l rowtype.QueueLimits) error {
	byKey := 0
	if l.RateByKey {
		byKey = 1
	}
	st := e.cat().Get(catalog.QueueSetLimits)
	_, err := e.exec(ctx, e.q, st.Name, st.SQL, queue, nullPositive(int64(l.Concurrency)), nullPositive(int64(l.KeyConcurrency)),
		int(l.Sequence), nullPositive(int64(l.Rate)), nullPositive(l.RatePeriod.Microseconds()), byKey)
	return e.wrap(fmt.Sprintf("set limits of queue %q", queue), err)
}

// queueLocked is whether a claim under l locks the queue's row first: a
// global concurrency or rate limit is one decision for the whole queue.
func queueLocked(l rowtype.QueueLimits) bool {
	return l.Concurrency > 0 || (l.Rate > 0 && !l.RateByKey)
}

// readLimits reads a queue's limits and the database's clock, locking the
// queue's row when lock is set. found is false when the queue has no row.
func (e *Executor) readLimits(ctx context.Context, q Querier, queue string, lock bool) (l rowtype.QueueLimits, now time.Time, found bool, err error) {
	name := catalog.QueueLimits
	if lock {
		name = catalog.QueueLockLimits
	}
	rows, err := e.query(ctx, q, name, e.cat().Get(name).SQL, queue)
	if err != nil {
		return l, now, false, err
	}
	var c limitCols
	for rows.Next() {
		if err := rows.Scan(append(c.dest(), nullTime{&now})...); err != nil {
			rows.Close()
			return l, now, false, err
		}
		found = true
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return l, now, false, err
	}
	if lock && found && e.cat().Capabilities().CertifyLocks {
		if err := e.certify(ctx, q, catalog.QueueCertify, queue); err != nil {
			return l, now, false, err
		}
	}
	return c.limits(), now, found, nil
}

// window is a rate window's starts: how many, and the oldest.
type window struct {
	n      int
	oldest time.Time
}

// keyCounts runs a KeyList statement that returns (key, count) rows.
func (e *Executor) keyCounts(ctx context.Context, q Querier, name catalog.Name, keys []string, args ...any) (map[string]int, error) {
	out := map[string]int{}
	if len(keys) == 0 {
		return out, nil
	}
	sqlText, args := e.cat().BindKeys(e.cat().Get(name), keys, args...)
	rows, err := e.query(ctx, q, name, sqlText, args...)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			rows.Close()
			return nil, err
		}
		out[k] = int(n)
	}
	return out, errors.Join(rows.Err(), rows.Close())
}

// rateWindows reads the starts of keys ("" is the queue's own) since since.
func (e *Executor) rateWindows(ctx context.Context, q Querier, queue string, since time.Time, keys []string) (map[string]window, error) {
	out := map[string]window{}
	if len(keys) == 0 {
		return out, nil
	}
	st := e.cat().Get(catalog.RateWindow)
	sqlText, args := e.cat().BindKeys(st, keys, queue, e.timeArg(since))
	rows, err := e.query(ctx, q, st.Name, sqlText, args...)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var k string
		var n int64
		var w window
		if err := rows.Scan(&k, &n, nullTime{&w.oldest}); err != nil {
			rows.Close()
			return nil, err
		}
		w.n = int(n)
		out[k] = w
	}
	return out, errors.Join(rows.Err(), rows.Close())
}

// lockKeys locks the rows of keys (ascending) SKIP LOCKED and returns the
// keys it locked; a key another transaction holds, or without a row, is
// not among them.
func (e *Executor) lockKeys(ctx context.Context, q Querier, name catalog.Name, queue string, keys []string) (map[string]bool, error) {
	got := map[string]bool{}
	if len(keys) == 0 {
		return got, nil
	}
	sqlText, args := e.cat().BindKeys(e.cat().Get(name), keys, queue)
	rows, err := e.query(ctx, q, name, sqlText, args...)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			rows.Close()
			return nil, err
		}
		got[k] = true
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, err
	}
	return got, e.certifyKeys(ctx, q, queue, got)
}

// certify writes the row a locking read just locked exclusively, on a
// Galera node (catalog.Capabilities.CertifyLocks): the row joins the
// transaction's write set, so another node's transaction that locked or
// wrote it conflicts with this one at certification.
func (e *Executor) certify(ctx context.Context, q Querier, name catalog.Name, args ...any) error {
	_, err := e.exec(ctx, q, name, e.cat().Get(name).SQL, args...)
	return err
}

// certifyKeys is certify for the limit keys of queue a claim or a release
// holds, in ascending key order, the order they were locked in.
func (e *Executor) certifyKeys(ctx context.Context, q Querier, queue string, locked map[string]bool) error {
	if len(locked) == 0 || !e.cat().Capabilities().CertifyLocks {
		return nil
	}
	keys := slices.Sorted(maps.Keys(locked))
	sqlText, args := e.cat().BindKeys(e.cat().Get(catalog.LimitCertifyKeys), keys, queue)
	_, err := e.exec(ctx, q, catalog.LimitCertifyKeys, sqlText, args...)
	return err
}

// cancelling counts, per key, a queue's jobs cancelled while RUNNING whose
// workers may still run them: they keep their slots for grace.
func (e *Executor) cancelling(ctx context.Context, q Querier, queue string, grace time.Duration) (map[string]int, error) {
	out := map[string]int{}
	rows, err := e.query(ctx, q, catalog.LimitCancelling, e.cat().Get(catalog.LimitCancelling).SQL, queue, micros(grace))
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			rows.Close()
			return nil, err
		}
		out[k]++
	}
	return out, errors.Join(rows.Err(), rows.Close())
}

// holdFailed is the parameter of limit.sequence_head: 1 when a FAILED job
// holds its sequence.
func holdFailed(l rowtype.QueueLimits) int {
	if l.Sequence == rowtype.SequenceHold {
		return 1
	}
	return 0
}

// JobClaimLimited implements driver.Executor.
func (e *Executor) JobClaimLimited(ctx context.Context, p *driver.JobClaimParams) (*driver.LimitedClaim, error) {
	out := &driver.LimitedClaim{}
	if p.Max <= 0 {
		return out, nil
	}
	var c *limitedClaim
	err := e.inTx(ctx, func(q Querier) error {
		c = &limitedClaim{e: e, q: q, p: p, out: &driver.LimitedClaim{}}
		return c.run(ctx)
	})
	if err != nil {
		return nil, e.wrap("claim", err)
	}
	out = c.out
	if !c.limited {
		// No limits (any more): the plain claim.
		jobs, err := e.JobClaim(ctx, &driver.JobClaimParams{Queue: p.Queue, Max: p.Max, ProcessID: p.ProcessID})
		out.Jobs = jobs
		return out, err
	}
	if e.pool == nil {
		// Inside a caller's transaction nothing has committed yet: the
		// next claim creates the keys' rows, the sweep releases.
		return out, nil
	}
	// After the commit, by themselves: the rows of keys met for the first
	// time, and the release of keys whose jobs were blocked while a job of
	// theirs was leaving RUNNING (its release ran before this claim
	// committed, and found nothing BLOCKED yet).
	// Their failure is a *driver.ReleaseError: the claim stands, its jobs
	// are the caller's to run (were it retried, they would be left RUNNING
	// for the reaper), and the next claim or the sweep does what is left.
	if len(c.unlocked) > 0 {
		if err := e.createKeys(ctx, p.Queue, c.unlocked); err != nil {
			return out, &driver.ReleaseError{Err: e.wrap("claim: create limit keys", err)}
		}
	}
	if len(c.blockedKeys) > 0 {
		if _, err := e.releaseKeys(ctx, p.Queue, out.Limits, c.blockedKeys, true); err != nil {
			return out, &driver.ReleaseError{Err: e.wrap("claim: release", err)}
		}
	}
	return out, nil
}

// limitedClaim is one claim transaction of a limited queue.
type limitedClaim struct {
	e   *Executor
	q   Querier
	p   *driver.JobClaimParams
	out *driver.LimitedClaim
	// limited is false when the queue turned out to have no limits.
	limited bool
	// unlocked are keys the claim could not lock (held, or no row yet);
	// blockedKeys are the keys it blocked jobs of.
	unlocked, blockedKeys []string
}

func (c *limitedClaim) run(ctx context.Context) error {
	e, q, p, out := c.e, c.q, c.p, c.out
	lock := queueLocked(p.Limits)
	lim, now, found, err := e.readLimits(ctx, q, p.Queue, lock)
	if err != nil {
		return err
	}
	if found && !lock && queueLocked(lim) {
		// The limits changed since the client read them: the queue's row
		// is still the first lock this transaction takes.
		if lim, now, found, err = e.readLimits(ctx, q, p.Queue, true); err != nil {
			return err
		}
	}
	out.Limits, out.Now = lim, now
	if c.limited = found && lim.Any(); !c.limited {
		return nil
	}
	want := p.Max
	if lim.Concurrency > 0 {
		var n int64
		st := e.cat().Get(catalog.QueueOccupied)
		if err := queryRow(ctx, e, q, st, []any{p.Queue, micros(p.Grace)}, &n); err != nil {
			return err
		}
		if want = min(want, lim.Concurrency-int(n)); want <= 0 {
			out.Full = true
			return nil
		}
	}
	queueRate := lim.Rate > 0 && !lim.RateByKey && lim.RatePeriod > 0
	keyRate := lim.Rate > 0 && lim.RateByKey && lim.RatePeriod > 0
	if queueRate {
		// Counted and written at a clock read under the queue's lock: a
		// clock read before it (MySQL's NOW of the locking statement,
		// PostgreSQL's transaction start) may be older than the window a
		// claim that held the lock meanwhile has pruned to.
		if now, err = e.clock(ctx, q); err != nil {
			return err
		}
		out.Now = now
	}
	since := now.Add(-lim.RatePeriod)
	if queueRate {
		w, err := e.rateWindows(ctx, q, p.Queue, since, []string{""})
		if err != nil {
			return err
		}
		if allowed := lim.Rate - w[""].n; allowed <= 0 {
			out.RetryAt = w[""].oldest.Add(lim.RatePeriod)
			return nil
		} else {
			want = min(want, allowed)
		}
	}
	keyed := lim.Keyed()
	n := want
	if keyed {
		// Room to pass over jobs of keys at their limit, which this claim
		// blocks, so that the next one does not meet them again.
		n = 2*want + 8
	}
	st := e.cat().Get(catalog.JobClaimCandidates)
	rows, err := e.query(ctx, q, st.Name, st.SQL, p.Queue, n)
	if err != nil {
		return err
	}
	cands, err := scanJobs(rows)
	if err != nil {
		return err
	}
	if len(cands) == 0 {
		return nil
	}
	d := decision{lim: lim, want: want, taken: map[string]int{}}
	if keyed {
		var keys []string
		for _, j := range cands {
			if j.LimitKey != "" {
				keys = append(keys, j.LimitKey)
			}
		}
		slices.Sort(keys)
		keys = slices.Compact(keys)
		if d.locked, err = e.lockKeys(ctx, q, catalog.LimitLockKeys, p.Queue, keys); err != nil {
			return err
		}
		var locked []string
		for _, k := range keys {
			if d.locked[k] {
				locked = append(locked, k)
			} else {
				c.unlocked = append(c.unlocked, k)
			}
		}
		if lim.KeyConcurrency > 0 || lim.Sequence != rowtype.SequenceNone {
			if d.running, err = e.keyCounts(ctx, q, catalog.LimitKeyRunning, locked, p.Queue); err != nil {
				return err
			}
			cancelling, err := e.cancelling(ctx, q, p.Queue, p.Grace)
			if err != nil {
				return err
			}
			for k, n := range cancelling {
				d.running[k] += n
			}
		}
		if lim.Sequence != rowtype.SequenceNone {
			heads, err := e.keyCounts(ctx, q, catalog.LimitSequenceHead, locked, p.Queue, holdFailed(lim))
			if err != nil {
				return err
			}
			d.heads = heads
		}
		if keyRate {
			// The keys' windows, at a clock read under their locks (as
			// the queue's above).
			if now, err = e.clock(ctx, q); err != nil {
				return err
			}
			since = now.Add(-lim.RatePeriod)
			if d.windows, err = e.rateWindows(ctx, q, p.Queue, since, locked); err != nil {
				return err
			}
		}
	}
	var take, block []int64
	deferTo := map[time.Time][]int64{}
	started := false // a rate window gets new starts
	var blocked []string
	for _, j := range cands {
		switch v, at := d.decide(j, now, keyRate); v {
		case verdictTake:
			take = append(take, j.ID)
			out.Jobs = append(out.Jobs, j)
			started = started || queueRate || keyRate && j.LimitKey != ""
		case verdictBlock:
			block = append(block, j.ID)
			blocked = append(blocked, j.LimitKey)
		case verdictDefer:
			deferTo[at] = append(deferTo[at], j.ID)
			out.Deferred++
		case verdictSkip:
			out.Skipped++
		}
	}
	if len(take) > 0 {
		take = sortedUnique(take)
		n, err := e.execIDs(ctx, q, catalog.JobClaimIDs, take, e.timeArg(now), e.timeArg(now), keyArg(p.ProcessID))
		if err != nil {
			return err
		}
		if n != int64(len(take)) {
			// The rows are this transaction's (locked in step 2).
			return fmt.Errorf("claim updated %d of %d locked rows", n, len(take))
		}
		for _, j := range out.Jobs {
			j.Status, j.Attempts, j.StartedAt, j.HeartbeatAt = rowtype.StatusRunning, j.Attempts+1, now, now
			j.ClaimedBy = p.ProcessID
		}
		slices.SortFunc(out.Jobs, func(a, b *rowtype.JobRow) int { return cmpInt64(a.ID, b.ID) })
	}
	if len(block) > 0 {
		if _, err := e.execIDs(ctx, q, catalog.JobBlock, sortedUnique(block), e.timeArg(now)); err != nil {
			return err
		}
		out.Blocked = len(block)
		slices.Sort(blocked)
		c.blockedKeys = slices.Compact(blocked)
	}
	for _, at := range sortedTimes(deferTo) {
		if _, err := e.execIDs(ctx, q, catalog.JobDefer, sortedUnique(deferTo[at]), e.timeArg(at)); err != nil {
			return err
		}
	}
	if started {
		if err := e.recordStarts(ctx, q, p.Queue, now, since, out.Jobs, queueRate, keyRate); err != nil {
			return err
		}
	}
	return nil
}

// clock reads the database's clock as of this statement.
func (e *Executor) clock(ctx context.Context, q Querier) (time.Time, error) {
	var t time.Time
	err := queryRow(ctx, e, q, e.cat().Get(catalog.LimitClock), nil, nullTime{&t})
	return t, err
}

// sortedTimes are m's keys in time order.
func sortedTimes(m map[time.Time][]int64) []time.Time {
	out := make([]time.Time, 0, len(m))
	for t := range m {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// recordStarts writes the claimed jobs' starts into their rate windows
// and deletes the starts that have left them, under the locks that guard
// those windows (the queue's row, or the keys').
func (e *Executor) recordStarts(ctx context.Context, q Querier, queue string, now, since time.Time, jobs []*rowtype.JobRow, queueRate, keyRate bool) error {
	var keys []string
	var startIDs []int64
	for _, j := range jobs {
		if queueRate {
			keys, startIDs = append(keys, ""), append(startIDs, j.ID)
		}
		if keyRate && j.LimitKey != "" {
			keys, startIDs = append(keys, j.LimitKey), append(startIDs, j.ID)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	st := e.cat().Get(catalog.RateInsert)
	if e.cat().Spec().ArrayParams {
		if _, err := e.exec(ctx, q, st.Name, st.SQL, queue, e.timeArg(now), keys, startIDs); err != nil {
			return err
		}
	} else {
		args := make([]any, 0, 4*len(keys))
		for i, k := range keys {
			args = append(args, queue, k, e.timeArg(now), startIDs[i])
		}
		if _, err := e.exec(ctx, q, st.Name, e.cat().BindRows(st, len(keys)), args...); err != nil {
			return err
		}
	}
	touched := slices.Clone(keys)
	slices.Sort(touched)
	touched = slices.Compact(touched)
	prune := e.cat().Get(catalog.RatePrune)
	sqlText, args := e.cat().BindKeys(prune, touched, queue, e.timeArg(since))
	_, err := e.exec(ctx, q, prune.Name, sqlText, args...)
	return err
}

// verdict is what a claim does with one candidate.
type verdict int

const (
	verdictTake  verdict = iota // claim it
	verdictLeave                // leave it PENDING: the claim has enough
	verdictSkip                 // leave it PENDING: its key is not this claim's to decide
	verdictBlock                // BLOCKED: its key is at its limit, or its sequence busy
	verdictDefer                // PENDING later: its key's rate window is full
)

// decision holds what a claim knows about its candidates' keys.
type decision struct {
	lim     rowtype.QueueLimits
	want    int
	took    int
	locked  map[string]bool
	running map[string]int // RUNNING (and cancelling) per key
	heads   map[string]int // a sequence's first live job
	windows map[string]window
	taken   map[string]int // taken by this claim, per key
}

func (d *decision) decide(j *rowtype.JobRow, now time.Time, keyRate bool) (verdict, time.Time) {
	k := j.LimitKey
	if k == "" || !d.lim.Keyed() {
		if d.took >= d.want {
			return verdictLeave, time.Time{}
		}
		d.took++
		return verdictTake, time.Time{}
	}
	if !d.locked[k] {
		return verdictSkip, time.Time{}
	}
	busy := d.running[k] + d.taken[k]
	if d.lim.Sequence != rowtype.SequenceNone && (busy > 0 || int64(d.heads[k]) != j.ID) {
		return verdictBlock, time.Time{}
	}
	if d.lim.KeyConcurrency > 0 && busy >= d.lim.KeyConcurrency {
		return verdictBlock, time.Time{}
	}
	if keyRate {
		w := d.windows[k]
		if w.n+d.taken[k] >= d.lim.Rate {
			at := w.oldest
			if w.n == 0 {
				at = now
			}
			return verdictDefer, at.Add(d.lim.RatePeriod)
		}
	}
	if d.took >= d.want {
		return verdictLeave, time.Time{}
	}
	d.took++
	d.taken[k]++
	return verdictTake, time.Time{}
}

// queryRow runs a one-row statement into dest.
func queryRow(ctx context.Context, e *Executor, q Querier, st catalog.Statement, args []any, dest ...any) error {
	rows, err := e.query(ctx, q, st.Name, st.SQL, args...)
	if err != nil {
		return err
	}
	if !rows.Next() {
		return errors.Join(fmt.Errorf("%s returned no row", st.Name), rows.Err(), rows.Close())
	}
	if err := rows.Scan(dest...); err != nil {
		rows.Close()
		return err
	}
	return errors.Join(rows.Err(), rows.Close())
}
