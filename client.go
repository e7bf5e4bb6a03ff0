// Package lockstep is a job queue in the database you already run — MySQL
// 8.0.1+/MariaDB 10.6+, PostgreSQL 12+, or embedded SQLite — whose every
// statement follows one lock order, so claim, finish, retry, snooze, reap
// and cancel cannot deadlock with each other whatever plan the optimizer
// picks.
package lockstep

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/migrate"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// Client enqueues jobs, and with Start runs workers for its queues.
type Client struct {
	drv    driver.Driver
	exec   driver.Executor
	cfg    Config
	logger *slog.Logger
	// claimTrace, set by tests only, observes the producers' statements.
	claimTrace *driver.StatementTrace

	mu       sync.Mutex
	started  bool
	stopping bool
	running  map[int64]*runningJob
	wake     map[string]chan struct{} // per served queue: in-process enqueue wake-up

	// settings is the last queue-settings snapshot; settingsMu makes each
	// refresh's read and swap one step, so a newer read is never replaced
	// by an older one.
	settings   atomic.Pointer[queueSettings]
	settingsMu sync.Mutex
	periodic   []periodicEntry // checked at NewClient
	// processID is the id registered at Start (lockstep_processes), which
	// the claims write to claimed_by; set before the producers start.
	processID string
	process   *rowtype.ProcessRow

	// writes watches the heartbeat writes' waits, for the reaper.
	writes *writeDelays

	history     *historyAgg        // counts finishes for the rollup; nil with DisableHistory
	completer   *completer         // batches DONE results while the client runs
	fetchCancel context.CancelFunc // stops claiming
	workCancel  context.CancelCauseFunc
	maintCancel context.CancelFunc
	producers   sync.WaitGroup
	jobs        sync.WaitGroup
	maint       sync.WaitGroup
}

type runningJob struct {
	attempt int
	cancel  context.CancelCauseFunc
	// finishingSince, when set, is when the worker returned: its result
	// is being written (or waits in the completer's batch). A result
	// that has waited a heartbeat interval is heartbeated until the write
	// ends — one that waits on a busy database must not let the job look
	// dead — while a younger one is left to its write, so that the
	// heartbeat does not contend for rows about to be finished (on
	// Galera, two writers of one row through two nodes fail
	// certification). A finishing job the heartbeat finds gone is its own
	// result committed first, or a cancel or reap the fenced finish will
	// report: nothing to cancel.
	finishingSince time.Time
}

// NewClient builds a client on a driver. It does not touch the database
// until used; Start checks the schema version.
func NewClient(drv driver.Driver, cfg Config) (*Client, error) {
	if drv == nil {
		return nil, errors.New("lockstep: NewClient: nil driver")
	}
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("lockstep: %w", err)
	}
	if len(c.Queues) > 0 && c.Workers == nil {
		return nil, errors.New("lockstep: config: Queues are set but no Workers are registered")
	}
	periodic, err := parsePeriodic(c.PeriodicJobs)
	if err != nil {
		return nil, fmt.Errorf("lockstep: %w", err)
	}
	cl := &Client{
		drv: drv, exec: drv.Executor(), cfg: c, logger: c.Logger,
		running: map[int64]*runningJob{}, wake: map[string]chan struct{}{},
		periodic: periodic,
		writes:   newWriteDelays(c.HeartbeatInterval, c.ReapAfter),
	}
	if !c.DisableHistory {
		cl.history = newHistoryAgg()
	}
	return cl, nil
}

// Dialect is the client's database: "mysql", "postgres" or "sqlite".
func (c *Client) Dialect() string { return c.drv.Dialect() }

// DB is the client's pool as a database/sql handle, for reads the client
// does not offer itself (the dashboard's lock view, a health check).
func (c *Client) DB() *sql.DB { return c.drv.DB() }

// ClassifyError reports the kind of a database error by its code, as the
// client's own retries classify it.
func (c *Client) ClassifyError(err error) ErrorKind { return c.drv.ClassifyError(err) }

// Start checks the schema and starts a producer per queue, the heartbeat
// and the reaper. ctx bounds only the start-up checks.
func (c *Client) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return errors.New("lockstep: client already started")
	}
	c.started = true
	c.mu.Unlock()
	if err := c.checkSchema(ctx); err != nil {
		c.mu.Lock()
		c.started = false
		c.mu.Unlock()
		return err
	}
	if err := c.applyConfiguredLimits(ctx); err != nil {
		c.mu.Lock()
		c.started = false
		c.mu.Unlock()
		return fmt.Errorf("lockstep: start: %w", err)
	}
	if len(c.cfg.Queues) > 0 {
		// Paused queues must not be claimed from even once.
		if err := c.retryDBIdempotent(ctx, "read queue settings", c.refreshQueueSettings); err != nil {
			c.mu.Lock()
			c.started = false
			c.mu.Unlock()
			return fmt.Errorf("lockstep: start: %w", err)
		}
	}
	fetchCtx, fetchCancel := context.WithCancel(context.Background())
	if c.claimTrace != nil {
		fetchCtx = driver.WithStatementTrace(fetchCtx, c.claimTrace)
	}
	workCtx, workCancel := context.WithCancelCause(context.Background())
	maintCtx, maintCancel := context.WithCancel(context.Background())
	// Register before the first claim, so that every claim names a
	// process the table has (or will have: a failed insert is retried by
	// the process heartbeat).
	proc := c.newProcess()
	c.register(ctx, proc)
	c.mu.Lock()
	c.processID, c.process = proc.ID, proc
	c.fetchCancel, c.workCancel, c.maintCancel = fetchCancel, workCancel, maintCancel
	for name := range c.cfg.Queues {
		c.wake[name] = make(chan struct{}, 1)
	}
	if len(c.cfg.Queues) > 0 {
		c.completer = newCompleter(c)
		go c.completer.run()
	}
	c.mu.Unlock()
	for name, qc := range c.cfg.Queues {
		p := &producer{c: c, queue: name, max: qc.MaxWorkers, strict: qc.StrictPriority, wake: c.wake[name], done: make(chan struct{}, MaxQueueWorkers)}
		c.producers.Add(1)
		go func() {
			defer c.producers.Done()
			p.run(fetchCtx, workCtx)
		}()
	}
	c.startListener(ctx, fetchCtx)
	c.maint.Add(1)
	go func() { defer c.maint.Done(); c.processLoop(maintCtx, proc) }()
	if len(c.cfg.Queues) > 0 {
		c.maint.Add(2)
		go func() { defer c.maint.Done(); c.heartbeatLoop(maintCtx) }()
		go func() { defer c.maint.Done(); c.settingsLoop(maintCtx) }()
	}
	now := time.Now()
	for i := range c.periodic {
		e := &c.periodic[i]
		if err := c.catchUp(ctx, e, now); err != nil {
			c.logger.Error("lockstep: periodic catch-up incomplete", "name", e.job.Name, "err", err)
		}
		c.maint.Add(1)
		go func() { defer c.maint.Done(); c.periodicLoop(maintCtx, e, now) }()
	}
	if c.history != nil {
		c.maint.Add(1)
		go func() { defer c.maint.Done(); c.historyLoop(maintCtx) }()
	}
	if !c.cfg.DisableRetention {
		c.maint.Add(1)
		go func() { defer c.maint.Done(); c.retentionLoop(maintCtx) }()
	}
	if !c.cfg.DisableReaper {
		c.maint.Add(1)
		go func() { defer c.maint.Done(); c.reapLoop(maintCtx) }()
	}
	c.logger.Info("lockstep: client started", "dialect", c.drv.Dialect(), "queues", len(c.cfg.Queues))
	return nil
}

func (c *Client) checkSchema(ctx context.Context) error {
	m, err := migrate.New(c.drv)
	if err != nil {
		return fmt.Errorf("lockstep: start: %w", err)
	}
	// A process started while its database restarts waits for it (up to
	// connRetryWindow) rather than exit: reading the version is harmless
	// to repeat.
	var v int
	err = c.retryDBIdempotent(ctx, "read schema version", func(ctx context.Context) error {
		var err error
		v, err = m.Version(ctx)
		return err
	})
	if errors.Is(err, migrate.ErrUnknownMigration) {
		return fmt.Errorf("lockstep: start: %w: %w: run a newer lockstep, or migrate down with the binary that migrated it up", ErrSchemaVersion, err)
	}
	if err != nil {
		return fmt.Errorf("lockstep: start: read schema version: %w", err)
	}
	switch latest := m.Latest(); {
	case v < latest:
		return fmt.Errorf("lockstep: start: %w: the schema is at migration %d, this binary needs %d: run `lockstep migrate up`", ErrSchemaVersion, v, latest)
	case v > latest:
		return fmt.Errorf("lockstep: start: %w: the schema is at migration %d, newer than this binary knows (%d): run a newer lockstep, "+
			"or migrate down with the binary that migrated it up", ErrSchemaVersion, v, latest)
	}
	return nil
}

// Stop stops claiming, waits for running jobs to finish and write their
// results, then stops the heartbeat and reaper. If ctx ends first, running
// jobs' contexts are cancelled (cause ErrClientStopping), Stop waits for
// them to return, and it returns ctx's error.
func (c *Client) Stop(ctx context.Context) error {
	return c.stop(ctx, false)
}

// StopAndCancel is Stop that cancels running jobs' contexts at once.
func (c *Client) StopAndCancel(ctx context.Context) error {
	return c.stop(ctx, true)
}

func (c *Client) stop(ctx context.Context, cancelJobs bool) error {
	c.mu.Lock()
	if !c.started || c.stopping {
		c.mu.Unlock()
		return nil
	}
	c.stopping = true
	c.mu.Unlock()
	c.fetchCancel()
	if cancelJobs {
		c.workCancel(ErrClientStopping)
	}
	c.producers.Wait()
	done := make(chan struct{})
	go func() { c.jobs.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("lockstep: stop: %w", ctx.Err())
		c.workCancel(ErrClientStopping)
		<-done
	}
	// Every job has returned and handed its result over: write the last
	// batch.
	if c.completer != nil {
		c.completer.stop()
		c.completer = nil
	}
	c.maintCancel()
	c.maint.Wait()
	// Every result is written: the last counts go to the history.
	fctx, fcancel := context.WithTimeout(context.Background(), c.cfg.FinishTimeout)
	if ferr := c.FlushHistory(fctx); ferr != nil {
		c.logger.Warn("lockstep: history flush at stop failed; its counts are lost", "err", ferr)
	}
	fcancel()
	c.workCancel(ErrClientStopping)
	// A clean stop: every job has written its result; the process's row
	// goes.
	c.mu.Lock()
	proc := c.process
	c.mu.Unlock()
	if proc != nil {
		c.deregister(proc)
	}
	c.mu.Lock()
	c.started, c.stopping = false, false
	c.processID, c.process = "", nil
	c.mu.Unlock()
	c.logger.Info("lockstep: client stopped")
	return err
}

// wakeQueue tells this process's producer of queue that work arrived.
func (c *Client) wakeQueue(queue string) {
	c.mu.Lock()
	ch := c.wake[queue]
	c.mu.Unlock()
	if ch != nil {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (c *Client) track(job *JobRow, cancel context.CancelCauseFunc) {
	c.mu.Lock()
	c.running[job.ID] = &runningJob{attempt: job.Attempts, cancel: cancel}
	c.mu.Unlock()
}

// finishing marks a tracked job's worker as returned: its result is
// being written.
func (c *Client) finishing(id int64, attempt int) {
	c.mu.Lock()
	if r := c.running[id]; r != nil && r.attempt == attempt {
		r.finishingSince = time.Now()
	}
	c.mu.Unlock()
}

// untrack stops tracking a job's attempt once its result is written (or
// its write failed). A later attempt of the same job, claimed by this
// process after a reap, is tracked under the same id and stays.
func (c *Client) untrack(id int64, attempt int) {
	c.mu.Lock()
	if r := c.running[id]; r != nil && r.attempt == attempt {
		delete(c.running, id)
	}
	c.mu.Unlock()
}

// cancelLocal cancels the context of a job this process runs, if any.
func (c *Client) cancelLocal(ids ...int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if r := c.running[id]; r != nil {
			r.cancel(ErrJobLost)
		}
	}
}
