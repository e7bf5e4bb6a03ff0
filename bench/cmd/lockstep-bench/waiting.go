package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/bench/internal/throughput"
)

func newWaitingCmd(r *root) *cobra.Command {
	cfg := throughput.DefaultConfig()
	cfg.Modes = []string{throughput.BurnDown}
	cfg.Jobs = 50_000
	waiting := 100_000
	var systems string
	cmd := &cobra.Command{
		Use:   "waiting",
		Short: "Claim throughput with WAITING workflow jobs in the table against the same run without them",
		Long: `waiting measures what a table full of WAITING jobs — a workflow's jobs
whose dependencies are not done — costs the claim. For each repetition and
system it runs a burn-down of --jobs no-op jobs on a fresh database twice,
back to back: once on an otherwise empty table, once after inserting
--waiting WAITING jobs on the same queue (one run: a root on a queue no one
works, and --waiting jobs that depend on it). The claim's index range is
PENDING, so they should cost nothing; the table shows each pair's ratio.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			list, err := throughput.ParseSystems(systems)
			if err != nil {
				return err
			}
			for _, s := range list {
				if !strings.HasPrefix(s, "lockstep-") {
					return fmt.Errorf("waiting measures lockstep's systems; %s has no workflows", s)
				}
			}
			if waiting <= 0 {
				return fmt.Errorf("--waiting must be positive, got %d", waiting)
			}
			rows, err := runPairs(ctx, r, cfg, list, fmt.Sprintf("%d waiting", waiting), func(c *throughput.Config) { c.Waiting = waiting })
			if err != nil {
				return err
			}
			if r.JSON() {
				return r.writeJSON(rows)
			}
			return writeWaiting(r, cfg.Jobs, waiting, rows)
		},
	}
	f := cmd.Flags()
	f.StringVar(&systems, "systems", "lockstep-postgres,lockstep-mariadb,lockstep-mysql", "comma-separated lockstep systems")
	f.IntVar(&cfg.Reps, "reps", cfg.Reps, "repetitions; each measures both tables back to back")
	f.IntVar(&cfg.Jobs, "jobs", cfg.Jobs, "jobs each burn-down works")
	f.IntVar(&waiting, "waiting", waiting, "WAITING jobs in the table for the second run of each pair")
	f.IntVar(&cfg.Workers, "workers", cfg.Workers, "worker concurrency (one queue)")
	f.IntVar(&cfg.BatchSize, "batch", cfg.BatchSize, "jobs per batch insert")
	return cmd
}

func writeWaiting(r *root, jobs, waiting int, rows []pairRow) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## Claim throughput with %d WAITING jobs in the table\n\n", waiting)
	fmt.Fprintf(&b, "Burn-down of %d no-op jobs, on a fresh database each, without and then with the WAITING jobs.\n\n", jobs)
	writePairs(&b, rows, 0)
	_, err := fmt.Fprint(r.stdout, b.String())
	return err
}
