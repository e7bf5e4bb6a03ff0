package limits

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/lockstep-queue/lockstep/bench/internal/throughput"
)

// Summary is one system's runs of one scenario.
type Summary struct {
	System   string  `json:"system"`
	Scenario string  `json:"scenario"`
	Runs     int     `json:"runs"`
	Median   float64 `json:"median_jobs_per_sec"`
	Min      float64 `json:"min_jobs_per_sec"`
	Max      float64 `json:"max_jobs_per_sec"`
	// Ratio is the median over repetitions of the scenario's jobs/s over
	// None's in the same repetition (0 without a None run).
	Ratio float64 `json:"median_ratio_to_none,omitempty"`
	// Rate: the median steady starts/s and the most starts in a window
	// over every run.
	StartsPerSec float64 `json:"median_starts_per_sec,omitempty"`
	MaxInWindow  int     `json:"max_starts_in_window,omitempty"`
}

// ratio is a run's jobs/s over the None run's of its system and
// repetition, 0 without one.
func (rep *Report) ratio(r Result) float64 {
	for _, x := range rep.Runs {
		if x.System == r.System && x.Rep == r.Rep && x.Scenario == None && x.JobsPerSec > 0 {
			return r.JobsPerSec / x.JobsPerSec
		}
	}
	return 0
}

func (rep *Report) summarize() {
	rep.Summaries = nil
	for _, system := range rep.Config.Systems {
		for _, scenario := range rep.Config.Scenarios {
			var rates, ratios, starts []float64
			s := Summary{System: system, Scenario: scenario}
			for _, r := range rep.Runs {
				if r.System != system || r.Scenario != scenario {
					continue
				}
				rates = append(rates, r.JobsPerSec)
				if x := rep.ratio(r); x > 0 && scenario != None && scenario != Rate {
					ratios = append(ratios, x)
				}
				starts = append(starts, r.StartsPerSec)
				s.MaxInWindow = max(s.MaxInWindow, r.MaxInWindow)
			}
			if len(rates) == 0 {
				continue
			}
			s.Runs = len(rates)
			s.Median, s.Min, s.Max = median(rates), slices.Min(rates), slices.Max(rates)
			s.Ratio = median(ratios)
			if scenario == Rate {
				s.StartsPerSec = median(starts)
			}
			rep.Summaries = append(rep.Summaries, s)
		}
	}
}

// median of values, 0 for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

func (rep *Report) summary(system, scenario string) (Summary, bool) {
	for _, s := range rep.Summaries {
		if s.System == system && s.Scenario == scenario {
			return s, true
		}
	}
	return Summary{}, false
}

// WriteText prints the report as Markdown, ready for BENCHMARKS.md.
func (rep *Report) WriteText(w io.Writer) error {
	b := &strings.Builder{}
	c := rep.Config
	m := rep.Machine
	fmt.Fprintf(b, "## Claim throughput under queue limits\n\n")
	fmt.Fprintf(b, "Machine: %d CPUs (%s), %.1f GiB memory, %s", m.CPUs, m.GoArch, m.MemoryGiB, m.Go)
	for _, v := range []struct{ name, version string }{{"PostgreSQL", m.Postgres}, {"MariaDB", m.MariaDB}, {"Oracle MySQL", m.MySQL}} {
		if v.version != "" {
			fmt.Fprintf(b, "; %s %s", v.name, v.version)
		}
	}
	fmt.Fprintf(b, ".\n")
	fmt.Fprintf(b, "Clients: %d, each on its own connection pool with %d workers on the measured queue; "+
		"MinPollInterval %s, PollInterval %s. No-op jobs; a job counts once its DONE is reported committed "+
		"(EventJobFinished), and the database's DONE count is checked after each run. "+
		"RUNNING jobs counted every %s in one statement (peak columns).\n",
		c.Clients, c.Workers, throughput.LockstepMinPollInterval, throughput.LockstepPollInterval, c.SampleEvery)
	fmt.Fprintf(b, "Scenarios, each a burn-down of jobs inserted before the clients start, on a fresh database, "+
		"timed from the first Start to the last completion:\n")
	for _, s := range c.Scenarios {
		switch s {
		case None:
			fmt.Fprintf(b, "- %s: %d jobs, no limits (the baseline; \"vs none\" is a run's jobs/s over this one's, same system and repetition)\n", s, c.Jobs)
		case Global:
			fmt.Fprintf(b, "- %s: %d jobs, Concurrency %d\n", s, c.Jobs, c.Concurrency)
		case Keys:
			premade := ""
			if c.KeysPremade {
				premade = "; every key's row made before the run (--keys-premade)"
			}
			fmt.Fprintf(b, "- %s: %d jobs round-robin over %d keys (job i has key i mod %d), KeyConcurrency %d%s\n",
				s, c.Jobs, c.Keys, c.Keys, c.KeyConcurrency, premade)
		case Beside:
			fmt.Fprintf(b, "- %s: %d jobs, no limits, while a second queue with Concurrency 1 and %d jobs queued "+
				"(each taking %s) is served by %d workers in each client\n", s, c.Jobs, c.SerialJobs, c.SerialWork, c.SerialWorkers)
		case Rate:
			fmt.Fprintf(b, "- %s: %d jobs, Rate %d per %s (queue-wide); starts by the database's started_at\n",
				s, c.RateJobs, c.Rate, c.RatePeriod)
		}
	}
	b.WriteString("\n")

	b.WriteString("### Medians\n\n")
	var rows [][]string
	for _, system := range c.Systems {
		row := []string{system}
		for _, sc := range []string{None, Global, Keys, Beside} {
			s, ok := rep.summary(system, sc)
			switch {
			case !ok:
				row = append(row, "–")
				if sc != None {
					row = append(row, "–")
				}
			case sc == None:
				row = append(row, fmt.Sprintf("%.0f", s.Median))
			default:
				row = append(row, fmt.Sprintf("%.0f", s.Median), ratioText(s.Ratio))
			}
		}
		if s, ok := rep.summary(system, Rate); ok {
			row = append(row, fmt.Sprintf("%.0f", s.StartsPerSec), fmt.Sprint(s.MaxInWindow))
		} else {
			row = append(row, "–", "–")
		}
		rows = append(rows, row)
	}
	throughput.WriteTable(b, []string{"system", "none jobs/s", "global jobs/s", "vs none", "keys jobs/s", "vs none",
		"beside-serial jobs/s", "vs none", "rate starts/s", "most starts in a window"}, "lrrrrrrrrr", rows)
	fmt.Fprintf(b, "\nvs none: the median of the repetitions' ratios. rate starts/s: the run's starts over their span "+
		"plus one period (a limit of %d per %s starts the first %d at once and each later %d a period after the ones before: "+
		"k×%d starts span k-1 periods); most starts in a window: over every run, in any window (t-%s, t], "+
		"the window the limit counts.\n\n", c.Rate, c.RatePeriod, c.Rate, c.Rate, c.Rate, c.RatePeriod)

	b.WriteString("### Every run\n\n")
	rows = nil
	for _, r := range rep.Runs {
		// Rate's limit binds: its jobs/s is the limit's, not a cost.
		vs := "–"
		if r.Scenario != None && r.Scenario != Rate {
			vs = ratioText(rep.ratio(r))
		}
		stmts := "–"
		if r.StatementsPerJob > 0 {
			stmts = fmt.Sprintf("%.2f", r.StatementsPerJob)
		}
		key := "–"
		if r.Scenario == Keys {
			key = fmt.Sprint(r.PeakKeyRunning)
		}
		rows = append(rows, []string{r.System, fmt.Sprint(r.Rep), r.Scenario, fmt.Sprint(r.Jobs), fmt.Sprintf("%.2f", r.Seconds),
			fmt.Sprintf("%.0f", r.JobsPerSec), vs, fmt.Sprintf("%.3f", float64(r.Claims)/float64(max(r.Jobs, 1))),
			fmt.Sprint(r.Blocked), fmt.Sprint(r.Deferred), fmt.Sprint(r.PeakRunning), key, stmts, fmt.Sprintf("%.1f", r.Load)})
	}
	throughput.WriteTable(b, []string{"system", "rep", "scenario", "jobs", "seconds", "jobs/s", "vs none", "claims/job",
		"blocked", "deferred", "peak RUNNING", "peak per key", "statements/job", "load"}, "lrlrrrrrrrrrrr", rows)
	fmt.Fprintf(b, "\nclaims/job: claim transactions of the measured queue (empty ones too) per job. "+
		"blocked, deferred: jobs the claims made BLOCKED or deferred (EventLimited). "+
		"statements/job: every statement the server ran during the run (PostgreSQL: pg_stat_statements; "+
		"MariaDB and MySQL: Questions), the RUNNING counts left out. load: the machine's 1-minute load average "+
		"at the end of the run (/proc/loadavg; %d CPUs).\n\n", m.CPUs)

	var rate, beside [][]string
	for _, r := range rep.Runs {
		switch r.Scenario {
		case Rate:
			rate = append(rate, []string{r.System, fmt.Sprint(r.Rep), fmt.Sprintf("%.0f", r.StartsPerSec),
				fmt.Sprint(r.MaxInWindow), fmt.Sprintf("%.0f", r.JobsPerSec), fmt.Sprintf("%.1f", float64(r.Claims)/r.Seconds)})
		case Beside:
			beside = append(beside, []string{r.System, fmt.Sprint(r.Rep), fmt.Sprintf("%.0f", r.JobsPerSec), ratioText(rep.ratio(r)),
				fmt.Sprint(r.SerialDone), fmt.Sprintf("%.0f", float64(r.SerialDone)/r.Seconds), fmt.Sprint(r.SerialPeakRunning), fmt.Sprint(r.SerialLeft)})
		}
	}
	if len(rate) > 0 {
		fmt.Fprintf(b, "### rate: %d per %s\n\n", c.Rate, c.RatePeriod)
		throughput.WriteTable(b, []string{"system", "rep", "starts/s", "most starts in a window",
			"jobs/s (whole run)", "claims/s"}, "lrrrrr", rate)
		b.WriteString("\n")
	}
	if len(beside) > 0 {
		fmt.Fprintf(b, "### beside-serial: the serial queue (Concurrency 1) during the run\n\n")
		throughput.WriteTable(b, []string{"system", "rep", "unlimited jobs/s", "vs none", "serial jobs done",
			"serial jobs/s", "serial peak RUNNING", "serial still PENDING"}, "lrrrrrrr", beside)
		b.WriteString("\nserial still PENDING: at the end; above 0, the serial queue was busy for the whole run.\n\n")
	}
	rep.writeDBStats(b)
	if len(rep.Violations) > 0 {
		b.WriteString("### LIMITS EXCEEDED\n\n")
		for _, v := range rep.Violations {
			fmt.Fprintf(b, "- %s\n", v)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeDBStats prints, for the last run of each system and scenario, the
// statements the server ran most, per job.
func (rep *Report) writeDBStats(b *strings.Builder) {
	last := map[string]Result{}
	var order []string
	for _, r := range rep.Runs {
		if r.DB == nil {
			continue
		}
		key := r.System + " " + r.Scenario
		if _, ok := last[key]; !ok {
			order = append(order, key)
		}
		last[key] = r
	}
	if len(order) == 0 {
		return
	}
	b.WriteString("### Statements per job (last run of each)\n\n```\n")
	for _, key := range order {
		r := last[key]
		fmt.Fprintf(b, "%s, %s: %.2f statements/job\n", r.System, r.Scenario, r.StatementsPerJob)
		for _, t := range r.DB.Top {
			if t.RowsPerCall > 0 || t.MeanMillis > 0 {
				fmt.Fprintf(b, "    %6.3f/job  %7.1f rows/call  %7.3f ms  %s\n", t.CallsPerJob, t.RowsPerCall, t.MeanMillis, t.Statement)
			} else {
				fmt.Fprintf(b, "    %-22s %6.3f/job\n", t.Statement, t.CallsPerJob)
			}
		}
	}
	b.WriteString("```\n\n")
}

func ratioText(x float64) string {
	if x <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", x)
}
