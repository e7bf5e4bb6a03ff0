// Package limits measures what lockstep's queue limits cost the claim: a
// burn-down of one queue's no-op jobs by several clients, without limits
// and under each kind of limit, back to back on fresh databases of the same
// server, and an unlimited queue's burn-down beside a busy queue limited to
// one job at a time.
package limits

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/bench/internal/servers"
	"github.com/lockstep-queue/lockstep/bench/internal/throughput"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/migrate"
)

// The scenarios, in the order one repetition runs them on each system.
const (
	// None: the queue has no limits; the baseline of the others.
	None = "none"
	// Global: the queue has a global Concurrency limit.
	Global = "global"
	// Keys: the jobs are spread over many keys, each at KeyConcurrency.
	Keys = "keys"
	// Beside: the unlimited queue's burn-down while a second queue, with
	// a Concurrency of 1, is busy on the same clients.
	Beside = "beside-serial"
	// Rate: the queue has a queue-wide rate limit, which binds.
	Rate = "rate"
)

// AllScenarios is every scenario, in run order.
var AllScenarios = []string{None, Global, Keys, Beside, Rate}

// Systems are the lockstep systems this benchmark knows; SQLite is for
// the tests, not the default.
var Systems = []string{throughput.LockstepPostgres, throughput.LockstepMariaDB, throughput.LockstepMySQL, throughput.LockstepSQLite}

// The queues.
const (
	benchQueue  = "bench"
	serialQueue = "serial"
)

// Config is one limits benchmark.
type Config struct {
	Systems   []string
	Scenarios []string
	Reps      int
	// Jobs is the burn-down of every scenario but Rate; RateJobs is
	// Rate's (it binds, so its run lasts RateJobs/Rate periods).
	Jobs, RateJobs int
	// Clients each serve the queue with Workers workers, on a driver (a
	// connection pool) of their own, as processes would.
	Clients, Workers int
	// Concurrency is Global's limit; Keys, KeyConcurrency Keys'.
	Concurrency          int
	Keys, KeyConcurrency int
	// KeysPremade gives every key its row in lockstep_limit_keys before
	// Keys' run, as in a queue whose keys were all seen before: a claim
	// that meets a key without a row leaves its jobs and creates the row
	// after its commit, and this separates that first sight from the rest.
	KeysPremade bool
	// Rate per RatePeriod is Rate's queue-wide limit.
	Rate       int
	RatePeriod time.Duration
	// SerialJobs are queued on the serial queue (Concurrency 1) before
	// Beside's run, SerialWorkers serve it in each client, and each of its
	// jobs takes SerialWork.
	SerialJobs, SerialWorkers int
	SerialWork                time.Duration
	// BatchSize is the number of jobs per InsertMany.
	BatchSize int
	// SampleEvery is how often the RUNNING jobs are counted during a run.
	SampleEvery time.Duration
	// Timeout bounds one run's work phase.
	Timeout time.Duration

	Logger, ClientLogger *slog.Logger
}

// DefaultConfig is the full-size benchmark.
func DefaultConfig() Config {
	return Config{
		Systems:        []string{throughput.LockstepPostgres, throughput.LockstepMariaDB, throughput.LockstepMySQL},
		Scenarios:      AllScenarios,
		Reps:           3,
		Jobs:           50_000,
		RateJobs:       10_000,
		Clients:        3,
		Workers:        16,
		Concurrency:    50,
		Keys:           10_000,
		KeyConcurrency: 1,
		Rate:           1_000,
		RatePeriod:     time.Second,
		SerialJobs:     10_000,
		SerialWorkers:  4,
		BatchSize:      5_000,
		SampleEvery:    100 * time.Millisecond,
		Timeout:        10 * time.Minute,
	}
}

func (c *Config) validate() error {
	var errs []error
	for _, s := range c.Systems {
		if !slices.Contains(Systems, s) {
			errs = append(errs, fmt.Errorf("unknown system %q (want some of %v)", s, Systems))
		}
	}
	for _, s := range c.Scenarios {
		if !slices.Contains(AllScenarios, s) {
			errs = append(errs, fmt.Errorf("unknown scenario %q (want some of %v)", s, AllScenarios))
		}
	}
	if len(c.Systems) == 0 || len(c.Scenarios) == 0 {
		errs = append(errs, errors.New("no system or no scenario"))
	}
	positive := map[string]int{
		"reps": c.Reps, "jobs": c.Jobs, "rate jobs": c.RateJobs, "clients": c.Clients, "workers": c.Workers,
		"concurrency": c.Concurrency, "keys": c.Keys, "key concurrency": c.KeyConcurrency, "rate": c.Rate,
		"serial jobs": c.SerialJobs, "serial workers": c.SerialWorkers, "batch": c.BatchSize,
	}
	for name, v := range positive {
		if v < 1 {
			errs = append(errs, fmt.Errorf("%s must be at least 1, got %d", name, v))
		}
	}
	if c.RatePeriod < lockstep.MinRatePeriod {
		errs = append(errs, fmt.Errorf("rate period must be at least %s", lockstep.MinRatePeriod))
	}
	if c.SampleEvery <= 0 {
		errs = append(errs, errors.New("sample interval must be positive"))
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Minute
	}
	return errors.Join(errs...)
}

func (c *Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (c *Config) clientLogger() *slog.Logger {
	if c.ClientLogger != nil {
		return c.ClientLogger
	}
	return slog.New(slog.DiscardHandler)
}

// Result is one scenario's run on one system.
type Result struct {
	System   string `json:"system"`
	Scenario string `json:"scenario"`
	Rep      int    `json:"rep"`
	// Jobs of the measured queue, over Seconds: from the first client's
	// Start to the last completion reported committed.
	Jobs       int64   `json:"jobs"`
	Seconds    float64 `json:"seconds"`
	JobsPerSec float64 `json:"jobs_per_sec"`
	// Claims is how many claim statements the measured queue's producers
	// ran (EventClaimed, empty ones included).
	Claims int64 `json:"claims"`
	// Blocked and Deferred are what the claims reported (EventLimited).
	Blocked  int64 `json:"blocked"`
	Deferred int64 `json:"deferred"`
	// PeakRunning is the most RUNNING jobs of the measured queue in one
	// sample, PeakKeyRunning the most of one key; Samples how many.
	PeakRunning    int `json:"peak_running"`
	PeakKeyRunning int `json:"peak_key_running"`
	Samples        int `json:"samples"`
	// StatementsPerJob is every statement the server ran over the work
	// phase, per job of the measured queue (the samples left out).
	StatementsPerJob float64 `json:"statements_per_job,omitempty"`
	// DB is the server's statistics of the run (throughput's probe).
	DB *throughput.DBStats `json:"db_stats,omitempty"`
	// Load is the machine's 1-minute load average at the end of the run
	// (/proc/loadavg): everything else running on it, this benchmark and
	// its servers included.
	Load float64 `json:"load_1m"`

	// Rate: starts per second (see startRate) and the most starts in any
	// window of RatePeriod, by the database's started_at.
	StartsPerSec float64 `json:"starts_per_sec,omitempty"`
	MaxInWindow  int     `json:"max_starts_in_window,omitempty"`

	// Beside: the serial queue's completions while the measured queue
	// burned down, its most RUNNING in one sample, and its jobs still
	// PENDING at the end (0: it ran dry, and was not busy throughout).
	SerialDone        int64 `json:"serial_done,omitempty"`
	SerialPeakRunning int   `json:"serial_peak_running,omitempty"`
	SerialLeft        int64 `json:"serial_left"`
}

// Report is everything a limits benchmark measured.
type Report struct {
	Config struct {
		Systems        []string `json:"systems"`
		Scenarios      []string `json:"scenarios"`
		Reps           int      `json:"reps"`
		Jobs           int      `json:"jobs"`
		RateJobs       int      `json:"rate_jobs"`
		Clients        int      `json:"clients"`
		Workers        int      `json:"workers"`
		Concurrency    int      `json:"concurrency"`
		Keys           int      `json:"keys"`
		KeyConcurrency int      `json:"key_concurrency"`
		KeysPremade    bool     `json:"keys_premade"`
		Rate           int      `json:"rate"`
		RatePeriod     string   `json:"rate_period"`
		SerialJobs     int      `json:"serial_jobs"`
		SerialWorkers  int      `json:"serial_workers"`
		SerialWork     string   `json:"serial_work"`
		SampleEvery    string   `json:"sample_every"`
	} `json:"config"`
	Machine   throughput.Machine `json:"machine"`
	Runs      []Result           `json:"runs"`
	Summaries []Summary          `json:"summaries"`
	// Violations are samples or windows above a limit: the limit failed.
	Violations []string `json:"violations,omitempty"`
}

// Run runs the benchmark: each repetition runs every scenario of every
// system, a system's scenarios back to back, each on a fresh database.
func Run(ctx context.Context, set *servers.Set, cfg Config) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	rep := &Report{Machine: throughput.NewMachine()}
	rc := &rep.Config
	rc.Systems, rc.Scenarios, rc.Reps, rc.Jobs, rc.RateJobs = cfg.Systems, cfg.Scenarios, cfg.Reps, cfg.Jobs, cfg.RateJobs
	rc.Clients, rc.Workers, rc.Concurrency, rc.Keys, rc.KeyConcurrency = cfg.Clients, cfg.Workers, cfg.Concurrency, cfg.Keys, cfg.KeyConcurrency
	rc.KeysPremade = cfg.KeysPremade
	rc.Rate, rc.RatePeriod = cfg.Rate, cfg.RatePeriod.String()
	rc.SerialJobs, rc.SerialWorkers, rc.SerialWork, rc.SampleEvery = cfg.SerialJobs, cfg.SerialWorkers, cfg.SerialWork.String(), cfg.SampleEvery.String()
	log := cfg.logger()
	for r := 1; r <= cfg.Reps; r++ {
		for _, system := range cfg.Systems {
			for _, scenario := range cfg.Scenarios {
				log.Info("limits: run", "rep", r, "system", system, "scenario", scenario)
				res, err := runOne(ctx, set, &cfg, system, scenario)
				if err != nil {
					rep.summarize()
					return rep, fmt.Errorf("%s %s rep %d: %w", system, scenario, r, err)
				}
				res.Rep = r
				log.Info("limits: result", "rep", r, "system", system, "scenario", scenario,
					"jobs_per_sec", fmt.Sprintf("%.0f", res.JobsPerSec), "peak_running", res.PeakRunning)
				rep.Runs = append(rep.Runs, *res)
				rep.Violations = append(rep.Violations, violations(&cfg, res)...)
			}
		}
	}
	for _, s := range cfg.Systems {
		switch s {
		case throughput.LockstepPostgres:
			_, rep.Machine.Postgres = set.Versions(ctx)
		case throughput.LockstepMariaDB:
			rep.Machine.MariaDB, _ = set.Versions(ctx)
		case throughput.LockstepMySQL:
			rep.Machine.MySQL = set.OracleMySQLVersion(ctx)
		}
	}
	rep.summarize()
	return rep, nil
}

// violations lists what in a run exceeded a limit it ran under.
func violations(cfg *Config, r *Result) []string {
	var out []string
	at := fmt.Sprintf("%s %s rep %d", r.System, r.Scenario, r.Rep)
	if r.Scenario == Global && r.PeakRunning > cfg.Concurrency {
		out = append(out, fmt.Sprintf("%s: %d RUNNING in one sample, limit %d", at, r.PeakRunning, cfg.Concurrency))
	}
	if r.Scenario == Keys && r.PeakKeyRunning > cfg.KeyConcurrency {
		out = append(out, fmt.Sprintf("%s: %d RUNNING with one key in one sample, limit %d", at, r.PeakKeyRunning, cfg.KeyConcurrency))
	}
	if r.Scenario == Beside && r.SerialPeakRunning > 1 {
		out = append(out, fmt.Sprintf("%s: %d RUNNING on the serial queue in one sample, limit 1", at, r.SerialPeakRunning))
	}
	if r.Scenario == Rate && r.MaxInWindow > cfg.Rate {
		out = append(out, fmt.Sprintf("%s: %d starts in one window of %s, limit %d", at, r.MaxInWindow, cfg.RatePeriod, cfg.Rate))
	}
	return out
}

// benchArgs are the measured queue's no-op jobs.
type benchArgs struct {
	N int `json:"n"`
}

func (benchArgs) Kind() string { return "limits_bench" }

// serialArgs are the serial queue's jobs.
type serialArgs struct {
	N int `json:"n"`
}

func (serialArgs) Kind() string { return "limits_serial" }

// tally counts what the clients report.
type tally struct {
	done, serialDone          atomic.Int64
	claims, blocked, deferred atomic.Int64
	target                    int64
	at                        atomic.Int64 // unix nanos of the completion that reached target
	once                      sync.Once
	hit                       chan struct{}
}

func (t *tally) event(e lockstep.Event) {
	switch {
	case e.Kind == lockstep.EventJobFinished && e.Status == lockstep.StatusDone && !e.Discarded:
		if e.Queue == serialQueue {
			t.serialDone.Add(1)
			return
		}
		if n := t.done.Add(1); n >= t.target {
			t.once.Do(func() {
				t.at.Store(time.Now().UnixNano())
				close(t.hit)
			})
		}
	case e.Kind == lockstep.EventClaimed && e.Queue == benchQueue:
		t.claims.Add(1)
	case e.Kind == lockstep.EventLimited && e.Queue == benchQueue:
		t.blocked.Add(int64(e.Count))
		t.deferred.Add(int64(e.Deferred))
	}
}

// stallTimeout ends a run in which no completion was reported for this
// long instead of waiting for Timeout.
const stallTimeout = 30 * time.Second

// runOne runs one scenario on a fresh database and tears it down.
func runOne(ctx context.Context, set *servers.Set, cfg *Config, system, scenario string) (*Result, error) {
	dialect, dsn, cleanup, err := database(ctx, set, system)
	if err != nil {
		return nil, err
	}
	defer cleanup(cfg.logger())
	drvs := make([]driver.Driver, 0, cfg.Clients)
	defer func() {
		for _, d := range drvs {
			_ = d.Close()
		}
	}()
	for range cfg.Clients {
		d, err := open(ctx, dialect, dsn)
		if err != nil {
			return nil, err
		}
		drvs = append(drvs, d)
	}
	m, err := migrate.New(drvs[0])
	if err != nil {
		return nil, err
	}
	if _, err := m.Up(ctx); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	admin, err := lockstep.NewClient(drvs[0], lockstep.Config{Logger: cfg.clientLogger()})
	if err != nil {
		return nil, err
	}

	jobs := cfg.Jobs
	var limits lockstep.QueueLimits
	switch scenario {
	case Global:
		limits.Concurrency = cfg.Concurrency
	case Keys:
		limits.KeyConcurrency = cfg.KeyConcurrency
	case Rate:
		limits.Rate, limits.RatePeriod = cfg.Rate, cfg.RatePeriod
		jobs = cfg.RateJobs
	}
	if limits.Any() {
		if err := admin.SetQueueLimits(ctx, benchQueue, limits); err != nil {
			return nil, err
		}
	}
	began := time.Now()
	// Jobs go round the keys (job i has key i mod Keys), so that a claim's
	// candidates are of different keys and the limit rarely binds.
	if err := insert(ctx, admin, cfg.BatchSize, jobs, func(i int) lockstep.InsertManyParams {
		o := &lockstep.InsertOpts{Queue: benchQueue}
		if scenario == Keys {
			o.LimitKey = keyName(i % cfg.Keys)
		}
		return lockstep.InsertManyParams{Args: benchArgs{N: i}, Opts: o}
	}); err != nil {
		return nil, fmt.Errorf("insert: %w", err)
	}
	if scenario == Keys && cfg.KeysPremade {
		if err := premakeKeys(ctx, dbOf(drvs[0]), dialect, cfg.Keys); err != nil {
			return nil, fmt.Errorf("premake keys: %w", err)
		}
	}
	if scenario == Beside {
		if err := admin.SetQueueLimits(ctx, serialQueue, lockstep.QueueLimits{Concurrency: 1}); err != nil {
			return nil, err
		}
		if err := insert(ctx, admin, cfg.BatchSize, cfg.SerialJobs, func(i int) lockstep.InsertManyParams {
			return lockstep.InsertManyParams{Args: serialArgs{N: i}, Opts: &lockstep.InsertOpts{Queue: serialQueue}}
		}); err != nil {
			return nil, fmt.Errorf("insert serial: %w", err)
		}
	}
	cfg.logger().Debug("limits: inserted", "jobs", jobs, "took", time.Since(began).Round(time.Millisecond))

	t := &tally{target: int64(jobs), hit: make(chan struct{})}
	var clients []*lockstep.Client
	for _, d := range drvs {
		workers := lockstep.NewWorkers()
		lockstep.AddWorker(workers, lockstep.WorkFunc(func(context.Context, *lockstep.Job[benchArgs]) error { return nil }))
		queues := map[string]lockstep.QueueConfig{benchQueue: {MaxWorkers: cfg.Workers}}
		if scenario == Beside {
			work := cfg.SerialWork
			lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, _ *lockstep.Job[serialArgs]) error {
				if work > 0 {
					select {
					case <-time.After(work): // the job's own work
					case <-ctx.Done():
					}
				}
				return nil
			}))
			queues[serialQueue] = lockstep.QueueConfig{MaxWorkers: cfg.SerialWorkers}
		}
		c, err := lockstep.NewClient(d, lockstep.Config{
			Workers:         workers,
			Queues:          queues,
			Logger:          cfg.clientLogger(),
			PollInterval:    throughput.LockstepPollInterval,
			MinPollInterval: throughput.LockstepMinPollInterval,
			OnEvent:         t.event,
		})
		if err != nil {
			return nil, err
		}
		clients = append(clients, c)
	}

	probe := throughput.NewProbe(dialect, dbOf(drvs[0]))
	if probe != nil {
		if err := probe.Before(ctx); err != nil {
			return nil, fmt.Errorf("db stats: %w", err)
		}
	}
	runtime.GC()
	debug.FreeOSMemory()

	workCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	smp := startSampler(workCtx, dbOf(drvs[0]), cfg.SampleEvery)
	started := 0
	stopAll := func() error {
		var errs []error
		for _, c := range clients[:started] {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			errs = append(errs, c.Stop(sctx))
			cancel()
		}
		started = 0
		return errors.Join(errs...)
	}
	defer func() { _ = stopAll() }()
	start := time.Now()
	for _, c := range clients {
		if err := c.Start(workCtx); err != nil {
			return nil, fmt.Errorf("start: %w", err)
		}
		started++
	}
	if err := wait(ctx, workCtx, cfg, t, jobs); err != nil {
		return nil, err
	}
	end := time.Unix(0, t.at.Load())
	serialDone := t.serialDone.Load()
	samples := smp.stop()
	if err := stopAll(); err != nil {
		return nil, fmt.Errorf("stop: %w", err)
	}
	if samples.err != nil {
		return nil, fmt.Errorf("counting RUNNING jobs: %w", samples.err)
	}

	res := &Result{System: system, Scenario: scenario, Jobs: int64(jobs), Seconds: end.Sub(start).Seconds(),
		Claims: t.claims.Load(), Blocked: t.blocked.Load(), Deferred: t.deferred.Load(),
		PeakRunning: samples.peak[benchQueue], PeakKeyRunning: samples.peakKey, Samples: samples.n}
	res.JobsPerSec = float64(res.Jobs) / res.Seconds
	res.Load = loadAvg()
	if probe != nil {
		s, err := probe.After(ctx, res.Jobs)
		if err != nil {
			return nil, fmt.Errorf("db stats: %w", err)
		}
		res.DB, res.StatementsPerJob = s, s.StatementsPerJob
		if dialect == "mysql" {
			// Questions counts the samples too.
			res.StatementsPerJob -= float64(samples.n) / float64(res.Jobs)
		}
	}
	if err := verify(ctx, dbOf(drvs[0]), jobs); err != nil {
		return nil, err
	}
	if scenario == Beside {
		res.SerialDone, res.SerialPeakRunning = serialDone, samples.peak[serialQueue]
		if err := dbOf(drvs[0]).QueryRowContext(ctx,
			"SELECT COUNT(*) FROM lockstep_jobs WHERE queue = '"+serialQueue+"' AND status = 'PENDING'").Scan(&res.SerialLeft); err != nil {
			return nil, err
		}
	}
	if scenario == Rate {
		starts, err := startTimes(ctx, admin, jobs)
		if err != nil {
			return nil, err
		}
		res.MaxInWindow = maxInWindow(starts, cfg.RatePeriod)
		res.StartsPerSec = startRate(starts, cfg.RatePeriod)
	}
	return res, nil
}

// premakeKeys inserts the key rows a claim would create (the table's
// columns are the migration's; created_at has a default).
func premakeKeys(ctx context.Context, db *sql.DB, dialect string, keys int) error {
	const batch = 1000
	for start := 0; start < keys; start += batch {
		var b strings.Builder
		b.WriteString("INSERT INTO lockstep_limit_keys (queue, limit_key) VALUES ")
		args := make([]any, 0, 2*batch)
		for i := start; i < min(start+batch, keys); i++ {
			if i > start {
				b.WriteString(", ")
			}
			if dialect == "postgres" {
				fmt.Fprintf(&b, "($%d, $%d)", len(args)+1, len(args)+2)
			} else {
				b.WriteString("(?, ?)")
			}
			args = append(args, benchQueue, keyName(i))
		}
		if _, err := db.ExecContext(ctx, b.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// keyName is the limit key of job i of Keys' run, modulo the keys.
func keyName(i int) string { return fmt.Sprintf("key-%05d", i) }

// wait waits for the measured queue's last completion, failing a run in
// which nothing completes for stallTimeout.
func wait(ctx, workCtx context.Context, cfg *Config, t *tally, jobs int) error {
	progress := time.NewTicker(2 * time.Second)
	defer progress.Stop()
	lastN, lastChange := int64(0), time.Now()
	for {
		select {
		case <-t.hit:
			return nil
		case <-workCtx.Done():
			return fmt.Errorf("%d of %d jobs completed before %w", t.done.Load(), jobs, context.Cause(workCtx))
		case <-progress.C:
			n := t.done.Load()
			cfg.logger().Debug("limits: progress", "done", n, "of", jobs)
			if n != lastN {
				lastN, lastChange = n, time.Now()
			} else if time.Since(lastChange) > stallTimeout {
				return fmt.Errorf("no completion reported for %v at %d of %d", stallTimeout, n, jobs)
			}
		}
	}
}

// verify checks that the database holds every job the events counted, and
// only those, as DONE.
func verify(ctx context.Context, db *sql.DB, jobs int) error {
	var done, other int64
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM lockstep_jobs WHERE queue = '"+benchQueue+"' AND status = 'DONE'").Scan(&done); err != nil {
		return err
	}
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM lockstep_jobs WHERE queue = '"+benchQueue+"' AND status <> 'DONE'").Scan(&other); err != nil {
		return err
	}
	if done != int64(jobs) || other != 0 {
		return fmt.Errorf("the clients reported %d completions; the database holds %d DONE and %d other jobs", jobs, done, other)
	}
	return nil
}

// insert adds n jobs made by mk, BatchSize per InsertMany.
func insert(ctx context.Context, c *lockstep.Client, batch, n int, mk func(i int) lockstep.InsertManyParams) error {
	params := make([]lockstep.InsertManyParams, 0, min(n, batch))
	for i := 0; i < n; {
		params = params[:0]
		for ; i < n && len(params) < batch; i++ {
			params = append(params, mk(i))
		}
		if _, err := c.InsertMany(ctx, params); err != nil {
			return err
		}
	}
	return nil
}

// startTimes reads the measured queue's jobs' starts (the database's
// started_at, the clock the rate limit counts by), in order.
func startTimes(ctx context.Context, c *lockstep.Client, jobs int) ([]time.Time, error) {
	out := make([]time.Time, 0, jobs)
	var after int64
	for {
		page, err := c.Jobs(ctx, lockstep.JobListParams{Status: lockstep.StatusDone, AfterID: after, Limit: 1000})
		if err != nil {
			return nil, err
		}
		if len(page) == 0 {
			break
		}
		for _, j := range page {
			if j.Queue == benchQueue {
				out = append(out, j.StartedAt)
			}
			after = max(after, j.ID)
		}
	}
	if len(out) != jobs {
		return nil, fmt.Errorf("read %d starts of %d jobs", len(out), jobs)
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out, nil
}

// database creates a fresh database for system and returns its dialect,
// its DSN (a file path for SQLite) and what removes it.
func database(ctx context.Context, set *servers.Set, system string) (dialect, dsn string, cleanup func(*slog.Logger), err error) {
	drop := func(log *slog.Logger) {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := set.Drop(dctx, dsn); err != nil {
			log.Warn("limits: dropping database", "err", err)
		}
	}
	switch system {
	case throughput.LockstepPostgres:
		dsn, err = set.Postgres(ctx)
		return "postgres", dsn, drop, err
	case throughput.LockstepMariaDB:
		dsn, err = set.MySQL(ctx)
		return "mysql", dsn, drop, err
	case throughput.LockstepMySQL:
		dsn, err = set.OracleMySQL(ctx)
		return "mysql", dsn, drop, err
	case throughput.LockstepSQLite:
		dir, err := os.MkdirTemp("", "lockstep-bench-limits-")
		if err != nil {
			return "", "", nil, err
		}
		return "sqlite", filepath.Join(dir, "bench.db"), func(*slog.Logger) { _ = os.RemoveAll(dir) }, nil
	}
	return "", "", nil, fmt.Errorf("unknown system %q", system)
}

// open opens one client's driver: a connection pool of its own.
func open(ctx context.Context, dialect, dsn string) (driver.Driver, error) {
	switch dialect {
	case "postgres":
		return postgres.Open(ctx, dsn)
	case "mysql":
		return mysql.Open(ctx, dsn)
	default:
		return sqlite.Open(ctx, dsn)
	}
}

// loadAvg is the 1-minute load average, 0 where there is none.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	_, _ = fmt.Sscan(string(b), &l)
	return l
}

// dbOf is a driver's database/sql pool.
func dbOf(d driver.Driver) *sql.DB {
	return d.(interface{ DB() *sql.DB }).DB()
}
