package main

import (
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/bench/internal/throughput"
)

// waitingRow is one repetition of one system: its claim throughput on a
// table without WAITING jobs and on one with them, measured back to back.
type waitingRow struct {
	System  string  `json:"system"`
	Rep     int     `json:"rep"`
	Without float64 `json:"jobs_per_sec_without"`
	With    float64 `json:"jobs_per_sec_with"`
	Ratio   float64 `json:"ratio"`
}

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
			set, err := r.Servers(ctx)
			if err != nil {
				return err
			}
			cfg.Logger = r.Logger()
			cfg.ClientLogger = slog.New(levelFilter{r.Logger().With("from", "queue").Handler(), slog.LevelWarn})
			reps := cfg.Reps
			cfg.Reps = 1
			var rows []waitingRow
			for rep := 1; rep <= reps; rep++ {
				for _, system := range list {
					row := waitingRow{System: system, Rep: rep}
					for _, n := range []int{0, waiting} {
						c := cfg
						c.Systems, c.Waiting = []string{system}, n
						rep, err := throughput.Run(ctx, set, c)
						if err != nil {
							return fmt.Errorf("%s with %d waiting: %w", system, n, err)
						}
						jps := rep.Runs[0].JobsPerSec
						if n == 0 {
							row.Without = jps
						} else {
							row.With = jps
						}
					}
					row.Ratio = row.With / row.Without
					rows = append(rows, row)
				}
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

func writeWaiting(r *root, jobs, waiting int, rows []waitingRow) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## Claim throughput with %d WAITING jobs in the table\n\n", waiting)
	fmt.Fprintf(&b, "Burn-down of %d no-op jobs, on a fresh database each, without and then with the WAITING jobs.\n\n", jobs)
	b.WriteString("| system | rep | jobs/s without | jobs/s with | with / without |\n|---|--:|--:|--:|--:|\n")
	by := map[string][]float64{}
	for _, x := range rows {
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f | %.2f |\n", x.System, x.Rep, x.Without, x.With, x.Ratio)
		by[x.System] = append(by[x.System], x.Ratio)
	}
	b.WriteString("\n| system | median with / without |\n|---|--:|\n")
	var names []string
	for s := range by {
		names = append(names, s)
	}
	sort.Strings(names)
	for _, s := range names {
		v := by[s]
		sort.Float64s(v)
		fmt.Fprintf(&b, "| %s | %.2f |\n", s, v[len(v)/2])
	}
	_, err := fmt.Fprint(r.stdout, b.String())
	return err
}
