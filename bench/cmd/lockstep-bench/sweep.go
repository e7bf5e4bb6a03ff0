package main

import (
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/bench/internal/throughput"
)

// newSweepCmd runs the throughput benchmark at several worker counts, to
// show where each system peaks.
func newSweepCmd(r *root) *cobra.Command {
	cfg := throughput.DefaultConfig()
	cfg.Duration = 15 * time.Second
	var mode, systems, workers string
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Throughput at several worker counts (--workers 10,100,1000): where each system peaks",
		Long: `sweep runs the throughput benchmark (see its help) once per worker count,
each system with that many workers on its one queue, and prints each
system's median jobs/s per count, the best count of each system, and
lockstep's jobs/s over River's pair by pair. Statements and log volume per
job are printed for the last run of each system at each count.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			counts, err := parseCounts(workers)
			if err != nil {
				return err
			}
			switch mode {
			case throughput.BurnDown, throughput.Continuous:
				cfg.Modes = []string{mode}
			default:
				return fmt.Errorf("--mode must be burn-down or continuous, got %q", mode)
			}
			if cfg.Systems, err = throughput.ParseSystems(systems); err != nil {
				return err
			}
			set, err := r.Servers(ctx)
			if err != nil {
				return err
			}
			cfg.Logger = r.Logger()
			cfg.ClientLogger = slog.New(levelFilter{r.Logger().With("from", "queue").Handler(), slog.LevelWarn})
			var reps []*throughput.Report
			for _, n := range counts {
				c := cfg
				c.Workers = n
				rep, err := throughput.Run(ctx, set, c)
				if err != nil {
					return fmt.Errorf("%d workers: %w", n, err)
				}
				reps = append(reps, rep)
			}
			if r.JSON() {
				return r.writeJSON(reps)
			}
			return writeSweep(r.stdout, mode, counts, reps)
		},
	}
	f := cmd.Flags()
	f.StringVar(&workers, "workers", "10,100,1000", "comma-separated worker counts")
	f.StringVar(&mode, "mode", throughput.Continuous, "burn-down or continuous")
	f.StringVar(&systems, "systems", "lockstep-postgres,river-postgres", "comma-separated systems: "+strings.Join(throughput.AllSystems, ","))
	f.IntVar(&cfg.Reps, "reps", 1, "repetitions at each count; systems alternate within each")
	f.IntVar(&cfg.Jobs, "jobs", cfg.Jobs, "burn-down: jobs inserted before the workers start")
	f.DurationVar(&cfg.Duration, "duration", cfg.Duration, "continuous: measured interval")
	f.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "continuous: time before the measured interval")
	f.IntVar(&cfg.Backlog, "backlog", cfg.Backlog, "continuous: available jobs kept queued")
	f.BoolVar(&cfg.DBStats, "db-stats", cfg.DBStats, "report statements and log volume per job")
	return cmd
}

func parseCounts(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 || n > 10000 {
			return nil, fmt.Errorf("--workers: %q is not a worker count between 1 and 10000", strings.TrimSpace(part))
		}
		out = append(out, n)
	}
	return out, nil
}

// writeSweep prints one row per worker count and system.
func writeSweep(w io.Writer, mode string, counts []int, reps []*throughput.Report) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "## Throughput by worker count (%s)\n\n", mode)
	// The settings, as the throughput report states them (its lines
	// before the first table); "Workers: N" there is the first count's.
	var head strings.Builder
	if err := reps[0].WriteText(&head); err == nil {
		text := head.String()
		if i := strings.Index(text, "\n### "); i >= 0 {
			text = text[:i]
		}
		text = strings.TrimPrefix(text, "## Throughput: no-op jobs\n\n")
		fmt.Fprintf(b, "%s\n\n", strings.TrimSpace(text))
	}
	best := map[string][2]float64{} // system: count, jobs/s
	var rows [][]string
	for i, rep := range reps {
		var ratios []string
		for _, r := range rep.Ratios {
			ratios = append(ratios, fmt.Sprintf("%.2f×", r.Ratio))
		}
		for _, s := range rep.Summaries {
			ratio := ""
			if s.System == throughput.LockstepPostgres {
				ratio = strings.Join(ratios, ", ")
			}
			rows = append(rows, []string{strconv.Itoa(counts[i]), s.System, fmt.Sprintf("%.0f", s.Median),
				fmt.Sprintf("%.0f", s.Min), fmt.Sprintf("%.0f", s.Max), ratio})
			if s.Median > best[s.System][1] {
				best[s.System] = [2]float64{float64(counts[i]), s.Median}
			}
		}
	}
	throughput.WriteTable(b, []string{"workers", "system", "median jobs/s", "min", "max", "lockstep/River, pair by pair"}, "rlrrrl", rows)
	fmt.Fprintf(b, "\nPeaks:")
	for _, s := range reps[0].Config.Systems {
		if p, ok := best[s]; ok {
			fmt.Fprintf(b, " %s %.0f jobs/s at %.0f workers;", s, p[1], p[0])
		}
	}
	b.WriteString("\n\n")
	for i, rep := range reps {
		for _, r := range rep.Runs {
			if r.DB == nil || r.Rep != rep.Config.Reps {
				continue
			}
			fmt.Fprintf(b, "%d workers, %s: %.3f statements/job, log %.0f bytes/job\n", counts[i], r.System, r.DB.StatementsPerJob, r.DB.LogBytesPerJob)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
