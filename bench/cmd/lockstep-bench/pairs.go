package main

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/lockstep-queue/lockstep/bench/internal/throughput"
)

// pairRow is one repetition of one system: its throughput on a fresh
// database without something in the table and then with it, measured back
// to back (the waiting and retained subcommands).
type pairRow struct {
	System  string  `json:"system"`
	Rep     int     `json:"rep"`
	Without float64 `json:"jobs_per_sec_without"`
	With    float64 `json:"jobs_per_sec_with"`
	Ratio   float64 `json:"ratio"`
}

// runPairs runs each system of list cfg.Reps times, a run without and a
// run with, the second configured by with; systems alternate within a
// repetition. It starts the servers and routes the systems' logs (warnings
// and above) to r's logger.
func runPairs(ctx context.Context, r *root, cfg throughput.Config, list []string, what string, with func(*throughput.Config)) ([]pairRow, error) {
	set, err := r.Servers(ctx)
	if err != nil {
		return nil, err
	}
	cfg.Logger = r.Logger()
	cfg.ClientLogger = slog.New(levelFilter{r.Logger().With("from", "queue").Handler(), slog.LevelWarn})
	reps := cfg.Reps
	cfg.Reps = 1
	var rows []pairRow
	for rep := 1; rep <= reps; rep++ {
		for _, system := range list {
			row := pairRow{System: system, Rep: rep}
			for _, on := range []bool{false, true} {
				c := cfg
				c.Systems = []string{system}
				if on {
					with(&c)
				}
				res, err := throughput.Run(ctx, set, c)
				if err != nil {
					if on {
						return nil, fmt.Errorf("%s with %s: %w", system, what, err)
					}
					return nil, fmt.Errorf("%s without %s: %w", system, what, err)
				}
				if on {
					row.With = res.Runs[0].JobsPerSec
				} else {
					row.Without = res.Runs[0].JobsPerSec
				}
			}
			row.Ratio = row.With / row.Without
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// writePairs prints each pair and each system's median ratio; goal, when
// above 0, is the ratio each median is held to.
func writePairs(b *strings.Builder, rows []pairRow, goal float64) {
	b.WriteString("| system | rep | jobs/s without | jobs/s with | with / without |\n|---|--:|--:|--:|--:|\n")
	by := map[string][]float64{}
	for _, x := range rows {
		fmt.Fprintf(b, "| %s | %d | %.0f | %.0f | %.2f |\n", x.System, x.Rep, x.Without, x.With, x.Ratio)
		by[x.System] = append(by[x.System], x.Ratio)
	}
	if goal > 0 {
		fmt.Fprintf(b, "\n| system | median with / without | ≥ %.2f |\n|---|--:|---|\n", goal)
	} else {
		b.WriteString("\n| system | median with / without |\n|---|--:|\n")
	}
	var names []string
	for s := range by {
		names = append(names, s)
	}
	sort.Strings(names)
	for _, s := range names {
		v := by[s]
		sort.Float64s(v)
		m := v[len(v)/2]
		if goal > 0 {
			met := "no"
			if m >= goal {
				met = "yes"
			}
			fmt.Fprintf(b, "| %s | %.2f | %s |\n", s, m, met)
		} else {
			fmt.Fprintf(b, "| %s | %.2f |\n", s, m)
		}
	}
}
