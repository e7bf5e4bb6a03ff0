package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/bench/internal/latency"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
)

func newLatencyCmd(r *root) *cobra.Command {
	o := latency.Options{Duration: 10 * time.Second, Workers: 100, Enqueuers: 16}
	var (
		databases string
		modes     string
		rates     []int
		tunedMin  []time.Duration
		pollOnly  bool
	)
	cmd := &cobra.Command{
		Use:   "latency",
		Short: "Enqueue→start latency (p50, p99, max) at a light and a heavy rate, cross-process and same-process, and peak RSS",
		Long: `latency measures how long after an Enqueue call returns its job starts:
time.Now() at the start of the worker's Work minus the time the Enqueue call
returned, per job id. The enqueuer and the worker share this process (one
clock) but, cross-process, are two clients on two connection pools, as two
processes would be: only the database can wake the worker (PostgreSQL's
LISTEN/NOTIFY) or its poll finds the job. Same-process, one client enqueues
and works, and its in-process wake-up applies.

Jobs are no-ops enqueued one per Enqueue call at a fixed rate (--rates, jobs
per second) for --duration, each row on a fresh database after a short
warm-up. Rows run with lockstep's defaults (PollInterval 1s,
MinPollInterval 25ms); --tuned-min-poll adds cross-process rows for MariaDB
and SQLite with a shorter MinPollInterval, --pg-poll-only a PostgreSQL row
with the listener off (Config.DisableNotify), to show what the wake-up buys.

Peak RSS is this process's VmHWM (/proc/self/status), reset before each row
(/proc/self/clear_refs): enqueuer and worker together, an upper bound on a
worker process's.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			dbs, err := parseLatencyDBs(databases)
			if err != nil {
				return err
			}
			ms, err := parseModes(modes)
			if err != nil {
				return err
			}
			if len(rates) == 0 {
				return fmt.Errorf("--rates: none given")
			}
			var phases []latency.Phase
			for _, db := range dbs {
				target, err := latencyTarget(r, db)
				if err != nil {
					return err
				}
				var variants []latency.Variant
				for _, m := range ms {
					variants = append(variants, latency.Variant{Mode: m, Settings: "defaults"})
				}
				if containsMode(ms, latency.CrossProcess) {
					if db == "postgres" && pollOnly {
						variants = append(variants, latency.Variant{Mode: latency.CrossProcess, Settings: "DisableNotify", DisableNotify: true})
					}
					for _, d := range tunedMin {
						if db != "postgres" && d > 0 {
							variants = append(variants, latency.Variant{Mode: latency.CrossProcess,
								Settings: "MinPollInterval " + d.String(), MinPollInterval: d})
						}
					}
				}
				for _, v := range variants {
					for _, rate := range rates {
						phases = append(phases, latency.Phase{Target: target, Variant: v, Rate: rate})
					}
				}
			}
			o.Logf = r.Logf
			// The clients' own logs: warnings and errors only.
			o.Logger = slog.New(levelFilter{r.Logger().Handler(), slog.LevelWarn})
			results, err := latency.Run(ctx, phases, o)
			if err != nil {
				if len(results) > 0 && !r.JSON() {
					_ = latency.WriteText(r.stderr, results, o)
				}
				return err
			}
			if r.JSON() {
				return r.writeJSON(struct {
					Cores       int              `json:"cores"`
					GoVersion   string           `json:"go_version"`
					DurationS   float64          `json:"duration_s"`
					Workers     int              `json:"workers"`
					Enqueuers   int              `json:"enqueuers"`
					TargetP50MS float64          `json:"target_light_p50_ms"`
					TargetP99MS float64          `json:"target_light_p99_ms"`
					TargetRSS   float64          `json:"target_peak_rss_mib"`
					Results     []latency.Result `json:"results"`
				}{runtime.NumCPU(), runtime.Version(), o.Duration.Seconds(), o.Workers, o.Enqueuers,
					latency.TargetP50MS, latency.TargetP99MS, latency.TargetPeakRSSMiB, results})
			}
			return latency.WriteText(r.stdout, results, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&databases, "databases", "postgres,mariadb,sqlite", "comma-separated databases: postgres, mariadb, mysql (Oracle MySQL), sqlite")
	f.StringVar(&modes, "modes", "cross,same", "comma-separated: cross (enqueuer on another pool), same (one client)")
	f.IntSliceVar(&rates, "rates", []int{100, 2000}, "jobs per second, the lowest being the light load")
	f.DurationVar(&o.Duration, "duration", o.Duration, "enqueueing time per row")
	f.BoolVar(&o.Poisson, "poisson", false, "space the enqueues as a Poisson process of the same mean rate instead of evenly")
	f.IntVar(&o.Workers, "workers", o.Workers, "the worker client's MaxWorkers")
	f.IntVar(&o.Enqueuers, "enqueuers", o.Enqueuers, "Enqueue calls in flight at most")
	f.DurationSliceVar(&tunedMin, "tuned-min-poll", []time.Duration{5 * time.Millisecond}, "extra cross-process rows for MariaDB and SQLite, one per MinPollInterval given (0: none)")
	f.BoolVar(&pollOnly, "pg-poll-only", true, "an extra cross-process PostgreSQL row with the worker's listener off")
	return cmd
}

func containsMode(ms []latency.Mode, m latency.Mode) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

func parseModes(s string) ([]latency.Mode, error) {
	var out []latency.Mode
	for _, m := range strings.Split(s, ",") {
		switch m = strings.ToLower(strings.TrimSpace(m)); m {
		case "cross", "cross-process":
			out = append(out, latency.CrossProcess)
		case "same", "same-process":
			out = append(out, latency.SameProcess)
		case "":
		default:
			return nil, fmt.Errorf("--modes: unknown mode %q (want cross, same)", m)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--modes: none given")
	}
	return out, nil
}

// parseLatencyDBs reads a comma-separated list of postgres, mariadb and
// sqlite.
func parseLatencyDBs(s string) ([]string, error) {
	var out []string
	for _, d := range strings.Split(s, ",") {
		if d = strings.ToLower(strings.TrimSpace(d)); d == "sqlite" || d == "sqlite3" {
			out = append(out, "sqlite")
			continue
		}
		if d == "" {
			continue
		}
		got, err := parseDBList(d)
		if err != nil {
			return nil, fmt.Errorf("--databases: unknown database %q (want postgres, mariadb, mysql, sqlite)", d)
		}
		out = append(out, got...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--databases: none given")
	}
	return out, nil
}

// latencyTarget opens fresh databases on the harness's servers (a temp
// file for SQLite) with lockstep's own drivers.
func latencyTarget(r *root, db string) (latency.Target, error) {
	t := latency.Target{Name: db}
	switch db {
	case "postgres", "mariadb", "mysql":
		t.NewDatabase = func(ctx context.Context) (*latency.Database, error) {
			set, err := r.Servers(ctx)
			if err != nil {
				return nil, err
			}
			newDB, open := set.Postgres, func(ctx context.Context, dsn string) (driver.Driver, error) { return postgres.Open(ctx, dsn) }
			switch db {
			case "mariadb":
				newDB, open = set.MySQL, func(ctx context.Context, dsn string) (driver.Driver, error) { return mysql.Open(ctx, dsn) }
			case "mysql":
				newDB, open = set.OracleMySQL, func(ctx context.Context, dsn string) (driver.Driver, error) { return mysql.Open(ctx, dsn) }
			}
			dsn, err := newDB(ctx)
			if err != nil {
				return nil, err
			}
			return &latency.Database{
				Open:  func(ctx context.Context) (driver.Driver, error) { return open(ctx, dsn) },
				Close: func() error { return set.Drop(context.Background(), dsn) },
			}, nil
		}
	case "sqlite":
		t.NewDatabase = func(ctx context.Context) (*latency.Database, error) {
			dir, err := os.MkdirTemp("", "lockstep-bench-latency-")
			if err != nil {
				return nil, err
			}
			path := filepath.Join(dir, "latency.db")
			return &latency.Database{
				Open:  func(ctx context.Context) (driver.Driver, error) { return sqlite.Open(ctx, path) },
				Close: func() error { return os.RemoveAll(dir) },
			}, nil
		}
	default:
		return t, fmt.Errorf("unknown database %q", db)
	}
	return t, nil
}
