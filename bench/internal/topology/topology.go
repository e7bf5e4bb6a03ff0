// Package topology measures lockstep's throughput on the deployments
// docs/scaling.md compares: one MariaDB server against a three-node Galera
// cluster written through one node or through all three, and one
// PostgreSQL server against a primary with a synchronous or an
// asynchronous streaming standby. Every run is a burn-down of no-op jobs
// inserted before the clients start, by several clients (each its own
// pool, as processes would), timed from the first Start to the last DONE.
package topology

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/bench/internal/servers"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/migrate"
)

// The topologies.
const (
	MariaDB       = "mariadb"        // one MariaDB server
	Galera1       = "galera-1"       // three Galera nodes, every client through the first
	Galera3       = "galera-3"       // three Galera nodes, client i through node i
	Postgres      = "postgres"       // one PostgreSQL server
	PostgresSync  = "postgres-sync"  // a primary and a synchronous standby
	PostgresAsync = "postgres-async" // a primary and an asynchronous standby
)

// All is every topology, in run order.
var All = []string{MariaDB, Galera1, Galera3, Postgres, PostgresSync, PostgresAsync}

// Config configures a run; DefaultConfig fills it.
type Config struct {
	Topologies []string
	Reps       int
	Jobs       int
	Clients    int
	Workers    int // each client's workers
	Logger     *slog.Logger
	// ClientLogger receives the clients' own logs.
	ClientLogger *slog.Logger
}

// DefaultConfig is 3 repetitions of 20,000 jobs, 3 clients × 16 workers.
func DefaultConfig() Config {
	return Config{Topologies: All, Reps: 3, Jobs: 20_000, Clients: 3, Workers: 16}
}

func (c Config) validate() error {
	var errs []error
	for _, t := range c.Topologies {
		if !slices.Contains(All, t) {
			errs = append(errs, fmt.Errorf("unknown topology %q (want %s)", t, strings.Join(All, ", ")))
		}
	}
	if len(c.Topologies) == 0 {
		errs = append(errs, errors.New("no topology"))
	}
	if c.Reps < 1 || c.Jobs < 1 || c.Clients < 1 || c.Workers < 1 {
		errs = append(errs, errors.New("--reps, --jobs, --clients and --workers must be positive"))
	}
	if c.Clients < testdb.GaleraNodes && slices.Contains(c.Topologies, Galera3) {
		errs = append(errs, fmt.Errorf("galera-3 needs at least %d clients, one per node", testdb.GaleraNodes))
	}
	return errors.Join(errs...)
}

// Result is one burn-down.
type Result struct {
	Topology string        `json:"topology"`
	Rep      int           `json:"rep"`
	Jobs     int           `json:"jobs"`
	Took     time.Duration `json:"took_ns"`
	JobsPerS float64       `json:"jobs_per_second"`
	// Retries are the units of work the clients ran again after a
	// deadlock or, on Galera, a certification conflict (error 1213).
	Retries int64 `json:"retries"`
}

// Report is every run, and the machine's servers.
type Report struct {
	Config Config   `json:"-"`
	Runs   []Result `json:"runs"`
}

// topo holds a topology's servers across repetitions.
type topo struct {
	galera *testdb.Cluster
	pair   *testdb.PostgresPair
}

func (t *topo) close() {
	if t.galera != nil {
		_ = t.galera.Close()
	}
	if t.pair != nil {
		_ = t.pair.Close()
	}
}

// Run runs every topology's repetitions; set gives the single servers.
func Run(ctx context.Context, set *servers.Set, cfg Config) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ClientLogger == nil {
		cfg.ClientLogger = slog.New(slog.DiscardHandler)
	}
	rep := &Report{Config: cfg}
	for _, name := range cfg.Topologies {
		t := &topo{}
		for r := 1; r <= cfg.Reps; r++ {
			dsns, err := t.database(ctx, set, name, cfg.Clients)
			if err != nil {
				t.close()
				return rep, fmt.Errorf("%s: %w", name, err)
			}
			cfg.Logger.Info("topology: run", "topology", name, "rep", r)
			run, err := burnDown(ctx, cfg, name, dsns)
			if err != nil {
				t.close()
				return rep, fmt.Errorf("%s rep %d: %w", name, r, err)
			}
			run.Rep = r
			cfg.Logger.Info("topology: result", "topology", name, "rep", r, "jobs_per_second", int(run.JobsPerS), "retries", run.Retries)
			rep.Runs = append(rep.Runs, run)
		}
		t.close()
	}
	return rep, nil
}

// database makes a fresh database for one run and returns each client's DSN.
func (t *topo) database(ctx context.Context, set *servers.Set, name string, clients int) ([]string, error) {
	every := func(dsn string) []string {
		out := make([]string, clients)
		for i := range out {
			out[i] = dsn
		}
		return out
	}
	switch name {
	case MariaDB:
		dsn, err := set.MySQL(ctx)
		return every(dsn), err
	case Postgres:
		dsn, err := set.Postgres(ctx)
		return every(dsn), err
	case Galera1, Galera3:
		if t.galera == nil {
			c, err := testdb.StartGaleraCluster(ctx, testdb.ServerOptions{Durable: true})
			if err != nil {
				return nil, err
			}
			t.galera = c
		}
		nodes, err := t.galera.NewDatabase(ctx)
		if err != nil {
			return nil, err
		}
		if name == Galera1 {
			// The deployment docs/scaling.md advises: one DSN naming every
			// node, so all write through the first.
			u, err := testdb.MultiHostURL(nodes)
			return every(u), err
		}
		out := make([]string, clients)
		for i := range out {
			out[i] = nodes[i%len(nodes)]
		}
		return out, nil
	case PostgresSync, PostgresAsync:
		if t.pair == nil {
			p, err := testdb.StartPostgresPair(ctx, testdb.ServerOptions{Durable: true}, name == PostgresSync)
			if err != nil {
				return nil, err
			}
			t.pair = p
		}
		primary, _, err := t.pair.NewDatabase(ctx)
		if err != nil {
			return nil, err
		}
		u, err := t.pair.MultiHostURL(primary)
		return every(u), err
	}
	return nil, fmt.Errorf("unknown topology %q", name)
}

func open(ctx context.Context, name, dsn string) (driver.Driver, error) {
	if strings.HasPrefix(name, "postgres") {
		return postgres.Open(ctx, dsn)
	}
	return mysql.Open(ctx, dsn)
}

type noopArgs struct {
	Num int `json:"num"`
}

func (noopArgs) Kind() string { return "benchmark" }

// burnDown inserts the jobs, starts the clients and waits for every DONE.
func burnDown(ctx context.Context, cfg Config, name string, dsns []string) (Result, error) {
	run := Result{Topology: name, Jobs: cfg.Jobs}
	var drvs []driver.Driver
	defer func() {
		for _, d := range drvs {
			_ = d.Close()
		}
	}()
	for _, dsn := range dsns {
		d, err := open(ctx, name, dsn)
		if err != nil {
			return run, err
		}
		drvs = append(drvs, d)
	}
	m, err := migrate.New(drvs[0])
	if err != nil {
		return run, err
	}
	if _, err := m.Up(ctx); err != nil {
		return run, fmt.Errorf("migrate: %w", err)
	}
	var done, retries atomic.Int64
	all := make(chan struct{})
	var once sync.Once
	var clients []*lockstep.Client
	for _, d := range drvs {
		ws := lockstep.NewWorkers()
		lockstep.AddWorker(ws, lockstep.WorkFunc(func(context.Context, *lockstep.Job[noopArgs]) error { return nil }))
		c, err := lockstep.NewClient(d, lockstep.Config{
			Workers: ws, Logger: cfg.ClientLogger,
			Queues:       map[string]lockstep.QueueConfig{lockstep.DefaultQueue: {MaxWorkers: cfg.Workers}},
			PollInterval: 20 * time.Millisecond, MinPollInterval: 2 * time.Millisecond,
			OnEvent: func(e lockstep.Event) {
				switch {
				case e.Kind == lockstep.EventJobFinished && e.Status == lockstep.StatusDone && !e.Discarded:
					if done.Add(1) == int64(cfg.Jobs) {
						once.Do(func() { close(all) })
					}
				case e.Kind == lockstep.EventDBRetry:
					retries.Add(1)
				}
			},
		})
		if err != nil {
			return run, err
		}
		clients = append(clients, c)
	}
	const batch = 1000
	for n := 0; n < cfg.Jobs; n += batch {
		params := make([]lockstep.InsertManyParams, 0, batch)
		for i := n; i < min(n+batch, cfg.Jobs); i++ {
			params = append(params, lockstep.InsertManyParams{Args: noopArgs{Num: i}})
		}
		if _, err := clients[0].InsertMany(ctx, params); err != nil {
			return run, fmt.Errorf("insert: %w", err)
		}
	}
	began := time.Now()
	for _, c := range clients {
		if err := c.Start(ctx); err != nil {
			return run, err
		}
	}
	defer func() {
		for _, c := range clients {
			_ = c.Stop(context.Background())
		}
	}()
	timeout := time.NewTimer(30 * time.Minute)
	defer timeout.Stop()
	select {
	case <-all:
	case <-ctx.Done():
		return run, ctx.Err()
	case <-timeout.C:
		return run, fmt.Errorf("%d of %d jobs DONE after 30 minutes", done.Load(), cfg.Jobs)
	}
	run.Took = time.Since(began)
	run.JobsPerS = float64(cfg.Jobs) / run.Took.Seconds()
	run.Retries = retries.Load()
	// Every DONE reported is in the database. A Galera node applies the
	// other nodes' commits a moment after they return (they are certified
	// everywhere, not yet applied everywhere): the count is read again
	// for a while before a shortfall counts as a loss.
	var n int
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := drvs[0].DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM lockstep_jobs WHERE status = 'DONE'").Scan(&n); err != nil {
			return run, err
		}
		if n == cfg.Jobs || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n != cfg.Jobs {
		return run, fmt.Errorf("%d jobs DONE in the database, %d reported", n, cfg.Jobs)
	}
	return run, nil
}

// WriteText writes each run and each topology's median, with its ratio to
// the single server of its kind in the same run.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "topology\trep\tjobs\tseconds\tjobs/s\tretried\t\n")
	by := map[string][]float64{}
	retried := map[string]int64{}
	for _, run := range r.Runs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%.0f\t%d\t\n", run.Topology, run.Rep, run.Jobs, run.Took.Seconds(), run.JobsPerS, run.Retries)
		by[run.Topology] = append(by[run.Topology], run.JobsPerS)
		retried[run.Topology] += run.Retries
	}
	fmt.Fprintf(tw, "\t\t\t\t\t\t\n")
	fmt.Fprintf(tw, "topology\tmedian jobs/s\tvs one server\tretried (all reps)\t\t\t\n")
	med := map[string]float64{}
	for _, t := range All {
		v := by[t]
		if len(v) == 0 {
			continue
		}
		sort.Float64s(v)
		med[t] = v[len(v)/2]
	}
	for _, t := range All {
		m, ok := med[t]
		if !ok {
			continue
		}
		base := med[MariaDB]
		if strings.HasPrefix(t, "postgres") {
			base = med[Postgres]
		}
		ratio := "-"
		if base > 0 {
			ratio = fmt.Sprintf("%.2f", m/base)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%d\t\t\t\n", t, m, ratio, retried[t])
	}
	return tw.Flush()
}
