// Package throughput measures how many no-op jobs per second lockstep (on
// PostgreSQL, MariaDB and SQLite) and River (on the same PostgreSQL server)
// complete, counting a job only once the system reports its completion
// committed, and checking the count against the database afterwards.
package throughput

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstep-queue/lockstep/bench/internal/floor"
	"github.com/lockstep-queue/lockstep/bench/internal/servers"
)

// The modes.
const (
	BurnDown   = "burn-down"
	Continuous = "continuous"
)

// Config is one throughput benchmark.
type Config struct {
	// Modes to run, BurnDown and/or Continuous.
	Modes []string
	// Systems in the order of one repetition (AllSystems by default).
	Systems []string
	// Reps is the number of repetitions; systems alternate within each.
	Reps int
	// Jobs is the number of jobs a burn-down pre-inserts and works.
	Jobs int
	// Duration is how long a continuous run is measured, after Warmup.
	Duration, Warmup time.Duration
	// Backlog is how many available jobs a continuous run keeps queued.
	Backlog int
	// Workers is each system's worker concurrency (one queue).
	Workers int
	// BatchSize is the number of jobs per batch insert.
	BatchSize int
	// PGPoolConns sets pool_max_conns of both systems' pgx pools; 0 keeps
	// pgx's default, max(4, GOMAXPROCS).
	PGPoolConns int
	// DBStats collects statements and log volume per job (PostgreSQL:
	// pg_stat_statements; MariaDB: SHOW GLOBAL STATUS).
	DBStats bool
	// Timeout bounds one run's work phase.
	Timeout time.Duration
	// Floor, when set, also measures the write floor (package floor) on
	// each server a lockstep system used, after the runs, and reports
	// lockstep's median as a share of it.
	Floor *floor.Options
	// Waiting, when above 0, puts that many WAITING jobs in the table of a
	// lockstep system before its run: a workflow whose root, on a queue
	// nobody works, never ends. They are on the benchmark's own queue, in
	// the claim index's next range over; the claim must not notice them.
	Waiting int
	// HoldSnapshot, when above 0, holds a REPEATABLE READ transaction
	// open on each PostgreSQL or MySQL-family system's database for that
	// long in the middle of its continuous run (see measureHold);
	// HoldSample is the sampling interval (default 5s).
	HoldSnapshot, HoldSample time.Duration
	// CompleteBatchWait is lockstep's Config.CompleteBatchWait; 0 keeps
	// the library's default.
	CompleteBatchWait time.Duration
	// Retained, when above 0, puts that many finished jobs in each
	// system's table before its run (see retainer): throughput beside a
	// large table of history.
	Retained int

	// Logger receives progress; ClientLogger the systems' own logs.
	Logger       *slog.Logger
	ClientLogger *slog.Logger
}

func (c *Config) clientLogger() *slog.Logger {
	if c.ClientLogger != nil {
		return c.ClientLogger
	}
	return slog.New(slog.DiscardHandler)
}

func (c *Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// DefaultConfig is the full-size benchmark.
func DefaultConfig() Config {
	return Config{
		Modes:     []string{BurnDown, Continuous},
		Systems:   AllSystems,
		Reps:      3,
		Jobs:      200_000,
		Duration:  30 * time.Second,
		Warmup:    3 * time.Second,
		Backlog:   20_000,
		Workers:   100,
		BatchSize: 5_000,
		DBStats:   true,
		Timeout:   10 * time.Minute,
	}
}

func (c *Config) validate() error {
	var errs []error
	if len(c.Modes) == 0 {
		errs = append(errs, errors.New("no mode"))
	}
	for _, m := range c.Modes {
		if m != BurnDown && m != Continuous {
			errs = append(errs, fmt.Errorf("unknown mode %q (want %s or %s)", m, BurnDown, Continuous))
		}
	}
	if len(c.Systems) == 0 {
		errs = append(errs, errors.New("no system"))
	}
	if c.Reps < 1 {
		errs = append(errs, errors.New("reps must be at least 1"))
	}
	if c.Jobs < 1 {
		errs = append(errs, errors.New("jobs must be at least 1"))
	}
	if c.Workers < 1 || c.Workers > 10000 {
		errs = append(errs, errors.New("workers must be between 1 and 10000"))
	}
	if c.BatchSize < 1 {
		errs = append(errs, errors.New("batch size must be at least 1"))
	}
	if c.Duration <= 0 || c.Warmup < 0 {
		errs = append(errs, errors.New("duration must be positive and warmup not negative"))
	}
	if c.Backlog < 1 {
		errs = append(errs, errors.New("backlog must be at least 1"))
	}
	if c.HoldSnapshot < 0 || c.HoldSample < 0 {
		errs = append(errs, errors.New("hold-snapshot and hold-sample must not be negative"))
	}
	if c.HoldSnapshot > 0 {
		if !slices.Contains(c.Modes, Continuous) {
			errs = append(errs, errors.New("hold-snapshot is for the continuous mode"))
		}
		if slices.Contains(c.Systems, LockstepSQLite) {
			errs = append(errs, errors.New("hold-snapshot needs a server: SQLite has no snapshot another process holds open (leave lockstep-sqlite out)"))
		}
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Minute
	}
	return errors.Join(errs...)
}

// Result is one run of one system.
type Result struct {
	Mode   string `json:"mode"`
	System string `json:"system"`
	Rep    int    `json:"rep"`
	// Jobs counted in the measured interval, over Seconds.
	Jobs       int64   `json:"jobs"`
	Seconds    float64 `json:"seconds"`
	JobsPerSec float64 `json:"jobs_per_sec"`
	// DoneInDB is the database's count of completed jobs after the run
	// stopped, less Retained: at least Jobs, or the run failed.
	DoneInDB int64 `json:"done_in_db"`
	// Retained is how many finished jobs were in the table before the
	// run (Config.Retained).
	Retained int64 `json:"retained,omitempty"`
	// PeakRSSMiB is the largest resident set of this whole process seen
	// during the work phase (sampled every 100ms).
	PeakRSSMiB float64  `json:"peak_rss_mib"`
	DB         *DBStats `json:"db_stats,omitempty"`
	// Hold is the held-snapshot run, when Config.HoldSnapshot is set.
	Hold *HoldResult `json:"hold,omitempty"`
}

// Summary is one system's runs in one mode.
type Summary struct {
	Mode   string  `json:"mode"`
	System string  `json:"system"`
	Median float64 `json:"median_jobs_per_sec"`
	Min    float64 `json:"min_jobs_per_sec"`
	Max    float64 `json:"max_jobs_per_sec"`
	Runs   int     `json:"runs"`
}

// Ratio is lockstep's jobs/s over River's in the same repetition.
type Ratio struct {
	Mode  string  `json:"mode"`
	Rep   int     `json:"rep"`
	Ratio float64 `json:"lockstep_over_river"`
}

// Report is everything a throughput benchmark measured.
type Report struct {
	Config struct {
		Modes       []string `json:"modes"`
		Systems     []string `json:"systems"`
		Reps        int      `json:"reps"`
		Jobs        int      `json:"jobs"`
		Duration    string   `json:"duration"`
		Warmup      string   `json:"warmup"`
		Backlog     int      `json:"backlog"`
		Workers     int      `json:"workers"`
		BatchSize   int      `json:"batch_size"`
		PGPoolConns int      `json:"pg_pool_conns"`
		// HoldSnapshot is "" without a held snapshot.
		HoldSnapshot string `json:"hold_snapshot,omitempty"`
		// CompleteBatchWait is lockstep's, "" for the library's default.
		CompleteBatchWait string `json:"complete_batch_wait,omitempty"`
	} `json:"config"`
	Machine   Machine   `json:"machine"`
	Runs      []Result  `json:"runs"`
	Summaries []Summary `json:"summaries"`
	Ratios    []Ratio   `json:"ratios"`
	Floors    []Floor   `json:"floors,omitempty"`
}

// Floor is the write floor of one database and lockstep's share of it.
type Floor struct {
	System string       `json:"system"`
	Floor  floor.Result `json:"floor"`
	// Share is lockstep's median jobs/s in each mode over the floor's best.
	Share map[string]float64 `json:"share"`
}

// Machine describes where the benchmark ran.
type Machine struct {
	CPUs      int     `json:"cpus"`
	MemoryGiB float64 `json:"memory_gib"`
	GoArch    string  `json:"goarch"`
	Go        string  `json:"go"`
	MariaDB   string  `json:"mariadb,omitempty"`
	MySQL     string  `json:"mysql,omitempty"` // Oracle MySQL
	Postgres  string  `json:"postgres,omitempty"`
}

// NewMachine describes this machine; the servers' versions are for the
// caller to fill in.
func NewMachine() Machine {
	return Machine{CPUs: runtime.NumCPU(), MemoryGiB: memoryGiB(), GoArch: runtime.GOARCH, Go: runtime.Version()}
}

// Run runs the benchmark: for each mode, Reps repetitions of every system in
// order, each on a fresh database.
func Run(ctx context.Context, set *servers.Set, cfg Config) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	rep := &Report{}
	rc := &rep.Config
	rc.Modes, rc.Systems, rc.Reps, rc.Jobs = cfg.Modes, cfg.Systems, cfg.Reps, cfg.Jobs
	rc.Duration, rc.Warmup, rc.Backlog = cfg.Duration.String(), cfg.Warmup.String(), cfg.Backlog
	rc.Workers, rc.BatchSize, rc.PGPoolConns = cfg.Workers, cfg.BatchSize, cfg.PGPoolConns
	if cfg.HoldSnapshot > 0 {
		rc.HoldSnapshot = cfg.HoldSnapshot.String()
	}
	if cfg.CompleteBatchWait > 0 {
		rc.CompleteBatchWait = cfg.CompleteBatchWait.String()
	}
	rep.Machine = NewMachine()
	log := cfg.logger()

	usesMySQL, usesOracle, usesPostgres := false, false, false
	for _, s := range cfg.Systems {
		usesMySQL = usesMySQL || s == LockstepMariaDB
		usesOracle = usesOracle || s == LockstepMySQL
		usesPostgres = usesPostgres || s == LockstepPostgres || s == RiverPostgres
	}
	for _, mode := range cfg.Modes {
		for r := 1; r <= cfg.Reps; r++ {
			for _, system := range cfg.Systems {
				log.Info("throughput: run", "mode", mode, "rep", r, "system", system)
				res, err := runOne(ctx, set, &cfg, mode, system)
				if err != nil {
					return rep, fmt.Errorf("%s %s rep %d: %w", mode, system, r, err)
				}
				res.Rep = r
				log.Info("throughput: result", "mode", mode, "rep", r, "system", system,
					"jobs", res.Jobs, "seconds", fmt.Sprintf("%.2f", res.Seconds),
					"jobs_per_sec", fmt.Sprintf("%.0f", res.JobsPerSec))
				rep.Runs = append(rep.Runs, *res)
			}
		}
	}
	my, pg := "", ""
	if usesMySQL || usesPostgres {
		my, pg = set.Versions(ctx)
	}
	if usesMySQL {
		rep.Machine.MariaDB = my
	}
	if usesPostgres {
		rep.Machine.Postgres = pg
	}
	if usesOracle {
		rep.Machine.MySQL = set.OracleMySQLVersion(ctx)
	}
	rep.summarize()
	if cfg.Floor != nil {
		if err := rep.measureFloors(ctx, set, &cfg); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// measureFloors measures the write floor of PostgreSQL, MariaDB and Oracle
// MySQL, each on a fresh database, for the lockstep systems that ran on them.
func (rep *Report) measureFloors(ctx context.Context, set *servers.Set, cfg *Config) error {
	for _, system := range []string{LockstepPostgres, LockstepMariaDB, LockstepMySQL} {
		if !slices.Contains(cfg.Systems, system) {
			continue
		}
		cfg.logger().Info("throughput: write floor", "system", system)
		o := *cfg.Floor
		o.Logf = func(format string, args ...any) { cfg.logger().Debug(fmt.Sprintf(format, args...)) }
		var (
			dsn string
			res *floor.Result
			err error
		)
		switch system {
		case LockstepPostgres:
			if dsn, err = set.Postgres(ctx); err == nil {
				res, err = floor.Postgres(ctx, dsn, o)
			}
		case LockstepMySQL:
			if dsn, err = set.OracleMySQL(ctx); err == nil {
				res, err = floor.MySQL(ctx, dsn, o)
			}
		default:
			if dsn, err = set.MySQL(ctx); err == nil {
				res, err = floor.MySQL(ctx, dsn, o)
			}
		}
		if dsn != "" {
			_ = set.Drop(context.WithoutCancel(ctx), dsn)
		}
		if err != nil {
			return fmt.Errorf("write floor for %s: %w", system, err)
		}
		f := Floor{System: system, Floor: *res, Share: map[string]float64{}}
		for _, s := range rep.Summaries {
			if s.System == system && res.Best.JobsPerSec > 0 {
				f.Share[s.Mode] = s.Median / res.Best.JobsPerSec
			}
		}
		rep.Floors = append(rep.Floors, f)
	}
	return nil
}

func (rep *Report) summarize() {
	for _, mode := range rep.Config.Modes {
		for _, system := range rep.Config.Systems {
			var rates []float64
			for _, r := range rep.Runs {
				if r.Mode == mode && r.System == system {
					rates = append(rates, r.JobsPerSec)
				}
			}
			if len(rates) == 0 {
				continue
			}
			sort.Float64s(rates)
			rep.Summaries = append(rep.Summaries, Summary{
				Mode: mode, System: system, Median: median(rates),
				Min: rates[0], Max: rates[len(rates)-1], Runs: len(rates),
			})
		}
		for r := 1; r <= rep.Config.Reps; r++ {
			var ls, rv float64
			for _, x := range rep.Runs {
				if x.Mode == mode && x.Rep == r {
					switch x.System {
					case LockstepPostgres:
						ls = x.JobsPerSec
					case RiverPostgres:
						rv = x.JobsPerSec
					}
				}
			}
			if ls > 0 && rv > 0 {
				rep.Ratios = append(rep.Ratios, Ratio{Mode: mode, Rep: r, Ratio: ls / rv})
			}
		}
	}
}

// median of sorted values.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// runOne creates a fresh database, sets the system up on it, runs one
// measurement and tears everything down.
func runOne(ctx context.Context, set *servers.Set, cfg *Config, mode, system string) (*Result, error) {
	var (
		inst    instance
		dialect string
		dsn     string
		err     error
	)
	switch system {
	case LockstepPostgres, RiverPostgres:
		dialect = "postgres"
		dsn, err = set.Postgres(ctx)
	case LockstepMariaDB:
		dialect = "mysql"
		dsn, err = set.MySQL(ctx)
	case LockstepMySQL:
		dialect = "mysql"
		dsn, err = set.OracleMySQL(ctx)
	case LockstepSQLite:
		dialect = "sqlite"
	default:
		return nil, fmt.Errorf("unknown system %q", system)
	}
	if err != nil {
		return nil, err
	}
	if dsn != "" {
		defer func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if err := set.Drop(dctx, dsn); err != nil {
				cfg.logger().Warn("throughput: dropping database", "err", err)
			}
		}()
	}
	switch system {
	case RiverPostgres:
		inst, err = openRiver(ctx, dsn, cfg)
	case LockstepSQLite:
		inst, err = newLockstepSQLite(ctx, cfg)
	default:
		inst, err = openLockstep(ctx, dialect, dsn, cfg)
	}
	if err != nil {
		return nil, err
	}
	defer inst.close()
	if cfg.Waiting > 0 {
		l, ok := inst.(*lockstepInstance)
		if !ok {
			return nil, fmt.Errorf("%s: --waiting is for lockstep's systems", system)
		}
		if err := l.insertWaiting(ctx, cfg.Waiting); err != nil {
			return nil, fmt.Errorf("insert %d waiting jobs: %w", cfg.Waiting, err)
		}
	}

	if err := retainFor(ctx, cfg, system, inst); err != nil {
		return nil, err
	}

	// Each run starts from the same process state, and on PostgreSQL
	// from a fresh checkpoint: a timed checkpoint starting inside one
	// system's run and not the other's (the first change to each page
	// after it writes the whole page to the WAL) would load one side of
	// a pair only.
	runtime.GC()
	debug.FreeOSMemory()
	if dialect == "postgres" {
		if _, err := inst.db().ExecContext(ctx, "CHECKPOINT"); err != nil {
			cfg.logger().Warn("throughput: CHECKPOINT before the run failed (it needs superuser or pg_checkpoint); runs may meet a timed checkpoint", "err", err)
		}
	}

	res := &Result{Mode: mode, System: system, Retained: int64(cfg.Retained)}
	var probe statsProbe
	if cfg.DBStats {
		probe = newStatsProbe(dialect, inst.db())
	}
	switch mode {
	case BurnDown:
		err = burnDown(ctx, cfg, inst, probe, res)
	case Continuous:
		var hold *holdTarget
		if cfg.HoldSnapshot > 0 {
			hold = &holdTarget{dialect: dialect, dsn: dsn, table: "lockstep_jobs", db: inst.db(), claimPattern: "WITH picked AS%"}
			if system == RiverPostgres {
				hold.table, hold.claimPattern = "river_job", "%name: JobGetAvailable%"
			}
			if l, ok := inst.(*lockstepInstance); ok {
				hold.clientClaims = l.claims.read
			}
		}
		err = continuous(ctx, cfg, inst, probe, hold, res)
	}
	return res, err
}

// counter counts completions and lets a waiter know when a target is
// reached.
type counter struct {
	n      atomic.Int64
	target int64
	at     atomic.Int64 // unix nanos of the completion that reached target
	once   sync.Once
	hit    chan struct{}
}

func newCounter(target int64) *counter {
	return &counter{target: target, hit: make(chan struct{})}
}

func (c *counter) done() {
	if n := c.n.Add(1); c.target > 0 && n >= c.target {
		c.once.Do(func() {
			c.at.Store(time.Now().UnixNano())
			close(c.hit)
		})
	}
}

// stallTimeout ends a burn-down in which no completion was reported for this
// long (lost events, or a stuck system) instead of waiting for Timeout.
const stallTimeout = 30 * time.Second

// burnDown inserts cfg.Jobs jobs, then starts the workers and times until
// the last completion is reported committed.
func burnDown(ctx context.Context, cfg *Config, inst instance, probe statsProbe, res *Result) error {
	log := cfg.logger()
	began := time.Now()
	if err := inst.insert(ctx, cfg.Jobs); err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	log.Debug("throughput: inserted", "jobs", cfg.Jobs, "took", time.Since(began).Round(time.Millisecond))
	if probe != nil {
		if err := probe.before(ctx); err != nil {
			return fmt.Errorf("db stats: %w", err)
		}
	}

	cnt := newCounter(int64(cfg.Jobs))
	workCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	rss := sampleRSS(workCtx)
	start := time.Now()
	if err := inst.start(workCtx, cnt.done); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = inst.stop(context.WithoutCancel(ctx))
		}
	}()
	progress := time.NewTicker(2 * time.Second)
	defer progress.Stop()
	lastN, lastChange := int64(0), time.Now()
wait:
	for {
		select {
		case <-cnt.hit:
			break wait
		case <-workCtx.Done():
			return fmt.Errorf("%d of %d jobs completed before %w", cnt.n.Load(), cfg.Jobs, context.Cause(workCtx))
		case <-progress.C:
			n := cnt.n.Load()
			log.Debug("throughput: progress", "done", n, "of", cfg.Jobs)
			if n != lastN {
				lastN, lastChange = n, time.Now()
			} else if time.Since(lastChange) > stallTimeout {
				inDB, err := inst.countDone(ctx)
				return fmt.Errorf("no completion reported for %v at %d of %d (the database holds %d completed jobs, %v)",
					stallTimeout, n, cfg.Jobs, inDB, err)
			}
		}
	}
	end := time.Unix(0, cnt.at.Load())
	res.PeakRSSMiB = rss()
	stopped = true
	if err := inst.stop(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	res.Jobs = int64(cfg.Jobs)
	res.Seconds = end.Sub(start).Seconds()
	res.JobsPerSec = float64(res.Jobs) / res.Seconds
	return verify(ctx, inst, probe, res, res.Jobs)
}

// continuous keeps cfg.Backlog jobs available while workers run, and counts
// completions reported committed during cfg.Duration after cfg.Warmup.
//
// With a hold target, the measured interval is a held-snapshot run
// (measureHold): Duration before the hold, HoldSnapshot with it, Duration
// after; the Result's jobs are those of the phase before.
func continuous(ctx context.Context, cfg *Config, inst instance, probe statsProbe, hold *holdTarget, res *Result) error {
	log := cfg.logger()
	if err := inst.insert(ctx, cfg.Backlog); err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	inserted := atomic.Int64{}
	inserted.Store(int64(cfg.Backlog))
	cnt := newCounter(0)

	workCtx, cancel := context.WithTimeout(ctx, cfg.Warmup+2*cfg.Duration+cfg.HoldSnapshot+cfg.Timeout)
	defer cancel()
	if err := inst.start(workCtx, cnt.done); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = inst.stop(context.WithoutCancel(ctx))
		}
	}()

	// The top-up runs in its own goroutine, as an application's producers
	// would; it competes with the workers for the database, equally for
	// every system.
	feedCtx, stopFeed := context.WithCancel(workCtx)
	feedErr := make(chan error, 1)
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-feedCtx.Done():
				feedErr <- nil
				return
			case <-tick.C:
			}
			for feedCtx.Err() == nil {
				avail := inserted.Load() - cnt.n.Load()
				if avail >= int64(cfg.Backlog) {
					break
				}
				k := int(min(int64(cfg.BatchSize), int64(cfg.Backlog)-avail))
				if err := inst.insert(feedCtx, k); err != nil {
					if feedCtx.Err() != nil {
						break
					}
					feedErr <- err
					return
				}
				inserted.Add(int64(k))
			}
		}
	}()

	sleep := func(d time.Duration) error {
		select {
		case <-time.After(d):
			return nil
		case <-workCtx.Done():
			return context.Cause(workCtx)
		case err := <-feedErr:
			if err == nil {
				err = errors.New("feeder stopped")
			}
			return fmt.Errorf("insert: %w", err)
		}
	}
	if err := sleep(cfg.Warmup); err != nil {
		stopFeed()
		return err
	}
	if probe != nil {
		if err := probe.before(ctx); err != nil {
			stopFeed()
			return fmt.Errorf("db stats: %w", err)
		}
	}
	rss := sampleRSS(workCtx)
	n0, t0 := cnt.n.Load(), time.Now()
	var n1 int64
	var t1 time.Time
	if hold != nil {
		h, err := measureHold(workCtx, cfg, *hold, cnt.n.Load, sleep)
		if err != nil {
			stopFeed()
			return err
		}
		res.Hold = h
		n1 = n0 + h.BeforeJobs
		t1 = t0.Add(time.Duration(h.BeforeSeconds * float64(time.Second)))
	} else {
		if err := sleep(cfg.Duration); err != nil {
			stopFeed()
			return err
		}
		n1, t1 = cnt.n.Load(), time.Now()
	}
	res.PeakRSSMiB = rss()
	stopFeed()
	if err := <-feedErr; err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	log.Debug("throughput: continuous", "inserted", inserted.Load(), "done", cnt.n.Load())
	stopped = true
	if err := inst.stop(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	res.Jobs = n1 - n0
	res.Seconds = t1.Sub(t0).Seconds()
	res.JobsPerSec = float64(res.Jobs) / res.Seconds
	// The database must hold at least every completion counted by the end
	// of the measured interval.
	return verify(ctx, inst, probe, res, n1)
}

// verify checks the reported completions against the database and collects
// the statistics.
func verify(ctx context.Context, inst instance, probe statsProbe, res *Result, want int64) error {
	if probe != nil {
		s, err := probe.after(ctx, res.Jobs)
		if err != nil {
			return fmt.Errorf("db stats: %w", err)
		}
		res.DB = s
	}
	got, err := inst.countDone(ctx)
	if err != nil {
		return fmt.Errorf("count completed jobs: %w", err)
	}
	got -= res.Retained
	res.DoneInDB = got
	if got < want {
		return fmt.Errorf("the system reported %d completions but the database holds %d completed jobs", want, got)
	}
	return nil
}
