package throughput

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/lockstep-queue/lockstep"
)

// WriteText prints the report as Markdown tables, ready for BENCHMARKS.md.
func (rep *Report) WriteText(w io.Writer) error {
	b := &strings.Builder{}
	c := rep.Config
	m := rep.Machine
	fmt.Fprintf(b, "## Throughput: no-op jobs\n\n")
	fmt.Fprintf(b, "Machine: %d CPUs (%s), %.1f GiB memory, %s", m.CPUs, m.GoArch, m.MemoryGiB, m.Go)
	if m.Postgres != "" {
		fmt.Fprintf(b, "; %s", m.Postgres)
	}
	if m.MariaDB != "" {
		fmt.Fprintf(b, "; MariaDB %s", m.MariaDB)
	}
	if m.MySQL != "" {
		fmt.Fprintf(b, "; Oracle %s", m.MySQL)
	}
	fmt.Fprintf(b, ".\n")
	pool := "pgx default, max(4, GOMAXPROCS)"
	if c.PGPoolConns > 0 {
		pool = fmt.Sprintf("%d", c.PGPoolConns)
	}
	fmt.Fprintf(b, "Workers: %d per system on one queue (lockstep and River QueueConfig.MaxWorkers); "+
		"lockstep MinPollInterval %s, PollInterval %s",
		c.Workers, LockstepMinPollInterval, LockstepPollInterval)
	wait := "default " + lockstep.DefaultCompleteBatchWait.String()
	if c.CompleteBatchWait != "" {
		wait = c.CompleteBatchWait
	}
	fmt.Fprintf(b, ", CompleteBatchWait %s", wait)
	if m.Postgres != "" {
		fmt.Fprintf(b, "; River FetchCooldown %s, FetchPollInterval %s (as in River's own benchmark); "+
			"PostgreSQL pool connections: %s, the same for both", RiverFetchCooldown, RiverFetchPollInterval, pool)
	}
	fmt.Fprintf(b, ".\n")
	fmt.Fprintf(b, "Inserts: each system's batch insert (lockstep InsertMany, River InsertMany), %d jobs per call. "+
		"A job counts once its completion is reported committed (lockstep: EventJobFinished with DONE; River: "+
		"its job_completed subscription); the database's count of completed jobs is checked after each run.\n", c.BatchSize)
	for _, system := range c.Systems {
		if system == LockstepSQLite {
			fmt.Fprintf(b, "SQLite: a temp file with sqlite.Open's settings, WAL and synchronous=NORMAL "+
				"(a commit survives a crash of the process, not necessarily a power loss).\n")
		}
	}
	for _, mode := range c.Modes {
		switch mode {
		case BurnDown:
			fmt.Fprintf(b, "Burn-down: %d jobs inserted, then the workers started; timed from Start to the last completion.\n", c.Jobs)
		case Continuous:
			fmt.Fprintf(b, "Continuous: %d jobs kept available, %s warm-up, then completions counted for %s",
				c.Backlog, c.Warmup, c.Duration)
			if c.HoldSnapshot != "" {
				fmt.Fprintf(b, " (then a snapshot held for %s and %s more: see below)", c.HoldSnapshot, c.Duration)
			}
			fmt.Fprintf(b, ".\n")
		}
	}
	b.WriteString("\n")

	for _, mode := range c.Modes {
		fmt.Fprintf(b, "### %s\n\n", mode)
		var rows [][]string
		for _, r := range rep.Runs {
			if r.Mode != mode {
				continue
			}
			rows = append(rows, []string{fmt.Sprint(r.Rep), r.System, fmt.Sprint(r.Jobs), fmt.Sprintf("%.2f", r.Seconds),
				fmt.Sprintf("%.0f", r.JobsPerSec), fmt.Sprint(r.DoneInDB), fmt.Sprintf("%.0f", r.PeakRSSMiB)})
		}
		WriteTable(b, []string{"rep", "system", "jobs", "seconds", "jobs/s", "done in DB", "peak RSS MiB"}, "rlrrrrr", rows)
		b.WriteString("\n")
		rows = nil
		for _, s := range rep.Summaries {
			if s.Mode == mode {
				rows = append(rows, []string{s.System, fmt.Sprintf("%.0f", s.Median), fmt.Sprintf("%.0f", s.Min),
					fmt.Sprintf("%.0f", s.Max), fmt.Sprint(s.Runs)})
			}
		}
		WriteTable(b, []string{"system", "median jobs/s", "min", "max", "runs"}, "lrrrr", rows)
		var ratios []string
		for _, r := range rep.Ratios {
			if r.Mode == mode {
				ratios = append(ratios, fmt.Sprintf("rep %d: %.2f×", r.Rep, r.Ratio))
			}
		}
		if len(ratios) > 0 {
			fmt.Fprintf(b, "\nlockstep/River on PostgreSQL, pair by pair: %s\n", strings.Join(ratios, ", "))
		}
		fmt.Fprintf(b, "\n")
	}
	rep.writeHolds(b)
	rep.writeFloors(b)
	rep.writeDBStats(b)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeDBStats prints, for the last run of each system and mode, what the
// database did per job.
func (rep *Report) writeDBStats(b *strings.Builder) {
	last := map[string]Result{}
	var order []string
	for _, r := range rep.Runs {
		if r.DB == nil {
			continue
		}
		key := r.Mode + " " + r.System
		if _, ok := last[key]; !ok {
			order = append(order, key)
		}
		last[key] = r
	}
	if len(order) == 0 {
		return
	}
	fmt.Fprintf(b, "### Database work per job (last run of each)\n\n")
	for _, key := range order {
		r := last[key]
		s := r.DB
		switch {
		case innodb(r.System):
			fmt.Fprintf(b, "%s, %s: %.2f statements/job (Questions), redo %.0f bytes/job, %.3f fsyncs/job (Innodb_data_fsyncs)\n",
				r.System, r.Mode, s.StatementsPerJob, s.LogBytesPerJob, s.LogFsyncsPerJob)
			for _, t := range s.Top {
				fmt.Fprintf(b, "    %-22s %6.3f/job\n", t.Statement, t.CallsPerJob)
			}
		default:
			if len(s.Top) == 0 {
				fmt.Fprintf(b, "%s, %s: WAL %.0f bytes/job (pg_stat_statements not available)\n",
					r.System, r.Mode, s.LogBytesPerJob)
				continue
			}
			fmt.Fprintf(b, "%s, %s: %.2f statements/job (pg_stat_statements), WAL %.0f bytes/job\n",
				r.System, r.Mode, s.StatementsPerJob, s.LogBytesPerJob)
			for _, t := range s.Top {
				fmt.Fprintf(b, "    %6.3f/job  %7.1f rows/call  %7.3f ms  %s\n",
					t.CallsPerJob, t.RowsPerCall, t.MeanMillis, t.Statement)
			}
		}
		fmt.Fprintf(b, "\n")
	}
}

// WriteTable writes a Markdown table with padded columns; align has one
// letter per column, l or r.
func WriteTable(b *strings.Builder, header []string, align string, rows [][]string) {
	width := make([]int, len(header))
	for i, h := range header {
		width[i] = len(h)
	}
	for _, row := range rows {
		for i, cell := range row {
			width[i] = max(width[i], utf8.RuneCountInString(cell))
		}
	}
	line := func(cells []string) {
		for i, cell := range cells {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(cell))
			if align[i] == 'r' {
				fmt.Fprintf(b, "| %s%s ", pad, cell)
			} else {
				fmt.Fprintf(b, "| %s%s ", cell, pad)
			}
		}
		b.WriteString("|\n")
	}
	line(header)
	for i := range header {
		dashes := strings.Repeat("-", max(width[i], 3))
		if align[i] == 'r' {
			dashes = dashes[1:] + ":"
		}
		fmt.Fprintf(b, "|%s", " "+dashes+" ")
	}
	b.WriteString("|\n")
	for _, row := range rows {
		line(row)
	}
}

// writeFloors prints lockstep's median as a share of the write floor.
func (rep *Report) writeFloors(b *strings.Builder) {
	if len(rep.Floors) == 0 {
		return
	}
	fmt.Fprintf(b, "### Share of the write floor\n\n")
	fmt.Fprintf(b, "The floor (lockstep-bench floor) measured after the runs above, on a fresh database of the same server: "+
		"the best jobs/s of bare insert, SKIP LOCKED claim and finish loops over the batch sizes and loop counts tried.\n\n")
	header := []string{"system", "floor jobs/s", "best batch × loops"}
	align := "lrl"
	for _, mode := range rep.Config.Modes {
		header = append(header, "lockstep "+mode, "share")
		align += "rr"
	}
	var rows [][]string
	for _, f := range rep.Floors {
		row := []string{f.System, fmt.Sprintf("%.0f", f.Floor.Best.JobsPerSec),
			fmt.Sprintf("%d × %d", f.Floor.Best.Batch, f.Floor.Best.Concurrency)}
		for _, mode := range rep.Config.Modes {
			median := 0.0
			for _, s := range rep.Summaries {
				if s.System == f.System && s.Mode == mode {
					median = s.Median
				}
			}
			row = append(row, fmt.Sprintf("%.0f", median), fmt.Sprintf("%.0f%%", 100*f.Share[mode]))
		}
		rows = append(rows, row)
	}
	WriteTable(b, header, align, rows)
	b.WriteString("\n")
}
