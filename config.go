package lockstep

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"
	"unicode"
)

// QueueConfig configures one named queue served by a client.
type QueueConfig struct {
	// MaxWorkers is how many of the queue's jobs this client runs at once.
	// While the queue is saturated with jobs that run for less time than
	// a claim takes, and has no Limits, a claim may also take up to
	// MaxWorkers jobs more than the workers free: they are RUNNING in the
	// database and wait in this process for a worker, heartbeated and
	// cancellable as running jobs, so that workers do not sit idle while
	// the next claim is on its way. They start only while fewer than the
	// queue's current limit run, and run through a pause or a stop as
	// running jobs do.
	MaxWorkers int
	// Limits, when set, are written as the queue's shared limits when the
	// client starts (as SetQueueLimits would): every process then claims
	// under them. Unset leaves the queue's limits as they are, set by
	// another process or at runtime (lockstep queues limit).
	Limits *QueueLimits
	// StrictPriority makes every claim of the queue start from its head,
	// so that a job of a higher priority (or an earlier available_at)
	// inserted while the queue is saturated starts at the next claim.
	// Without it a saturated queue claims after the last job its previous
	// claim took, and such a job waits up to PollInterval (see there).
	// The price: while a long transaction elsewhere holds a snapshot, each
	// claim reads again every index entry of the jobs claimed since it
	// began (BENCHMARKS.md, "A long transaction elsewhere").
	StrictPriority bool
}

// DefaultQueue is the queue of jobs enqueued without one.
const DefaultQueue = "default"

// Config configures a Client. Zero values take the documented defaults.
type Config struct {
	// Queues served by Start, by name. Default: {"default": {MaxWorkers: 10}}
	// when Workers is set; a client without Workers only enqueues.
	Queues map[string]QueueConfig
	// Workers registered with AddWorker.
	Workers *Workers
	// Logger; default slog.Default().
	Logger *slog.Logger

	// PollInterval is the longest a queue waits between claims when it
	// finds nothing. A queue also claims at once when a job finishes, when
	// a job is enqueued through this client, and on a wake-up from another
	// process (see DisableNotify). A claim that filled every free slot is
	// followed by another as soon as a slot frees; after one that found
	// some work the next poll is MinPollInterval away; each poll that finds
	// nothing doubles that, up to PollInterval. Default 1s.
	//
	// While a queue is saturated (each claim takes every job it asks
	// for) its claims start after the last job the previous one took,
	// so that they do not read again the index entries of jobs already
	// claimed, which a long transaction elsewhere keeps; a claim from
	// the queue's head still runs every PollInterval, or, once such
	// claims have grown slow, ten times as long as the last one took. A
	// job that sorts before the last one claimed — a higher priority
	// inserted while the queue is saturated — waits up to that long
	// (QueueConfig.StrictPriority claims from the head every time).
	PollInterval time.Duration
	// MinPollInterval is the poll interval while work keeps coming: the
	// longest a job enqueued by another process waits, when no wake-up
	// reaches this client, while its queue is busy. Default 25ms.
	MinPollInterval time.Duration
	// DisableNotify turns off this client's wake-up listener. On PostgreSQL
	// (a driver that implements driver.Notifier) a client that serves
	// queues LISTENs on a connection of its own, outside the pool, and a
	// job enqueued by another process wakes the queue's producer at once
	// instead of at its next poll; without it such jobs wait for the poll
	// (at most PollInterval). Set it behind a connection pooler in
	// transaction mode, which cannot hold a LISTEN, or to keep the extra
	// connection. Jobs this client enqueues wake its own producers either
	// way, and its inserts still notify other processes (see
	// postgres.Driver.WithoutNotify to stop that).
	DisableNotify bool

	// HeartbeatInterval is how often a client refreshes the heartbeat of
	// its running jobs and notices jobs cancelled elsewhere. Default 5s.
	HeartbeatInterval time.Duration
	// ReapAfter is how old a RUNNING job's heartbeat must be before the
	// reaper returns it to PENDING. Default 1 minute; must exceed twice
	// HeartbeatInterval.
	ReapAfter time.Duration
	// ReapInterval is how often the reaper looks. Default ReapAfter/4.
	ReapInterval time.Duration
	// DisableReaper turns the reaper off in this client (another process
	// may run it; it is safe to run in every process at once).
	DisableReaper bool

	// Retention deletes final jobs once they are older than these, counted
	// from when they reached their status, so the table does not grow
	// without bound. Defaults: RetainDone and RetainCancelled 24 hours,
	// RetainFailed 7 days (failures are what someone investigates). A
	// negative value keeps that status forever.
	RetainDone, RetainCancelled, RetainFailed time.Duration
	// RetentionInterval is how often retention looks. Default 1 minute.
	RetentionInterval time.Duration
	// DisableRetention turns retention off in this client (it is safe to
	// run in every process at once).
	DisableRetention bool

	// ProcessRetention is how old a registered process's heartbeat must be
	// before retention deletes its row (a process killed without a clean
	// Stop; one that stops cleanly deletes its own). Dead processes are
	// shown until then. Default DefaultProcessRetention; it must exceed
	// ReapAfter.
	ProcessRetention time.Duration
	// HistoryFlushInterval is how often a client adds the counts of the
	// jobs it finished (done, failed, retried, cancelled, run time) per
	// minute, queue and kind to the history rollup, in a short
	// transaction of its own; Stop flushes once more. A process that dies
	// loses what it counted since its last flush. Default
	// DefaultHistoryFlushInterval (10s).
	HistoryFlushInterval time.Duration
	// HistoryRetention is how long the rollup keeps a minute; retention
	// deletes older rows. Default DefaultHistoryRetention (30 days); a
	// negative value keeps them forever.
	HistoryRetention time.Duration
	// DisableHistory turns off this client's counting and flushing (the
	// rollup's retention still runs with the job retention).
	DisableHistory bool

	// QueueSettingsInterval is how often a client that serves queues
	// re-reads their shared settings (PauseQueue, SetQueueMaxWorkers) to
	// pick up what other processes set. Default 500ms, so that a pause
	// reaches every process within a second.
	QueueSettingsInterval time.Duration

	// PeriodicJobs are enqueued on a schedule by every started client that
	// has them, once per tick across all processes: each tick's job has a
	// unique key of the job's name and the tick's time, so the processes
	// racing to enqueue it make one job. Give every process the same list.
	PeriodicJobs []PeriodicJob

	// JobTimeout bounds each job's context unless its worker says
	// otherwise. Default 0: no timeout.
	JobTimeout time.Duration
	// MaxAttempts is the default number of attempts of a job. Default 25.
	MaxAttempts int
	// RetryBackoff is the default delay before attempt+1 after a failed
	// attempt. Default: attempt⁴ seconds, ±10% jitter, at most 24 hours.
	RetryBackoff func(attempt int) time.Duration
	// MaxArgsBytes limits a job's encoded args. Default 1 MiB.
	MaxArgsBytes int
	// FinishTimeout bounds writing a job's result, which runs even while
	// the client stops. Default 30s.
	FinishTimeout time.Duration
	// CompleteBatchWait is the longest a busy client holds a finished
	// job's DONE to write it in one transaction with others. A job's
	// worker slot is free as soon as it hands its DONE over; the DONE is
	// written, and the job's EventJobFinished sent, with its batch. An
	// idle client writes a DONE at once; a client whose last batch held
	// several DONEs waits up to this long for more before the next write
	// (or until a batch is full), so that under load it commits a few
	// large batches instead of many small ones — on a database whose
	// commits wait for a log flush, that is most of its time. A process
	// that dies meanwhile leaves those jobs RUNNING, to be reaped and run
	// again, as any job it was running. Default 10ms; set 1ns to write
	// each batch as soon as the one before it committed.
	CompleteBatchWait time.Duration

	// OnRetry, when set, is called each time the client retries a unit of
	// work after a retryable database error (deadlock, lock timeout,
	// serialization failure, busy). Its code is there for errors.As with a
	// *DBError. It must be quick and safe for concurrent use.
	OnRetry func(op string, err error)
	// OnEvent, when set, is called for each Event (enqueues, claims, job
	// starts and finishes, reaps, cancels, retried database errors); the
	// metrics package hangs off it. It is called synchronously from the
	// client's goroutines, so it must be quick and safe for concurrent use.
	OnEvent func(Event)

	// WorkerMiddleware wraps the execution of every job this client runs,
	// the first in the list outermost, around each worker's own
	// (WorkerWithMiddleware); see WorkerMiddleware. Default: none.
	WorkerMiddleware []WorkerMiddleware
	// InsertMiddleware wraps every insert through this client (Insert,
	// InsertMany, their Tx variants, InsertRun, periodic jobs), the first
	// in the list outermost; see InsertMiddleware. Default: none.
	InsertMiddleware []InsertMiddleware
}

// withDefaults returns a validated copy of c with defaults filled in.
func (c Config) withDefaults() (Config, error) {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Queues == nil && c.Workers != nil {
		c.Queues = map[string]QueueConfig{DefaultQueue: {MaxWorkers: 10}}
	}
	for name, q := range c.Queues {
		if err := validName("queue", name); err != nil {
			return c, err
		}
		if q.MaxWorkers < 1 || q.MaxWorkers > MaxQueueWorkers {
			return c, fmt.Errorf("config: queue %q: MaxWorkers must be between 1 and %d, got %d", name, MaxQueueWorkers, q.MaxWorkers)
		}
		if q.Limits != nil {
			if err := validLimits(*q.Limits); err != nil {
				return c, fmt.Errorf("config: queue %q: Limits: %w", name, err)
			}
		}
	}
	def := func(d *time.Duration, v time.Duration, name string) error {
		if *d < 0 {
			return fmt.Errorf("config: %s must not be negative", name)
		}
		if *d == 0 {
			*d = v
		}
		return nil
	}
	errs := []error{
		def(&c.PollInterval, time.Second, "PollInterval"),
		def(&c.MinPollInterval, 25*time.Millisecond, "MinPollInterval"),
		def(&c.HeartbeatInterval, 5*time.Second, "HeartbeatInterval"),
		def(&c.ReapAfter, time.Minute, "ReapAfter"),
		def(&c.ReapInterval, c.ReapAfter/4, "ReapInterval"),
		def(&c.FinishTimeout, 30*time.Second, "FinishTimeout"),
		def(&c.CompleteBatchWait, DefaultCompleteBatchWait, "CompleteBatchWait"),
		def(&c.RetentionInterval, time.Minute, "RetentionInterval"),
		def(&c.QueueSettingsInterval, 500*time.Millisecond, "QueueSettingsInterval"),
		def(&c.ProcessRetention, DefaultProcessRetention, "ProcessRetention"),
		def(&c.HistoryFlushInterval, DefaultHistoryFlushInterval, "HistoryFlushInterval"),
	}
	for _, r := range []struct {
		d   *time.Duration
		def time.Duration
	}{{&c.RetainDone, 24 * time.Hour}, {&c.RetainCancelled, 24 * time.Hour}, {&c.RetainFailed, 7 * 24 * time.Hour}} {
		if *r.d == 0 {
			*r.d = r.def
		}
	}
	if c.HistoryRetention == 0 {
		c.HistoryRetention = DefaultHistoryRetention
	}
	if c.JobTimeout < 0 {
		errs = append(errs, errors.New("config: JobTimeout must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	if c.MinPollInterval > c.PollInterval {
		c.MinPollInterval = c.PollInterval
	}
	if c.ProcessRetention <= c.ReapAfter {
		return c, fmt.Errorf("config: ProcessRetention (%s) must exceed ReapAfter (%s), or a dead process's row would go before its jobs are reaped", c.ProcessRetention, c.ReapAfter)
	}
	if c.ReapAfter <= 2*c.HeartbeatInterval {
		return c, fmt.Errorf("config: ReapAfter (%s) must exceed twice HeartbeatInterval (%s), or live jobs would be reaped", c.ReapAfter, c.HeartbeatInterval)
	}
	if c.MaxAttempts < 0 {
		return c, fmt.Errorf("config: MaxAttempts must be positive, got %d", c.MaxAttempts)
	}
	if c.MaxAttempts > math.MaxInt32 {
		return c, fmt.Errorf("config: MaxAttempts %d is out of range [1, %d]", c.MaxAttempts, math.MaxInt32)
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 25
	}
	if c.RetryBackoff == nil {
		c.RetryBackoff = DefaultRetryBackoff
	}
	if c.MaxArgsBytes < 0 {
		return c, fmt.Errorf("config: MaxArgsBytes must be positive, got %d", c.MaxArgsBytes)
	}
	if c.MaxArgsBytes == 0 {
		c.MaxArgsBytes = 1 << 20
	}
	if err := errors.Join(checkMiddleware("WorkerMiddleware", c.WorkerMiddleware), checkMiddleware("InsertMiddleware", c.InsertMiddleware)); err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	// The client's own copies: a caller appending to its slices later
	// changes nothing in a running client.
	c.WorkerMiddleware = slices.Clone(c.WorkerMiddleware)
	c.InsertMiddleware = slices.Clone(c.InsertMiddleware)
	return c, nil
}

// maxNameBytes is the longest queue or kind name: the columns hold 128.
const maxNameBytes = 128

// validName checks a queue or kind name: these are stored, shown in the
// dashboard and logs, and never used as SQL identifiers. Control
// characters (C0, DEL and C1) and invalid UTF-8 are refused, since they
// would garble a log line or a terminal.
func validName(what, name string) error {
	if name == "" {
		return fmt.Errorf("%s name is empty", what)
	}
	if len(name) > maxNameBytes {
		return fmt.Errorf("%s name is %d bytes long; the limit is %d", what, len(name), maxNameBytes)
	}
	for _, r := range name {
		if unicode.IsControl(r) || r == '\uFFFD' {
			return fmt.Errorf("%s name %q contains a control or invalid character", what, name)
		}
	}
	return nil
}
