package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/bench/internal/throughput"
)

// retainedGoal is the share of its empty-table throughput a system should
// keep beside a large table of finished jobs.
const retainedGoal = 0.85

func newRetainedCmd(r *root) *cobra.Command {
	cfg := throughput.DefaultConfig()
	cfg.Modes = []string{throughput.Continuous}
	cfg.Reps = 1
	retained := 10_000_000
	var systems string
	cmd := &cobra.Command{
		Use:   "retained",
		Short: "Continuous throughput beside a large table of finished jobs against the same run on an empty table",
		Long: `retained measures what a table that keeps its history costs a queue: for
each repetition and system it runs a continuous run on a fresh database
twice, back to back: once on an empty table, once after inserting
--retained finished jobs (lockstep DONE, River completed, finished an hour
ago, inside either system's retention) on the same queue and refreshing the
table's statistics. The table shows each pair's ratio against the goal of
keeping 85 % of the empty-table throughput.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			list, err := throughput.ParseSystems(systems)
			if err != nil {
				return err
			}
			if retained <= 0 {
				return fmt.Errorf("--retained must be positive, got %d", retained)
			}
			rows, err := runPairs(ctx, r, cfg, list, fmt.Sprintf("%d retained", retained), func(c *throughput.Config) { c.Retained = retained })
			if err != nil {
				return err
			}
			if r.JSON() {
				return r.writeJSON(rows)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "## Continuous throughput beside %d finished jobs\n\n", retained)
			fmt.Fprintf(&b, "%d workers, %d jobs kept available, %s warm-up, %s measured; on a fresh database each, an empty table and then one holding the finished jobs.\n\n",
				cfg.Workers, cfg.Backlog, cfg.Warmup, cfg.Duration)
			writePairs(&b, rows, retainedGoal)
			_, err = fmt.Fprint(r.stdout, b.String())
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&systems, "systems", "lockstep-postgres,river-postgres,lockstep-mariadb,lockstep-mysql", "comma-separated systems (not lockstep-sqlite)")
	f.IntVar(&cfg.Reps, "reps", cfg.Reps, "repetitions; each measures both tables back to back")
	f.IntVar(&retained, "retained", retained, "finished jobs in the table for the second run of each pair")
	f.DurationVar(&cfg.Duration, "duration", cfg.Duration, "measured interval of each run")
	f.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "time before the measured interval")
	f.IntVar(&cfg.Backlog, "backlog", cfg.Backlog, "available jobs kept queued")
	f.IntVar(&cfg.Workers, "workers", cfg.Workers, "worker concurrency (one queue)")
	return cmd
}
