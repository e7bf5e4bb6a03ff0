package latency

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Issue 6's targets: at light load, p50 ≤ 5 ms and p99 ≤ 50 ms on
// PostgreSQL and MariaDB; a worker process's peak RSS ≤ 64 MB.
const (
	TargetP50MS      = 5
	TargetP99MS      = 50
	TargetPeakRSSMiB = 64
)

// LightTarget reports whether r is a light-load row the latency target
// applies to (PostgreSQL or MariaDB at the run's lowest rate), and if so
// whether it meets it.
func LightTarget(r Result, lightRate int) (applies, met bool) {
	if r.Rate != lightRate || (r.Database != "postgres" && r.Database != "mariadb") {
		return false, false
	}
	return true, r.P50MS <= TargetP50MS && r.P99MS <= TargetP99MS
}

// WriteText prints the results as a table.
func WriteText(w io.Writer, results []Result, o Options) error {
	light := 0
	for _, r := range results {
		if light == 0 || r.Rate < light {
			light = r.Rate
		}
	}
	fmt.Fprintf(w, "enqueue→start latency: time.Now() when Work starts minus when the job's Enqueue call returned;\n")
	spacing := "evenly spaced"
	if o.Poisson {
		spacing = "Poisson arrivals"
	}
	fmt.Fprintf(w, "one Enqueue per job at a fixed rate (%s) for %s, at most %d calls in flight; worker MaxWorkers %d, no-op jobs.\n", spacing, o.Duration, o.Enqueuers, o.Workers)
	fmt.Fprintf(w, "cross-process: enqueuer and worker are two clients on two pools (as two processes); same-process: one client does both.\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "database\tenqueuer\twake-up\tpoll / min poll\tsettings\trate/s\tachieved\tjobs\tp50 ms\tp90 ms\tp99 ms\tmax ms\tenqueue p50 ms\tpeak RSS MiB\ttarget\t")
	for _, r := range results {
		target := ""
		if applies, met := LightTarget(r, light); applies {
			target = "missed"
			if met {
				target = "met"
			}
		}
		miss := ""
		if r.Missing > 0 || r.EnqueueErrors > 0 {
			miss = fmt.Sprintf(" (%d missing, %d errors)", r.Missing, r.EnqueueErrors)
		}
		rss := fmt.Sprintf("%.1f", r.PeakRSSMiB)
		if r.RSSScope != "phase" {
			rss += "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s / %s\t%s\t%d\t%.0f\t%d%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%s\t\n",
			r.Database, strings.TrimSuffix(string(r.Mode), "-process"), r.Wake, fmtMS(r.PollMS), fmtMS(r.MinPollMS), r.Settings,
			r.Rate, r.Achieved, r.Jobs, miss, r.P50MS, r.P90MS, r.P99MS, r.MaxMS, r.EnqP50MS, rss, target)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\ntarget (issue 6): at light load (%d/s) p50 ≤ %d ms and p99 ≤ %d ms on PostgreSQL and MariaDB; peak RSS ≤ %d MB.\n", light, TargetP50MS, TargetP99MS, TargetPeakRSSMiB)
	fmt.Fprintf(w, "peak RSS: VmHWM of this one process (enqueuer and worker together, and SQLite's engine), reset before each row")
	for _, r := range results {
		if r.RSSScope != "phase" {
			fmt.Fprintf(w, "; * could not be reset: peak since the process started")
			break
		}
	}
	fmt.Fprintln(w, ".")
	return nil
}

func fmtMS(v float64) string {
	if v >= 1000 && v == float64(int64(v/1000))*1000 {
		return fmt.Sprintf("%.0fs", v/1000)
	}
	return fmt.Sprintf("%gms", v)
}
