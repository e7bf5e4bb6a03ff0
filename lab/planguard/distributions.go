package planguard

// Distribution is a synthetic content of the queue tables, generated on
// the server from a row number n = 1..Jobs.
type Distribution struct {
	Name  string
	About string
	// Jobs is the number of job rows; RunSize groups consecutive ids into
	// runs (run_id = (n-1)/RunSize + 1); Queues spreads them over queues
	// q0..q(Queues-1) by n mod Queues ("default" when Queues <= 1).
	Jobs, RunSize, Queues int
	// Status is a SQL expression over n giving the job's status; it must
	// be portable between the dialects (CASE, %, IN).
	Status string
	// Edges are the workflow edges loaded into lockstep_job_deps.
	Edges []Edges
}

// Edges is a set of workflow edges generated from n = 1..Count: job Job
// depends on job On (SQL expressions over n), where Where holds.
type Edges struct {
	Count          int
	Job, On, Where string
}

// waitingOnPrevious makes every WAITING job of a distribution depend on
// the job before it: some workflows in the table, so that every
// distribution has edges and WAITING jobs for the workflow statements.
func waitingOnPrevious(jobs int, status string) []Edges {
	return []Edges{{Count: jobs, Job: "n", On: "n - 1", Where: "(" + status + ") = 'WAITING'"}}
}

// Runs is the number of run rows the distribution needs.
func (d Distribution) Runs() int {
	if d.RunSize <= 0 || d.Jobs <= 0 {
		return 0
	}
	return (d.Jobs + d.RunSize - 1) / d.RunSize
}

// Default returns the distributions the guard checks: the data shapes under
// which an optimizer is most tempted to leave the declared path.
func Default() []Distribution {
	return []Distribution{
		NearEmpty(), FreshRun(), AlmostDone(), MillionMostlyDone(), Backlog(), WideFanIn(), ManyWaiting(),
	}
}

// withWaiting fills a distribution's edges from its WAITING jobs.
func withWaiting(d Distribution) Distribution {
	d.Edges = waitingOnPrevious(d.Jobs, d.Status)
	return d
}

// NearEmpty: five jobs, one of each status a statement expects. Statistics
// say every range is tiny, so every index looks as cheap as the primary key.
func NearEmpty() Distribution {
	return withWaiting(Distribution{
		Name: "near-empty", About: "5 jobs in one run: DONE, RUNNING, PENDING, FAILED, WAITING (on the FAILED one)",
		Jobs: 5, RunSize: 5, Queues: 1,
		Status: "CASE WHEN n = 1 THEN 'DONE' WHEN n = 2 THEN 'RUNNING' WHEN n = 4 THEN 'FAILED' WHEN n = 5 THEN 'WAITING' ELSE 'PENDING' END",
	})
}

// FreshRun: a run just enqueued, all PENDING, beside an older run that is
// finishing. The published MySQL 8.4 plan for the range cancel here was idx_run.
func FreshRun() Distribution {
	return withWaiting(Distribution{
		Name: "fresh-run", About: "run 2: 1,000 PENDING; run 1: 994 DONE, 1 FAILED, 5 RUNNING; run 3: 100 WAITING in a chain",
		Jobs: 2100, RunSize: 1000, Queues: 1,
		Status: "CASE WHEN n > 2000 THEN 'WAITING' WHEN n > 1000 THEN 'PENDING' WHEN n > 995 THEN 'RUNNING' WHEN n = 2 THEN 'FAILED' ELSE 'DONE' END",
	})
}

// AlmostDone is the dangerous case of the claim/cancel deadlock: runs with 2 PENDING jobs
// of 1,000, where a status-led index looks far cheaper than the run index
// or the primary key, and the cancel's lock order flips.
func AlmostDone() Distribution {
	return withWaiting(Distribution{
		Name: "almost-done", About: "10 runs of 1,000: 2 PENDING and 1 WAITING each, 1 RUNNING and 1 FAILED in all, the rest DONE",
		Jobs: 10000, RunSize: 1000, Queues: 1,
		Status: "CASE WHEN n % 1000 IN (999, 0) THEN 'PENDING' WHEN n % 1000 = 1 AND n > 1 THEN 'WAITING' WHEN n = 5500 THEN 'RUNNING' WHEN n = 2 THEN 'FAILED' ELSE 'DONE' END",
	})
}

// MillionMostlyDone: a table that has run for a while.
func MillionMostlyDone() Distribution {
	return withWaiting(Distribution{
		Name: "million-mostly-done", About: "1,000,000 jobs in 4 queues: 3,003 PENDING, 3,003 WAITING, 50 RUNNING, 50 FAILED, the rest DONE",
		Jobs: 1_000_000, RunSize: 1000, Queues: 4,
		Status: "CASE WHEN n % 333 = 0 THEN 'PENDING' WHEN n % 333 = 1 AND n > 1 THEN 'WAITING' WHEN n % 20000 = 1 THEN 'RUNNING' WHEN n % 20000 = 2 THEN 'FAILED' ELSE 'DONE' END",
	})
}

// Backlog: far more work than workers.
func Backlog() Distribution {
	return withWaiting(Distribution{
		Name: "backlog", About: "200,000 jobs: 999 DONE, 1 FAILED, 20 RUNNING, 19,900 WAITING, the rest PENDING",
		Jobs: 200_000, RunSize: 1000, Queues: 1,
		Status: "CASE WHEN n % 10000 = 1 THEN 'RUNNING' WHEN n = 2 THEN 'FAILED' WHEN n <= 1000 THEN 'DONE' WHEN n % 10 = 5 THEN 'WAITING' ELSE 'PENDING' END",
	})
}

// WideFanIn: one run, 1 → 2,000 → 1: a root DONE, 2,000 jobs that depend
// on it (most DONE, some RUNNING and PENDING), and one job WAITING on all
// 2,000 — the dependents of one job, and the dependencies of another, are
// both wide.
func WideFanIn() Distribution {
	return Distribution{
		Name: "wide-fan-in", About: "1 → 2,000 → 1 in one run: root DONE; 1,900 DONE, 20 RUNNING, 1 FAILED, 79 PENDING; the fan-in WAITING on 2,000",
		Jobs: 2002, RunSize: 2002, Queues: 1,
		Status: "CASE WHEN n = 2002 THEN 'WAITING' WHEN n = 1 THEN 'DONE' WHEN n = 3 THEN 'FAILED' WHEN n % 100 = 0 THEN 'RUNNING' WHEN n > 1922 THEN 'PENDING' ELSE 'DONE' END",
		Edges: []Edges{
			{Count: 2000, Job: "n + 1", On: "1"},
			{Count: 2000, Job: "2002", On: "n + 1"},
		},
	}
}

// ManyWaiting: thousands of WAITING jobs beside the claimable ones — the
// claim's range must never reach them.
func ManyWaiting() Distribution {
	return withWaiting(Distribution{
		Name: "many-waiting", About: "100,000 jobs: 90,000 WAITING in chains of 10, 9,000 PENDING, 10 RUNNING, 1 FAILED, the rest DONE",
		Jobs: 100_000, RunSize: 1000, Queues: 1,
		Status: "CASE WHEN n = 2 THEN 'FAILED' WHEN n % 10000 = 1 THEN 'RUNNING' WHEN n % 10 <> 1 THEN 'WAITING' WHEN n <= 10000 THEN 'DONE' ELSE 'PENDING' END",
	})
}
