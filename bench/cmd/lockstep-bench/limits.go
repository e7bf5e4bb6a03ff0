package main

import (
	"errors"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/bench/internal/limits"
)

func newLimitsCmd(r *root) *cobra.Command {
	cfg := limits.DefaultConfig()
	systems := strings.Join(cfg.Systems, ",")
	scenarios := strings.Join(cfg.Scenarios, ",")
	cmd := &cobra.Command{
		Use:   "limits",
		Short: "Claim throughput under a global limit, many per-key limits and a rate limit, against the same burn-down without limits",
		Long: `limits measures what a queue's limits cost the claim. Each repetition runs,
for each system, every scenario back to back, each a burn-down of no-op jobs
on a fresh database by --clients clients (each its own connection pool, as
processes would) with --workers workers each:

  none           --jobs jobs, no limits: the baseline
  global         --jobs jobs, Concurrency --concurrency
  keys           --jobs jobs round-robin over --keys keys, KeyConcurrency
                 --key-concurrency (the limit rarely binds)
  beside-serial  --jobs jobs, no limits, while a second queue limited to
                 one job at a time is busy (--serial-jobs queued, served by
                 --serial-workers in each client): a limited queue must not
                 serialise the others
  rate           --rate-jobs jobs, Rate --rate per --rate-period
                 (queue-wide; it binds)

The tables show each run's jobs/s and its ratio to none's in the same
repetition, the medians, the peak of RUNNING jobs counted every
--sample-every (in one statement: above a limit is a failed limit), and for
rate the starts per second and the most starts in any window, by the
database's started_at. A limit exceeded fails the command after the report.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg.Systems = splitList(systems)
			cfg.Scenarios = splitList(scenarios)
			set, err := r.Servers(ctx)
			if err != nil {
				return err
			}
			cfg.Logger = r.Logger()
			if r.Logger().Enabled(ctx, slog.LevelDebug) {
				cfg.ClientLogger = r.Logger()
			} else {
				cfg.ClientLogger = slog.New(levelFilter{r.Logger().With("from", "queue").Handler(), slog.LevelWarn})
			}
			rep, err := limits.Run(ctx, set, cfg)
			if rep != nil && len(rep.Runs) > 0 && err != nil {
				// Print what was measured before the failure.
				_ = rep.WriteText(r.stderr)
			}
			if err != nil {
				return err
			}
			if r.JSON() {
				err = r.writeJSON(rep)
			} else {
				err = rep.WriteText(r.stdout)
			}
			if err == nil && len(rep.Violations) > 0 {
				err = errors.New("a limit was exceeded: " + strings.Join(rep.Violations, "; "))
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&systems, "systems", systems, "comma-separated systems: "+strings.Join(limits.Systems, ","))
	f.StringVar(&scenarios, "scenarios", scenarios, "comma-separated scenarios, in run order: "+strings.Join(limits.AllScenarios, ","))
	f.IntVar(&cfg.Reps, "reps", cfg.Reps, "repetitions; each runs every scenario of every system")
	f.IntVar(&cfg.Jobs, "jobs", cfg.Jobs, "jobs of each burn-down but rate's")
	f.IntVar(&cfg.RateJobs, "rate-jobs", cfg.RateJobs, "jobs of the rate scenario's burn-down")
	f.IntVar(&cfg.Clients, "clients", cfg.Clients, "clients, each on its own connection pool")
	f.IntVar(&cfg.Workers, "workers", cfg.Workers, "workers of each client on the measured queue")
	f.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "global: the queue's Concurrency")
	f.IntVar(&cfg.Keys, "keys", cfg.Keys, "keys: distinct limit keys")
	f.IntVar(&cfg.KeyConcurrency, "key-concurrency", cfg.KeyConcurrency, "keys: KeyConcurrency")
	f.BoolVar(&cfg.KeysPremade, "keys-premade", false,
		"keys: make every key's row before the run, as if each key had been seen before (separates a key's first sight from the rest)")
	f.IntVar(&cfg.Rate, "rate", cfg.Rate, "rate: starts per --rate-period")
	f.DurationVar(&cfg.RatePeriod, "rate-period", cfg.RatePeriod, "rate: the period")
	f.IntVar(&cfg.SerialJobs, "serial-jobs", cfg.SerialJobs, "beside-serial: jobs queued on the serial queue")
	f.IntVar(&cfg.SerialWorkers, "serial-workers", cfg.SerialWorkers, "beside-serial: workers of each client on the serial queue")
	f.DurationVar(&cfg.SerialWork, "serial-work", cfg.SerialWork, "beside-serial: how long each serial job takes (0: no-op, the most claims)")
	f.IntVar(&cfg.BatchSize, "batch", cfg.BatchSize, "jobs per InsertMany")
	f.DurationVar(&cfg.SampleEvery, "sample-every", cfg.SampleEvery, "how often RUNNING jobs are counted")
	f.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "longest a run's work phase may take")
	return cmd
}

// splitList splits a comma-separated flag value.
func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
