package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/bench/internal/floor"
	"github.com/lockstep-queue/lockstep/bench/internal/throughput"
)

func newThroughputCmd(r *root) *cobra.Command {
	cfg := throughput.DefaultConfig()
	var mode, systems, chart string
	var withFloor bool
	fo := floor.DefaultOptions()
	fo.Batches, fo.Concurrency = []int{100, 500, 1000}, []int{2, 4, 8}
	cmd := &cobra.Command{
		Use:   "throughput",
		Short: "Jobs/s of no-op jobs: lockstep on PostgreSQL, MariaDB, Oracle MySQL and SQLite, River on the same PostgreSQL",
		Long: `throughput works no-op jobs and counts a job only once its completion is
reported committed (lockstep: EventJobFinished with status DONE; River: its
job_completed subscription, as River's own benchmark counts), then checks the
database's count of completed jobs.

Modes: burn-down inserts --jobs jobs with each system's batch insert, then
starts the workers and times until the last one is done; continuous keeps
--backlog jobs available for --warmup plus --duration and counts the
completions of --duration.

Systems alternate within each repetition (lockstep-postgres, river-postgres,
lockstep-mariadb, lockstep-mysql, lockstep-sqlite, then again), each run on a
fresh database; lockstep-mysql is Oracle MySQL.
The table shows jobs/s per run, each system's median, and lockstep's jobs/s
over River's, pair by pair (same repetition).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			switch mode {
			case "both":
				cfg.Modes = []string{throughput.BurnDown, throughput.Continuous}
			case throughput.BurnDown, throughput.Continuous:
				cfg.Modes = []string{mode}
			default:
				return fmt.Errorf("--mode must be burn-down, continuous or both, got %q", mode)
			}
			if chart != "" && cfg.HoldSnapshot == 0 {
				return fmt.Errorf("--chart draws a --hold-snapshot run: give --hold-snapshot too")
			}
			var err error
			if cfg.Systems, err = throughput.ParseSystems(systems); err != nil {
				return err
			}
			if withFloor {
				cfg.Floor = &fo
			}
			set, err := r.Servers(ctx)
			if err != nil {
				return err
			}
			cfg.Logger = r.Logger()
			// The systems' own logs: warnings and errors only, unless
			// --log-level debug asks for everything.
			if r.Logger().Enabled(ctx, slog.LevelDebug) {
				cfg.ClientLogger = r.Logger()
			} else {
				cfg.ClientLogger = r.Logger().With("from", "queue")
				cfg.ClientLogger = slog.New(levelFilter{cfg.ClientLogger.Handler(), slog.LevelWarn})
			}
			rep, err := throughput.Run(ctx, set, cfg)
			if rep != nil && len(rep.Runs) > 0 && err != nil {
				// Print what was measured before the failure.
				_ = rep.WriteText(r.stderr)
			}
			if err != nil {
				return err
			}
			if chart != "" {
				if err := writeChart(chart, rep); err != nil {
					return err
				}
			}
			if r.JSON() {
				return r.writeJSON(rep)
			}
			return rep.WriteText(r.stdout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&mode, "mode", "both", "burn-down, continuous or both")
	f.StringVar(&systems, "systems", "all", "comma-separated systems: "+strings.Join(throughput.AllSystems, ","))
	f.IntVar(&cfg.Reps, "reps", cfg.Reps, "repetitions; systems alternate within each")
	f.IntVar(&cfg.Jobs, "jobs", cfg.Jobs, "burn-down: jobs inserted before the workers start")
	f.DurationVar(&cfg.Duration, "duration", cfg.Duration, "continuous: measured interval")
	f.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "continuous: time before the measured interval")
	f.IntVar(&cfg.Backlog, "backlog", cfg.Backlog, "continuous: available jobs kept queued")
	f.IntVar(&cfg.Workers, "workers", cfg.Workers, "worker concurrency of each system (one queue)")
	f.IntVar(&cfg.BatchSize, "batch", cfg.BatchSize, "jobs per batch insert")
	f.IntVar(&cfg.PGPoolConns, "pg-pool-conns", cfg.PGPoolConns,
		"pool_max_conns of both systems' pgx pools (0: pgx's default, max(4, GOMAXPROCS))")
	f.BoolVar(&cfg.DBStats, "db-stats", cfg.DBStats,
		"report statements and log volume per job (pg_stat_statements, SHOW GLOBAL STATUS)")
	f.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "longest a run's work phase may take")
	f.IntVar(&cfg.Waiting, "waiting", 0, "WAITING workflow jobs put in each lockstep system's table before its run")
	f.IntVar(&cfg.Retained, "retained", 0, "finished jobs put in each system's table before its run (a table that keeps its history; not lockstep-sqlite)")
	f.DurationVar(&cfg.HoldSnapshot, "hold-snapshot", 0,
		"continuous: after --duration, hold a REPEATABLE READ transaction (InnoDB: a read view) open on the system's database for this long, "+
			"then measure --duration more; reports jobs/s, claim latency and dead tuples or history length over time")
	f.DurationVar(&cfg.HoldSample, "hold-sample", 0, "with --hold-snapshot: the sampling interval (default 5s)")
	f.StringVar(&chart, "chart", "", "with --hold-snapshot: also write the samples as an SVG chart to this file")
	f.DurationVar(&cfg.CompleteBatchWait, "complete-batch-wait", 0,
		"lockstep's CompleteBatchWait, how long a busy client gathers DONEs into one write (0: the library's default)")
	f.BoolVar(&withFloor, "floor", false,
		"also measure the write floor (as lockstep-bench floor, a smaller search) and print lockstep's share of it")
	f.IntSliceVar(&fo.Batches, "floor-batches", fo.Batches, "--floor: batch sizes tried")
	f.IntSliceVar(&fo.Concurrency, "floor-concurrency", fo.Concurrency, "--floor: loop counts tried")
	f.DurationVar(&fo.Duration, "floor-duration", fo.Duration, "--floor: measured window of each point")
	f.DurationVar(&fo.Warmup, "floor-warmup", fo.Warmup, "--floor: warm-up of each point")
	return cmd
}

// writeChart writes the held-snapshot runs' SVG chart to path.
func writeChart(path string, rep *throughput.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--chart: %w", err)
	}
	if err := rep.WriteHoldChart(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("--chart: %w", err)
	}
	return f.Close()
}
