package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// Limited queues in the soak. Beside the plain queues, four queues carry
// the limits of issue 19, each over the same job mix, the same actors —
// enqueuers, cancellers, the dead worker and its stale finishes, the
// reapers, retries and snoozes — and the same pools:
//
//   - soak_limit_key: at most one RUNNING job per key, over 20 keys;
//   - soak_limit_global: at most 3 RUNNING jobs in all, where the pools
//     have 12 workers for it;
//   - soak_limit_seq: sequences (a FAILED job releases its sequence), the
//     keys of each enqueuer its own, so that a key's insert order is its
//     id order;
//   - soak_limit_rate: at most 5 starts per second per key, over 4 keys.
//
// A sampler reads, every 100 ms on the soak's own pool, the RUNNING jobs
// of each limited queue per key and in all (one statement: one snapshot),
// and counts a problem whenever one is above its limit — RUNNING alone,
// and RUNNING with the jobs cancelled while running whose workers may
// still run them (finished_at unset, heartbeat younger than ReapAfter),
// which hold their slots too. After the drain, the execution ledger (the
// soak's one clock) shows that no two executions of a key at limit 1 or
// of a sequence overlapped, that no more than 3 of the global queue's did,
// and that each sequence ran in id order; the audit's claim times (the
// database's clock) show that no key of the rate-limited queue started
// more than 5 jobs in any second.

// The limited queues' names.
const (
	queueKeyed  = "soak_limit_key"
	queueGlobal = "soak_limit_global"
	queueSeq    = "soak_limit_seq"
	queueRate   = "soak_limit_rate"
)

// The limits.
const (
	keyedKeys      = 20
	globalLimit    = 3
	seqKeysPerEnq  = 5
	rateKeys       = 4
	rateLimit      = 5
	ratePeriod     = time.Second
	sampleInterval = 100 * time.Millisecond
)

// limitedQueue is one limited queue of the soak.
type limitedQueue struct {
	name   string
	limits lockstep.QueueLimits
	// share is the percentage of the enqueuers' jobs it receives while its
	// backlog (PENDING and BLOCKED, at the last sample) is below backlog:
	// a limited queue drains more slowly than a plain one, and the drain
	// must end within DrainTimeout.
	share, backlog int
	open           atomic.Int64
}

func newLimitedQueues() []*limitedQueue {
	return []*limitedQueue{
		{name: queueKeyed, limits: lockstep.QueueLimits{KeyConcurrency: 1}, share: 9, backlog: 200},
		{name: queueGlobal, limits: lockstep.QueueLimits{Concurrency: globalLimit}, share: 8, backlog: 150},
		{name: queueSeq, limits: lockstep.QueueLimits{Sequence: lockstep.SequenceRelease}, share: 7, backlog: 100},
		{name: queueRate, limits: lockstep.QueueLimits{Rate: rateLimit, RatePeriod: ratePeriod, RateByKey: true}, share: 8, backlog: 150},
	}
}

// keyLimit is the most RUNNING jobs one key may have: KeyConcurrency, one
// in a sequence, 0 for none.
func (q *limitedQueue) keyLimit() int {
	switch {
	case q.limits.KeyConcurrency > 0:
		return q.limits.KeyConcurrency
	case q.limits.Sequence != lockstep.SequenceNone:
		return 1
	}
	return 0
}

// key picks a job's limit key; enqueuer is who inserts it (a sequence's
// keys are one enqueuer's: its inserts are one after another, so the key's
// insert order is its id order).
func (q *limitedQueue) key(rng *rand.Rand, enqueuer int) string {
	switch q.name {
	case queueKeyed:
		return fmt.Sprintf("k%02d", rng.IntN(keyedKeys))
	case queueSeq:
		return fmt.Sprintf("e%d-s%d", enqueuer, rng.IntN(seqKeysPerEnq))
	case queueRate:
		return fmt.Sprintf("r%d", rng.IntN(rateKeys))
	}
	return ""
}

// pickLimited chooses a limited queue for a job, or nil for a plain one.
func (s *soak) pickLimited(rng *rand.Rand) *limitedQueue {
	p := rng.IntN(100)
	for _, q := range s.limited {
		if p < q.share {
			if q.open.Load() >= int64(q.backlog) {
				return nil
			}
			return q
		}
		p -= q.share
	}
	return nil
}

func (s *soak) limitedQueue(name string) *limitedQueue {
	for _, q := range s.limited {
		if q.name == name {
			return q
		}
	}
	return nil
}

// limitStats is what the sampler saw; guarded by mu.
type limitStats struct {
	mu      sync.Mutex
	samples int
	errors  int
	// maxTotal and maxKey are the most RUNNING jobs seen at once, in all
	// and with one key, per queue; atLimit counts the samples in which a
	// queue's concurrency limit or a key's was reached (the limit bound).
	maxTotal, maxKey map[string]int
	atLimit          map[string]int
	// maxBlocked is the most BLOCKED jobs a queue had at once.
	maxBlocked map[string]int
	// cancelling is the most jobs cancelled while running, still holding
	// their slots, seen at once in a queue.
	cancelling map[string]int
	violations int
}

func newLimitStats() *limitStats {
	return &limitStats{maxTotal: map[string]int{}, maxKey: map[string]int{}, atLimit: map[string]int{},
		maxBlocked: map[string]int{}, cancelling: map[string]int{}}
}

// sampleQuery reads, in one statement, the limited queues' RUNNING,
// PENDING and BLOCKED jobs per key, and their jobs cancelled while running
// whose slots are still held (as a claim counts them: finished_at unset,
// heartbeat younger than the grace, the first parameter, in microseconds).
// Both halves go through lockstep_jobs_queue_status (queue, status,
// heartbeat_at).
func sampleQuery(dialect string, queues []*limitedQueue) string {
	names := make([]string, len(queues))
	for i, q := range queues {
		names[i] = "'" + q.name + "'" // the soak's own constants
	}
	in := strings.Join(names, ", ")
	var fresh string
	switch dialect {
	case "mysql":
		fresh = "heartbeat_at > UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND"
	case "postgres":
		fresh = "heartbeat_at > now() - $1::bigint * interval '1 microsecond'"
	default:
		fresh = "heartbeat_at > strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', -? / 1000000.0))"
	}
	return "SELECT queue, COALESCE(limit_key, ''), status, COUNT(*) FROM lockstep_jobs WHERE queue IN (" + in + ")" +
		" AND status IN ('RUNNING', 'PENDING', 'BLOCKED') GROUP BY queue, limit_key, status" +
		" UNION ALL SELECT queue, COALESCE(limit_key, ''), 'CANCELLING', COUNT(*) FROM lockstep_jobs WHERE queue IN (" + in + ")" +
		" AND status = 'CANCELLED' AND " + fresh + " AND finished_at IS NULL GROUP BY queue, limit_key"
}

// sampleLimits samples until stop is closed.
func (s *soak) sampleLimits(ctx context.Context, stop <-chan struct{}) {
	q := sampleQuery(s.own.Dialect(), s.limited)
	tick := time.NewTicker(sampleInterval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := s.sampleOnce(ctx, q); err != nil && ctx.Err() == nil {
			s.limitStats.mu.Lock()
			s.limitStats.errors++
			s.limitStats.mu.Unlock()
			s.ledger.onRetry("limit sample", err)
		}
	}
}

type sampleRow struct {
	queue, key string
	status     rowtype.JobStatus
}

func (s *soak) sampleOnce(ctx context.Context, q string) error {
	rows, err := s.own.DB().QueryContext(ctx, q, s.cfg.ReapAfter.Microseconds())
	if err != nil {
		return err
	}
	counts := map[sampleRow]int{}
	for rows.Next() {
		var r sampleRow
		var st string
		var n int
		if err := rows.Scan(&r.queue, &r.key, &st, &n); err != nil {
			rows.Close()
			return err
		}
		r.status = rowtype.JobStatus(st)
		counts[r] += n
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return err
	}
	rows.Close()
	s.judgeSample(counts)
	return nil
}

// judgeSample checks one sample against the limits.
func (s *soak) judgeSample(counts map[sampleRow]int) {
	const cancelling = rowtype.JobStatus("CANCELLING")
	type perQueue struct {
		running, held, open, blocked, cancelling int
		keyRunning, keyHeld                      map[string]int
	}
	by := map[string]*perQueue{}
	for _, q := range s.limited {
		by[q.name] = &perQueue{keyRunning: map[string]int{}, keyHeld: map[string]int{}}
	}
	for r, n := range counts {
		p := by[r.queue]
		if p == nil {
			continue
		}
		switch r.status {
		case rowtype.StatusRunning:
			p.running += n
			p.held += n
			p.keyRunning[r.key] += n
			p.keyHeld[r.key] += n
		case cancelling:
			p.held += n
			p.cancelling += n
			p.keyHeld[r.key] += n
		case rowtype.StatusBlocked:
			p.blocked += n
			p.open += n
		case rowtype.StatusPending:
			p.open += n
		}
	}
	st := s.limitStats
	var problems []string
	problem := func(format string, args ...any) {
		st.violations++
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	defer func() {
		// After st.mu is released: check() takes it under the ledger's.
		for _, p := range problems {
			s.ledger.problem("%s", p)
		}
	}()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.samples++
	for _, q := range s.limited {
		p := by[q.name]
		q.open.Store(int64(p.open))
		st.maxTotal[q.name] = max(st.maxTotal[q.name], p.running)
		st.maxBlocked[q.name] = max(st.maxBlocked[q.name], p.blocked)
		st.cancelling[q.name] = max(st.cancelling[q.name], p.cancelling)
		if c := q.limits.Concurrency; c > 0 {
			if p.running > c {
				problem("limit sample %d: queue %s has %d jobs RUNNING, above its limit of %d", st.samples, q.name, p.running, c)
			} else if p.held > c {
				problem("limit sample %d: queue %s has %d jobs RUNNING and %d cancelled ones still holding slots, above its limit of %d",
					st.samples, q.name, p.running, p.held-p.running, c)
			}
			if p.held >= c {
				st.atLimit[q.name]++
			}
		}
		kl := q.keyLimit()
		reached := false
		for k, n := range p.keyHeld {
			if kl == 0 {
				continue
			}
			st.maxKey[q.name] = max(st.maxKey[q.name], p.keyRunning[k])
			if r := p.keyRunning[k]; r > kl {
				problem("limit sample %d: key %q of queue %s has %d jobs RUNNING, above its limit of %d", st.samples, k, q.name, r, kl)
			} else if n > kl {
				problem("limit sample %d: key %q of queue %s has %d jobs RUNNING and %d cancelled ones still holding slots, above its limit of %d",
					st.samples, k, q.name, r, n-r, kl)
			}
			reached = reached || n >= kl
		}
		if reached {
			st.atLimit[q.name]++
		}
	}
}

// LimitedQueue is what the soak saw of one limited queue.
type LimitedQueue struct {
	Queue  string `json:"queue"`
	Limits string `json:"limits"`
	// Jobs enqueued into it, and how they ended.
	Jobs      int `json:"jobs"`
	Done      int `json:"done"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	// Executions by the pools; Claims, Blocks, Unblocks: audited PENDING →
	// RUNNING, PENDING → BLOCKED, BLOCKED → PENDING; BlockedCancelled:
	// BLOCKED → CANCELLED; Reaps; CancelledRunning: RUNNING → CANCELLED.
	Executions       int `json:"executions"`
	Claims           int `json:"claims"`
	Blocks           int `json:"blocks"`
	Unblocks         int `json:"unblocks"`
	BlockedCancelled int `json:"blocked_cancelled"`
	Reaps            int `json:"reaps"`
	CancelledRunning int `json:"cancelled_running"`
	// MaxRunning and MaxKeyRunning: the most RUNNING jobs the sampler saw
	// at once, in all and with one key; MaxBlocked: BLOCKED at once;
	// SamplesAtLimit: samples in which its limit (or a key's) was reached.
	MaxRunning     int `json:"max_running"`
	MaxKeyRunning  int `json:"max_key_running"`
	MaxBlocked     int `json:"max_blocked"`
	SamplesAtLimit int `json:"samples_at_limit"`
	// MaxOverlap is the most executions (ledger) that overlapped in time,
	// with one key for a keyed queue, in all for a global limit.
	MaxOverlap int `json:"max_overlap"`
	// MaxStartsPerPeriod is, for a rate limit, the most starts of one key
	// (audited claims, by the database's clock) in any window of its
	// period.
	MaxStartsPerPeriod int `json:"max_starts_per_period,omitempty"`
}

func limitsText(l lockstep.QueueLimits) string {
	var parts []string
	if l.Concurrency > 0 {
		parts = append(parts, fmt.Sprintf("concurrency %d", l.Concurrency))
	}
	if l.KeyConcurrency > 0 {
		parts = append(parts, fmt.Sprintf("%d per key", l.KeyConcurrency))
	}
	switch l.Sequence {
	case lockstep.SequenceRelease:
		parts = append(parts, "sequences (FAILED releases)")
	case lockstep.SequenceHold:
		parts = append(parts, "sequences (FAILED holds)")
	}
	if l.Rate > 0 {
		per := "queue"
		if l.RateByKey {
			per = "key"
		}
		parts = append(parts, fmt.Sprintf("%d starts per %s per %s", l.Rate, l.RatePeriod, per))
	}
	return strings.Join(parts, ", ")
}

// sortedKeys is m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
