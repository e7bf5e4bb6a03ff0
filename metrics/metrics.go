// Package metrics exports a lockstep client's activity to Prometheus.
//
// The counters and histograms hang off lockstep.Config.OnEvent, so they
// cost no database work: they count what the client did anyway. Queue depth
// cannot be learnt from events (other processes enqueue and finish jobs too),
// so it is sampled from the database by Sample or RunSampler, each sample
// being a bounded read (see lockstep.StatsParams).
//
//	m, err := metrics.New(prometheus.DefaultRegisterer, metrics.Options{})
//	client, err := lockstep.NewClient(drv, lockstep.Config{OnEvent: m.Observe, ...})
//	go m.RunSampler(ctx, client, 15*time.Second, nil)
//
// Queue limits (lockstep.QueueLimits) show in three places: the claims of
// this process that held jobs back (lockstep_jobs_limited_total, from
// events), the jobs held back now (lockstep_queue_jobs{status="BLOCKED"},
// sampled), and each queue's limits (lockstep_queue_limit, sampled), which
// the sampled RUNNING count is used against:
//
//	lockstep_queue_jobs{status="RUNNING"} / on(queue) lockstep_queue_limit{limit="concurrency"}
//
// Label values are only queue names, job kinds, statuses, database error
// codes and the operation names of the client: never DSNs or error
// messages, which may carry secrets and are unbounded.
package metrics

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/lockstep-queue/lockstep"
)

const (
	namespace = "lockstep"

	// OtherLabel stands for the label values beyond a cardinality cap.
	OtherLabel = "_other"

	// DefaultMaxLabelValues is Options.MaxLabelValues when it is not set.
	DefaultMaxLabelValues = 1000

	// maxDBRetryLabels caps the (op, code) pairs of
	// lockstep_db_retries_total. Ops are a handful of constants and codes
	// a handful per database, so reaching it means something is wrong, and
	// the series should not multiply because of it.
	maxDBRetryLabels = 100
)

// The finish outcomes of lockstep_jobs_finished_total. Retries and snoozes
// end PENDING in the database; telling them apart from each other and from
// results the fence discarded is what makes the counter useful.
const (
	FinishDone      = "DONE"
	FinishFailed    = "FAILED"
	FinishRetry     = "RETRY"
	FinishSnoozed   = "SNOOZED"
	FinishDiscarded = "DISCARDED"
)

var finishStatuses = [...]string{FinishDone, FinishFailed, FinishRetry, FinishSnoozed, FinishDiscarded}

// The outcomes of lockstep_jobs_limited_total: a job a claim found over its
// key's limit (or behind earlier jobs of its sequence) is made BLOCKED; one
// over its key's rate limit is deferred (made available later).
const (
	LimitedBlocked  = "blocked"
	LimitedDeferred = "deferred"
)

// The limits of lockstep_queue_limit: the most RUNNING jobs of the queue,
// and of one limit key; the most starts per period of the queue, and of one
// key (lockstep_queue_limit_period_seconds is the period); 1 when the
// queue's keys are sequences (one job at a time, in insert order).
const (
	LimitConcurrency    = "concurrency"
	LimitKeyConcurrency = "key_concurrency"
	LimitRate           = "rate"
	LimitKeyRate        = "key_rate"
	LimitSequence       = "sequence"
)

const (
	finishDone = iota
	finishFailed
	finishRetry
	finishSnoozed
	finishDiscarded
)

var (
	// latencyBuckets cover database statements: a fast claim or finish on
	// a local SQLite is well under a millisecond, one stuck behind locks
	// takes seconds before its lock wait times out.
	latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	// jobBuckets extend the latency buckets for job run times and waits,
	// which are the user's work and the backlog: minutes and hours are
	// ordinary there, and a histogram whose samples all land in +Inf says
	// nothing.
	jobBuckets = append(append([]float64(nil), latencyBuckets...), 60, 300, 900, 3600)
	// batchBuckets start at 0 because empty claims are the polling cost of
	// an idle queue.
	batchBuckets = []float64{0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}
)

// Options configures Metrics. The zero value takes the documented defaults.
type Options struct {
	// MaxLabelValues caps the series a misbehaving producer can create:
	// queue and kind names come from application code, and a kind or queue
	// built from data (a tenant id, say) would otherwise create series
	// without end. At most MaxLabelValues distinct (queue, kind) pairs are
	// recorded under their own names; events of later pairs are recorded
	// under kind "_other" (of their queue). Likewise at most MaxLabelValues
	// distinct queues keep their name in the queue-labelled metrics; later
	// ones are recorded under queue "_other". A pair-labelled metric thus
	// has at most about 2×MaxLabelValues series. Default 1000.
	MaxLabelValues int
	// Logger reports RunSampler's failures. Default slog.Default().
	Logger *slog.Logger
}

// Metrics holds the collectors. Observe is safe for concurrent use, and so
// are Sample and RunSampler.
type Metrics struct {
	max    int
	logger *slog.Logger

	enqueued   *prometheus.CounterVec
	claimed    *prometheus.CounterVec
	finished   *prometheus.CounterVec
	retries    *prometheus.CounterVec
	snoozes    *prometheus.CounterVec
	reaped     *prometheus.CounterVec
	promoted   *prometheus.CounterVec
	callbacks  *prometheus.CounterVec
	cancelled  prometheus.Counter
	claimBatch *prometheus.HistogramVec
	claimDur   *prometheus.HistogramVec
	finishDur  *prometheus.HistogramVec
	runDur     *prometheus.HistogramVec
	wait       *prometheus.HistogramVec
	dbRetries  *prometheus.CounterVec
	queueJobs  *prometheus.GaugeVec
	queueCap   *prometheus.GaugeVec
	oldest     *prometheus.GaugeVec
	paused     *prometheus.GaugeVec
	maxWorkers *prometheus.GaugeVec
	limited    *prometheus.CounterVec
	limit      *prometheus.GaugeVec
	limitRate  *prometheus.GaugeVec

	reapedPending prometheus.Counter
	reapedFailed  prometheus.Counter

	// The children of each label set are resolved once and cached, because
	// WithLabelValues hashes its labels and allocates on every call, and
	// Observe runs several times per job. Reads take the read lock only.
	mu         sync.RWMutex
	queues     map[string]*queueChildren // by queue name, at most max
	otherQueue *queueChildren            // queues beyond the cap
	pairs      map[pairKey]*pairChildren // by (queue, kind) name, at most max
	overflow   map[string]*pairChildren  // pairs beyond the cap, by queue label
	dbr        map[pairKey]prometheus.Counter
	otherDBR   prometheus.Counter

	// sampleMu serializes samples, so that the deletion of vanished queues
	// works from one consistent previous sample.
	sampleMu sync.Mutex
	sampled  map[pairKey]struct{} // (queue, status) gauges set last time
	sampledQ map[string]struct{}  // queues whose oldest gauge was set
	sampledL map[pairKey]struct{} // (queue, limit) gauges set last time
	sampledP map[string]struct{}  // queues whose rate period gauge was set
}

type pairKey struct{ a, b string }

type queueChildren struct {
	label      string
	claimed    prometheus.Counter
	claimBatch prometheus.Observer
	claimDur   prometheus.Observer
	finishDur  prometheus.Observer
	// limitedBlocked and limitedDeferred are resolved at the queue's first
	// limited claim (limitedCounters): most queues have no limits.
	limitedBlocked, limitedDeferred prometheus.Counter
}

type pairChildren struct {
	queue    *queueChildren
	kind     string
	enqueued prometheus.Counter
	finished [len(finishStatuses)]prometheus.Counter
	retries  prometheus.Counter
	snoozes  prometheus.Counter
	// promoted and callbacks count what the ending jobs of this queue and
	// kind did to their workflow: dependents made PENDING, callbacks fired.
	promoted  prometheus.Counter
	callbacks prometheus.Counter
	runDur    prometheus.Observer
	wait      prometheus.Observer
}

// New creates the collectors and registers them on reg (nil means
// prometheus.DefaultRegisterer). When one fails to register, those already
// registered are unregistered again, so a failed New leaves reg as it was.
func New(reg prometheus.Registerer, opts Options) (*Metrics, error) {
	if reg == nil {
		reg = prometheus.DefaultRegisterer
	}
	if opts.MaxLabelValues < 0 {
		return nil, fmt.Errorf("metrics: MaxLabelValues must not be negative, got %d", opts.MaxLabelValues)
	}
	if opts.MaxLabelValues == 0 {
		opts.MaxLabelValues = DefaultMaxLabelValues
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, labels)
	}
	m := &Metrics{
		max:    opts.MaxLabelValues,
		logger: opts.Logger,

		enqueued: counter("jobs_enqueued_total", "Jobs inserted by this process.", "queue", "kind"),
		claimed:  counter("jobs_claimed_total", "Jobs claimed by this process.", "queue"),
		finished: counter("jobs_finished_total", "Job attempts finished by this process, by outcome (DONE, FAILED, RETRY, SNOOZED, or DISCARDED when the job was cancelled or reclaimed meanwhile).", "queue", "kind", "status"),
		retries:  counter("job_retries_total", "Failed job attempts put back to PENDING for another attempt.", "queue", "kind"),
		snoozes:  counter("job_snoozes_total", "Job attempts that snoozed.", "queue", "kind"),
		reaped:   counter("jobs_reaped_total", "Jobs with a stale heartbeat that the reaper returned, by the status it gave them.", "status"),
		promoted: counter("jobs_promoted_total", "Dependents of a workflow made PENDING (callbacks included) by the end of a job of this queue and kind, in this process.", "queue", "kind"),
		callbacks: counter("run_callbacks_total", "Run callbacks enqueued by the end of a job of this queue and kind (the job that ended, not the callback), in this process.",
			"queue", "kind"),
		cancelled: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "jobs_cancelled_total",
			Help: "Jobs cancelled through this process."}),
		claimBatch: histogram("claim_batch_size", "Jobs taken by one claim statement (0 for an empty poll).", batchBuckets, "queue"),
		claimDur:   histogram("claim_duration_seconds", "Latency of claim statements.", latencyBuckets, "queue"),
		finishDur:  histogram("finish_duration_seconds", "Latency of writing a job's result, retries included.", latencyBuckets, "queue"),
		runDur:     histogram("job_run_duration_seconds", "Time a worker spent on a job attempt.", jobBuckets, "queue", "kind"),
		wait:       histogram("job_wait_seconds", "Time a job was available before its claim, by the database's clock.", jobBuckets, "queue", "kind"),
		dbRetries:  counter("db_retries_total", "Units of work retried after a retryable database error, by operation and database error code.", "op", "code"),
		queueJobs:  gauge("queue_jobs", "Jobs in the queue by status, as last sampled; a capped count is a lower bound.", "queue", "status"),
		queueCap: gauge("queue_jobs_capped", "1 when lockstep_queue_jobs of the same labels reached the sample's count limit and is a lower bound.",
			"queue", "status"),
		oldest:     gauge("queue_oldest_available_seconds", "Age of the oldest available PENDING job, as last sampled; 0 when none is available.", "queue"),
		paused:     gauge("queue_paused", "1 while a queue this process serves is paused (PauseQueue, by any process), 0 once resumed; absent until its first pause.", "queue"),
		maxWorkers: gauge("queue_max_workers", "A served queue's worker limit in this process after a runtime change (SetQueueMaxWorkers); absent until the first change.", "queue"),
		limited: counter("jobs_limited_total", "Jobs the claims of this process held back by their queue's limits: blocked (made BLOCKED: their key at its limit, or earlier jobs of their sequence not ended) or deferred (their key's rate limit spent).",
			"queue", "outcome"),
		limit: gauge("queue_limit", "A queue's limits as last sampled (QueueLimits), by limit: concurrency and key_concurrency (most RUNNING jobs of the queue and of one limit key), rate and key_rate (most starts per lockstep_queue_limit_period_seconds, of the queue or of one key), sequence (1: each key's jobs run one at a time in insert order). Absent for a limit the queue does not have.",
			"queue", "limit"),
		limitRate: gauge("queue_limit_period_seconds", "The period of a queue's rate limit (lockstep_queue_limit of limit rate or key_rate), as last sampled.", "queue"),

		queues:   map[string]*queueChildren{},
		pairs:    map[pairKey]*pairChildren{},
		overflow: map[string]*pairChildren{},
		dbr:      map[pairKey]prometheus.Counter{},
		sampled:  map[pairKey]struct{}{},
		sampledQ: map[string]struct{}{},
		sampledL: map[pairKey]struct{}{},
		sampledP: map[string]struct{}{},
	}
	cs := []prometheus.Collector{
		m.enqueued, m.claimed, m.finished, m.retries, m.snoozes, m.reaped, m.promoted, m.callbacks, m.cancelled,
		m.claimBatch, m.claimDur, m.finishDur, m.runDur, m.wait, m.dbRetries,
		m.queueJobs, m.queueCap, m.oldest, m.paused, m.maxWorkers, m.limited, m.limit, m.limitRate,
	}
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, r := range cs[:i] {
				reg.Unregister(r)
			}
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	m.reapedPending = m.reaped.WithLabelValues(string(lockstep.StatusPending))
	m.reapedFailed = m.reaped.WithLabelValues(string(lockstep.StatusFailed))
	return m, nil
}

// Observe records one event; pass it as lockstep.Config.OnEvent. The client
// calls it synchronously on its job path, so after the first event of a
// queue and kind it takes a read lock and touches cached children only,
// without allocating.
func (m *Metrics) Observe(e lockstep.Event) {
	switch e.Kind {
	case lockstep.EventEnqueued:
		m.pair(e.Queue, e.JobKind).enqueued.Inc()
	case lockstep.EventClaimed:
		q := m.queue(e.Queue)
		if e.Count > 0 {
			q.claimed.Add(float64(e.Count))
		}
		q.claimBatch.Observe(float64(e.Count))
		q.claimDur.Observe(e.Took.Seconds())
	case lockstep.EventJobStarted:
		m.pair(e.Queue, e.JobKind).wait.Observe(e.Wait.Seconds())
	case lockstep.EventJobFinished:
		p := m.pair(e.Queue, e.JobKind)
		switch i := finishIndex(e); {
		case i >= 0:
			p.finished[i].Inc()
		default:
			// Not an outcome the client reports today; counted rather than
			// dropped, under one fixed status so the label stays bounded.
			m.finished.WithLabelValues(p.queue.label, p.kind, "OTHER").Inc()
		}
		// A discarded result was not written: the retry or snooze it
		// asked for did not happen.
		if !e.Discarded {
			if e.Retry {
				p.retries.Inc()
			}
			if e.Snoozed {
				p.snoozes.Inc()
			}
		}
		p.runDur.Observe(e.Ran.Seconds())
		p.queue.finishDur.Observe(e.Took.Seconds())
	case lockstep.EventReaped:
		switch e.Status {
		case lockstep.StatusPending:
			m.reapedPending.Inc()
		case lockstep.StatusFailed:
			m.reapedFailed.Inc()
		default:
			m.reaped.WithLabelValues("OTHER").Inc()
		}
	case lockstep.EventPromoted:
		if e.Count > 0 {
			m.workflowCounters(e.Queue, e.JobKind).promoted.Add(float64(e.Count))
		}
	case lockstep.EventCallback:
		if e.Count > 0 {
			m.workflowCounters(e.Queue, e.JobKind).callbacks.Add(float64(e.Count))
		}
	case lockstep.EventCancelled:
		if e.Count > 0 {
			m.cancelled.Add(float64(e.Count))
		}
	case lockstep.EventDBRetry:
		m.dbRetry(e.Op, e.Code).Inc()
	case lockstep.EventQueuePaused:
		m.paused.WithLabelValues(m.queue(e.Queue).label).Set(1)
	case lockstep.EventQueueResumed:
		m.paused.WithLabelValues(m.queue(e.Queue).label).Set(0)
	case lockstep.EventQueueMaxWorkers:
		m.maxWorkers.WithLabelValues(m.queue(e.Queue).label).Set(float64(e.Count))
	case lockstep.EventLimited:
		q := m.limitedCounters(e.Queue)
		if e.Count > 0 {
			q.limitedBlocked.Add(float64(e.Count))
		}
		if e.Deferred > 0 {
			q.limitedDeferred.Add(float64(e.Deferred))
		}
	}
}

// limitedCounters returns a queue whose limited counters are resolved:
// both outcomes at once, so that the first block also shows a 0 of
// deferrals for rate() to start from.
func (m *Metrics) limitedCounters(queue string) *queueChildren {
	q := m.queue(queue)
	m.mu.RLock()
	ok := q.limitedBlocked != nil
	m.mu.RUnlock()
	if ok {
		return q
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if q.limitedBlocked == nil {
		q.limitedDeferred = m.limited.WithLabelValues(q.label, LimitedDeferred)
		q.limitedBlocked = m.limited.WithLabelValues(q.label, LimitedBlocked)
	}
	return q
}

// finishIndex maps a finish to its outcome. Discarded comes first: the
// status is what the worker asked for, not what happened.
func finishIndex(e lockstep.Event) int {
	switch {
	case e.Discarded:
		return finishDiscarded
	case e.Snoozed:
		return finishSnoozed
	case e.Retry:
		return finishRetry
	case e.Status == lockstep.StatusDone:
		return finishDone
	case e.Status == lockstep.StatusFailed:
		return finishFailed
	}
	return -1
}

// label makes a name safe as a label value: client_golang panics on
// invalid UTF-8, and a name read back from the database need not have gone
// through the client's validation.
func label(s string) string {
	if s == "" {
		return "_empty"
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// queue returns the cached children of a queue; the write lock is taken
// only to create them.
func (m *Metrics) queue(name string) *queueChildren {
	m.mu.RLock()
	q := m.findQueue(name)
	m.mu.RUnlock()
	if q != nil {
		return q
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.makeQueue(name)
}

// pair returns the cached children of a (queue, kind) pair.
func (m *Metrics) pair(queue, kind string) *pairChildren {
	k := pairKey{queue, kind}
	m.mu.RLock()
	p := m.findPair(k)
	m.mu.RUnlock()
	if p != nil {
		return p
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.makePair(k)
}

// findQueue looks a queue up under the read lock; nil means it must be
// created. Beyond the cap names are not stored, so that unbounded names
// cannot grow the cache either: they all share otherQueue.
func (m *Metrics) findQueue(name string) *queueChildren {
	if q := m.queues[name]; q != nil {
		return q
	}
	if len(m.queues) >= m.max {
		return m.otherQueue
	}
	return nil
}

func (m *Metrics) findPair(k pairKey) *pairChildren {
	if p := m.pairs[k]; p != nil {
		return p
	}
	if len(m.pairs) >= m.max {
		if q := m.findQueue(k.a); q != nil {
			return m.overflow[q.label]
		}
	}
	return nil
}

// makeQueue creates a queue's children; the caller holds the write lock.
func (m *Metrics) makeQueue(name string) *queueChildren {
	if q := m.findQueue(name); q != nil {
		return q
	}
	if len(m.queues) >= m.max {
		m.otherQueue = m.newQueue(OtherLabel)
		return m.otherQueue
	}
	q := m.newQueue(label(name))
	m.queues[name] = q
	return q
}

func (m *Metrics) newQueue(lv string) *queueChildren {
	return &queueChildren{
		label:      lv,
		claimed:    m.claimed.WithLabelValues(lv),
		claimBatch: m.claimBatch.WithLabelValues(lv),
		claimDur:   m.claimDur.WithLabelValues(lv),
		finishDur:  m.finishDur.WithLabelValues(lv),
	}
}

// makePair creates a pair's children; the caller holds the write lock.
func (m *Metrics) makePair(k pairKey) *pairChildren {
	if p := m.findPair(k); p != nil {
		return p
	}
	q := m.makeQueue(k.a)
	if len(m.pairs) >= m.max {
		p := m.newPair(q, OtherLabel)
		m.overflow[q.label] = p
		return p
	}
	p := m.newPair(q, label(k.b))
	m.pairs[k] = p
	return p
}

// workflowCounters returns a pair whose promoted and callbacks children
// are resolved: both at once, so that the first promotion also shows a 0
// of callbacks for rate() to start from.
func (m *Metrics) workflowCounters(queue, kind string) *pairChildren {
	p := m.pair(queue, kind)
	m.mu.RLock()
	ok := p.promoted != nil
	m.mu.RUnlock()
	if ok {
		return p
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if p.promoted == nil {
		p.callbacks = m.callbacks.WithLabelValues(p.queue.label, p.kind)
		p.promoted = m.promoted.WithLabelValues(p.queue.label, p.kind)
	}
	return p
}

// newPair resolves every child of a pair up front: the finished statuses
// then start at 0, so that rate() sees the first increment.
func (m *Metrics) newPair(q *queueChildren, kind string) *pairChildren {
	p := &pairChildren{
		queue:    q,
		kind:     kind,
		enqueued: m.enqueued.WithLabelValues(q.label, kind),
		retries:  m.retries.WithLabelValues(q.label, kind),
		snoozes:  m.snoozes.WithLabelValues(q.label, kind),
		runDur:   m.runDur.WithLabelValues(q.label, kind),
		wait:     m.wait.WithLabelValues(q.label, kind),
	}
	// Resolved lazily (workflowCounters): most queues run no workflows, and
	// two zero series for every pair of them would be noise.
	for i, s := range finishStatuses {
		p.finished[i] = m.finished.WithLabelValues(q.label, kind, s)
	}
	return p
}

// dbRetry returns the counter of an (op, code) pair.
func (m *Metrics) dbRetry(op, code string) prometheus.Counter {
	k := pairKey{op, code}
	m.mu.RLock()
	c := m.dbr[k]
	if c == nil && len(m.dbr) >= maxDBRetryLabels {
		c = m.otherDBR
	}
	m.mu.RUnlock()
	if c != nil {
		return c
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.dbr[k]; c != nil {
		return c
	}
	if len(m.dbr) >= maxDBRetryLabels {
		if m.otherDBR == nil {
			m.otherDBR = m.dbRetries.WithLabelValues(OtherLabel, OtherLabel)
		}
		return m.otherDBR
	}
	c = m.dbRetries.WithLabelValues(opLabel(op), codeLabel(code))
	m.dbr[k] = c
	return c
}

// opLabel bounds an operation name. Ops are the client's constants
// ("finish", "enqueue", ...), but the field is a plain string.
func opLabel(op string) string {
	if len(op) > 64 {
		return OtherLabel
	}
	return label(op)
}

// codeLabel keeps a database error code only when it looks like one
// ("1213", "40P01", "5"): the label must never carry a message, which may
// quote data or connection details.
func codeLabel(code string) string {
	if code == "" {
		return "none"
	}
	if len(code) > 16 {
		return OtherLabel
	}
	for _, r := range code {
		if !(r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r == '_') {
			return OtherLabel
		}
	}
	return code
}

// Sample reads the queues' counts once with c.Stats (bounded by p; see
// lockstep.StatsParams) and their limits with c.ListQueueSettings, and
// sets the queue gauges: lockstep_queue_jobs (BLOCKED counts the jobs the
// limits hold back) and lockstep_queue_limit. Gauges of queues (or
// statuses, or limits) that the read no longer returns are deleted, so
// that a drained and vanished queue does not report its last depth for
// ever, nor a cleared limit its last value. On error the gauges keep their
// previous values. The queue label is not subject to
// Options.MaxLabelValues: the read itself is capped by p.MaxQueues (and
// queues with settings are few: each was set by hand or configured).
func (m *Metrics) Sample(ctx context.Context, c *lockstep.Client, p *lockstep.StatsParams) error {
	if c == nil {
		return errors.New("metrics: sample: nil client")
	}
	stats, err := c.Stats(ctx, p)
	if err != nil {
		return fmt.Errorf("metrics: sample: %w", err)
	}
	settings, err := c.ListQueueSettings(ctx)
	if err != nil {
		return fmt.Errorf("metrics: sample: %w", err)
	}
	m.sampleMu.Lock()
	defer m.sampleMu.Unlock()
	m.sampleLimits(settings)
	seen := make(map[pairKey]struct{}, len(m.sampled))
	seenQ := make(map[string]struct{}, len(stats))
	for _, st := range stats {
		if st == nil {
			continue
		}
		q := label(st.Queue)
		for status, n := range st.Counts {
			s := label(string(status))
			m.queueJobs.WithLabelValues(q, s).Set(float64(n.N))
			capped := 0.0
			if n.Capped {
				capped = 1
			}
			m.queueCap.WithLabelValues(q, s).Set(capped)
			seen[pairKey{q, s}] = struct{}{}
		}
		age := 0.0
		if !st.OldestAvailableAt.IsZero() {
			now := st.Now
			if now.IsZero() {
				now = time.Now()
			}
			age = max(now.Sub(st.OldestAvailableAt).Seconds(), 0)
		}
		m.oldest.WithLabelValues(q).Set(age)
		seenQ[q] = struct{}{}
	}
	for k := range m.sampled {
		if _, ok := seen[k]; !ok {
			m.queueJobs.DeleteLabelValues(k.a, k.b)
			m.queueCap.DeleteLabelValues(k.a, k.b)
		}
	}
	for q := range m.sampledQ {
		if _, ok := seenQ[q]; !ok {
			m.oldest.DeleteLabelValues(q)
		}
	}
	m.sampled, m.sampledQ = seen, seenQ
	return nil
}

// sampleLimits sets the limit gauges of every queue that has limits and
// deletes those of limits no longer set; the caller holds sampleMu.
func (m *Metrics) sampleLimits(settings []lockstep.QueueSettings) {
	seen := make(map[pairKey]struct{}, len(m.sampledL))
	seenP := make(map[string]struct{}, len(m.sampledP))
	for _, qs := range settings {
		l := qs.Limits
		if !l.Any() {
			continue
		}
		q := label(qs.Queue)
		set := func(limit string, v float64) {
			m.limit.WithLabelValues(q, limit).Set(v)
			seen[pairKey{q, limit}] = struct{}{}
		}
		if l.Concurrency > 0 {
			set(LimitConcurrency, float64(l.Concurrency))
		}
		if l.KeyConcurrency > 0 {
			set(LimitKeyConcurrency, float64(l.KeyConcurrency))
		}
		if l.Sequence != lockstep.SequenceNone {
			set(LimitSequence, 1)
		}
		if l.Rate > 0 {
			if l.RateByKey {
				set(LimitKeyRate, float64(l.Rate))
			} else {
				set(LimitRate, float64(l.Rate))
			}
			m.limitRate.WithLabelValues(q).Set(l.RatePeriod.Seconds())
			seenP[q] = struct{}{}
		}
	}
	for k := range m.sampledL {
		if _, ok := seen[k]; !ok {
			m.limit.DeleteLabelValues(k.a, k.b)
		}
	}
	for q := range m.sampledP {
		if _, ok := seenP[q]; !ok {
			m.limitRate.DeleteLabelValues(q)
		}
	}
	m.sampledL, m.sampledP = seen, seenP
}

// DefaultSampleInterval is RunSampler's interval when it is given none.
const DefaultSampleInterval = 15 * time.Second

// sampleTimeout is the least time RunSampler gives one sample: a short
// interval must not starve a sample of a busy database.
const sampleTimeout = 10 * time.Second

// RunSampler calls Sample at once and then every interval (default
// DefaultSampleInterval) until ctx ends. Each sample is bounded by the
// interval (but given at least sampleTimeout), so that a read stuck on a
// lock shows up as a logged failure instead of silently freezing the
// gauges. Failures are logged and the next tick tries again: a metrics
// loop must not take the process down with it.
func (m *Metrics) RunSampler(ctx context.Context, c *lockstep.Client, interval time.Duration, p *lockstep.StatsParams) {
	if interval <= 0 {
		interval = DefaultSampleInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		sctx, cancel := context.WithTimeout(ctx, max(interval, sampleTimeout))
		err := m.Sample(sctx, c, p)
		cancel()
		if err != nil && ctx.Err() == nil {
			m.logger.Warn("lockstep metrics: sampling queue stats failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RegisterDB exports the pool statistics of db (open, in-use and idle
// connections, waits) under the constant label db_name=name; they show
// whether the workers are starved of connections. name should be a short
// fixed name such as "lockstep", never a DSN, which would put the
// password in every scrape.
func (m *Metrics) RegisterDB(reg prometheus.Registerer, name string, db *sql.DB) error {
	if reg == nil {
		reg = prometheus.DefaultRegisterer
	}
	if db == nil {
		return errors.New("metrics: register db: nil *sql.DB")
	}
	if err := reg.Register(collectors.NewDBStatsCollector(db, label(name))); err != nil {
		return fmt.Errorf("metrics: register db %q: %w", name, err)
	}
	return nil
}
