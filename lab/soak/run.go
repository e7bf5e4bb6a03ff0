package soak

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstep-queue/lockstep"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/migrate"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// Random streams, one per actor, so each actor's choices depend on the
// seed alone and not on how the others were scheduled.
const (
	streamEnqueuer = 1 + iota
	streamCanceller
	streamDead
	streamFinal
	streamFlow
	streamFlowRetry
	streamFlowCancel
	streamSettings
)

const (
	enqueuers   = 2
	stopTimeout = 30 * time.Second
	// backendsTimeout bounds the wait for PostgreSQL's backends to exit
	// (and so publish their statistics) before the last deadlock reading.
	backendsTimeout = 20 * time.Second
)

type pool struct {
	drv     driver.Driver
	client  *lockstep.Client
	stopped bool
}

// soak is one run's state. teardown releases whatever run left open when
// it returned early.
type soak struct {
	cfg    Config
	queues []string // the plain queues
	// limited are the limited queues (limits.go), limitStats what their
	// sampler saw.
	limited    []*limitedQueue
	limitStats *limitStats
	ledger     *ledger
	logs       *logCounter
	logger     *slog.Logger

	own    driver.Driver
	client *lockstep.Client // enqueue-only, on own
	// history is the rollup per queue after the drain (nil: not read).
	history map[string]rowtype.HistoryRow
	pools   []*pool
	dead    *deadWorker

	backlog        atomic.Int64 // PENDING jobs at the last sample
	auditInstalled bool
	start          time.Time
}

func newSoak(cfg Config) *soak {
	s := &soak{cfg: cfg, ledger: newLedger(), limited: newLimitedQueues(), limitStats: newLimitStats()}
	for i := range cfg.Queues {
		s.queues = append(s.queues, fmt.Sprintf("soak_%d", i+1))
	}
	s.logs = newLogCounter(cfg.Logger.Handler())
	s.logger = slog.New(s.logs)
	return s
}

func (s *soak) clientConfig(ws *lockstep.Workers) lockstep.Config {
	cfg := lockstep.Config{
		Logger:            s.logger,
		PollInterval:      s.cfg.PollInterval,
		MinPollInterval:   min(10*time.Millisecond, s.cfg.PollInterval),
		HeartbeatInterval: s.cfg.HeartbeatInterval,
		ReapAfter:         s.cfg.ReapAfter,
		ReapInterval:      s.cfg.ReapInterval,
		MaxAttempts:       jobMaxAttempts,
		RetryBackoff:      retryBackoff,
		FinishTimeout:     stopTimeout,
		OnRetry:           s.ledger.onRetry,
		OnEvent: func(e lockstep.Event) {
			s.ledger.onFlowEvent(e)
			s.ledger.onHistoryEvent(e)
		},
		HistoryFlushInterval: historyFlushInterval,
	}
	if ws != nil {
		cfg.Workers = ws
		cfg.Queues = map[string]lockstep.QueueConfig{}
		for _, q := range s.queues {
			cfg.Queues[q] = lockstep.QueueConfig{MaxWorkers: s.cfg.Workers}
		}
		for _, q := range s.limited {
			// Every pool writes the same limits at its Start.
			cfg.Queues[q.name] = lockstep.QueueConfig{MaxWorkers: s.cfg.Workers, Limits: &q.limits}
		}
	}
	return cfg
}

func (s *soak) progress(format string, args ...any) {
	if s.cfg.Progress != nil {
		fmt.Fprintf(s.cfg.Progress, "soak %7.1fs  "+format+"\n", append([]any{time.Since(s.start).Seconds()}, args...)...)
	}
}

func (s *soak) run(ctx context.Context) (*Result, error) {
	s.start = time.Now()
	res := &Result{Seed: s.cfg.Seed, Pools: s.cfg.Pools, Workers: s.cfg.Workers, Queues: len(s.queues)}
	before, err := s.probeDeadlocks(ctx)
	if err != nil {
		return nil, err
	}
	if s.own, err = s.cfg.Open(ctx); err != nil {
		return nil, fmt.Errorf("soak: open: %w", err)
	}
	res.Dialect = s.own.Dialect()
	if res.Server, err = s.own.Version(ctx); err != nil {
		return nil, fmt.Errorf("soak: server version: %w", err)
	}
	if err := s.prepare(ctx); err != nil {
		return nil, err
	}
	if res.SessionIsolation, err = sessionIsolation(ctx, s.own); err != nil {
		return nil, err
	}
	if res.Isolation, err = txIsolation(ctx, s.own, s.own, 0); err != nil {
		return nil, err
	}
	if s.client, err = lockstep.NewClient(s.own, s.clientConfig(nil)); err != nil {
		return nil, fmt.Errorf("soak: %w", err)
	}
	for i := range s.cfg.Pools {
		if err := s.startPool(ctx, i, res); err != nil {
			return nil, err
		}
	}
	s.dead = &deadWorker{drv: s.own, exec: s.own.Executor(), ledger: s.ledger, after: map[string]driver.ClaimKey{}}
	s.progress("started: %s %s, isolation %s, %d pools × %d workers × %d queues (and %d limited), load for %s",
		res.Dialect, res.Server, res.Isolation, s.cfg.Pools, s.cfg.Workers, len(s.queues), len(s.limited), s.cfg.Duration)

	// The limits' sampler watches the load and the drain.
	stopSampler := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() { s.sampleLimits(ctx, stopSampler) })
	stopSampling := sync.OnceFunc(func() {
		close(stopSampler)
		sampler.Wait()
	})
	defer stopSampling()

	loadStart := time.Now()
	if err := s.load(ctx); err != nil {
		return nil, err
	}
	res.Load = time.Since(loadStart)
	drainStart := time.Now()
	drained, err := s.drain(ctx)
	if err != nil {
		return nil, err
	}
	res.Drain = time.Since(drainStart)
	stopSampling()
	s.stopPools(!drained)

	// Every job is final now, so every late finish must be refused.
	if err := s.dead.staleFinishes(ctx, rand.New(rand.NewPCG(s.cfg.Seed, streamFinal)), true); err != nil {
		return nil, fmt.Errorf("soak: stale finishes: %w", err)
	}
	jobs, err := listJobs(ctx, s.own)
	if err != nil {
		return nil, err
	}
	// Every pool stopped, and flushed its history at Stop (a pool whose
	// Stop timed out is a problem already; its counts are not checked).
	if drained {
		if s.history, err = s.readHistory(ctx); err != nil {
			return nil, err
		}
	}
	audit, auditRows, err := readAudit(ctx, s.own)
	if err != nil {
		return nil, err
	}
	if err := dropAudit(ctx, s.own); err != nil {
		return nil, err
	}
	s.auditInstalled = false
	_ = s.own.Close()
	s.own = nil

	after, note, err := s.afterDeadlocks(ctx, before)
	if err != nil {
		return nil, err
	}
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	res.AuditRows = auditRows
	s.check(res, jobs, audit, before, after)
	return res, nil
}

// prepare migrates the schema if needed, refuses a database that already
// holds jobs or runs, and installs the audit.
func (s *soak) prepare(ctx context.Context) error {
	m, err := migrate.New(s.own)
	if err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	applied, err := m.Up(ctx)
	if err != nil {
		return fmt.Errorf("soak: migrate: %w", err)
	}
	if len(applied) > 0 {
		s.progress("migrated the schema to version %d", m.Latest())
	}
	if s.cfg.TextIndex {
		if err := migrate.TextIndex(ctx, s.own, true); err != nil && !errors.Is(err, migrate.ErrNoTextIndex) {
			return fmt.Errorf("soak: text index: %w", err)
		}
	}
	var jobs, runs int64
	err = s.own.DB().QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM lockstep_jobs), (SELECT COUNT(*) FROM lockstep_runs)").Scan(&jobs, &runs)
	if err != nil {
		return fmt.Errorf("soak: count existing rows: %w", err)
	}
	if jobs > 0 || runs > 0 {
		return fmt.Errorf("soak: the database already holds %d jobs and %d runs: the soak needs a scratch database whose lockstep tables are empty "+
			"(it checks every job in them, installs a trigger on lockstep_jobs for the run, and leaves its own jobs behind)", jobs, runs)
	}
	s.auditInstalled = true // dropped by teardown even if only half made
	return installAudit(ctx, s.own)
}

func (s *soak) startPool(ctx context.Context, i int, res *Result) error {
	drv, err := s.cfg.Open(ctx)
	if err != nil {
		return fmt.Errorf("soak: open pool %d: %w", i, err)
	}
	p := &pool{drv: drv, stopped: true}
	s.pools = append(s.pools, p)
	session, err := sessionIsolation(ctx, drv)
	if err != nil {
		return err
	}
	// The other session is the pool's own: on a Galera cluster whose pools
	// are on different nodes, a row committed through another node may
	// not be applied on this one yet, and the read would look like a
	// snapshot.
	queueTx, err := txIsolation(ctx, drv, drv, i+1)
	if err != nil {
		return err
	}
	if session != res.SessionIsolation || queueTx != res.Isolation {
		s.ledger.problem("pool %d runs at isolation %s (transactions %s), the soak's own pool at %s (%s)", i, session, queueTx, res.SessionIsolation, res.Isolation)
	}
	ws, err := newWorkers(s.ledger, i)
	if err != nil {
		return err
	}
	if p.client, err = lockstep.NewClient(drv, s.clientConfig(ws)); err != nil {
		return fmt.Errorf("soak: pool %d: %w", i, err)
	}
	if err := p.client.Start(ctx); err != nil {
		return fmt.Errorf("soak: start pool %d: %w", i, err)
	}
	s.ledger.registered(i, p.client.ProcessID())
	p.stopped = false
	return nil
}

// listJobs reads every job by ascending id.
func listJobs(ctx context.Context, drv driver.Driver) ([]*rowtype.JobRow, error) {
	var out []*rowtype.JobRow
	exec := drv.Executor()
	for after := int64(0); ; {
		page, err := exec.JobList(ctx, &rowtype.JobListParams{AfterID: after, Limit: 1000})
		if err != nil {
			return nil, fmt.Errorf("soak: list jobs: %w", err)
		}
		out = append(out, page...)
		if len(page) < 1000 {
			return out, nil
		}
		after = page[len(page)-1].ID
	}
}
