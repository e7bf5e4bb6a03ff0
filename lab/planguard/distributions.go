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
		NearEmpty(), FreshRun(), AlmostDone(), MillionMostlyDone(), Backlog(),
	}
}

// NearEmpty: four jobs, one of each status a statement expects. Statistics say
// every range is tiny, so every index looks as cheap as the primary key.
func NearEmpty() Distribution {
	return Distribution{
		Name: "near-empty", About: "4 jobs in one run: DONE, RUNNING, PENDING, FAILED",
		Jobs: 4, RunSize: 4, Queues: 1,
		Status: "CASE WHEN n = 1 THEN 'DONE' WHEN n = 2 THEN 'RUNNING' WHEN n = 4 THEN 'FAILED' ELSE 'PENDING' END",
	}
}

// FreshRun: a run just enqueued, all PENDING, beside an older run that is
// finishing. The published MySQL 8.4 plan for the range cancel here was idx_run.
func FreshRun() Distribution {
	return Distribution{
		Name: "fresh-run", About: "run 2: 1,000 PENDING; run 1: 994 DONE, 1 FAILED, 5 RUNNING",
		Jobs: 2000, RunSize: 1000, Queues: 1,
		Status: "CASE WHEN n > 1000 THEN 'PENDING' WHEN n > 995 THEN 'RUNNING' WHEN n = 2 THEN 'FAILED' ELSE 'DONE' END",
	}
}

// AlmostDone is the dangerous case of the claim/cancel deadlock: runs with 2 PENDING jobs
// of 1,000, where a status-led index looks far cheaper than the run index
// or the primary key, and the cancel's lock order flips.
func AlmostDone() Distribution {
	return Distribution{
		Name: "almost-done", About: "10 runs of 1,000: 2 PENDING each, 1 RUNNING and 1 FAILED in all, the rest DONE",
		Jobs: 10000, RunSize: 1000, Queues: 1,
		Status: "CASE WHEN n % 1000 IN (999, 0) THEN 'PENDING' WHEN n = 5500 THEN 'RUNNING' WHEN n = 2 THEN 'FAILED' ELSE 'DONE' END",
	}
}

// MillionMostlyDone: a table that has run for a while.
func MillionMostlyDone() Distribution {
	return Distribution{
		Name: "million-mostly-done", About: "1,000,000 jobs in 4 queues: 3,003 PENDING, 50 RUNNING, 50 FAILED, the rest DONE",
		Jobs: 1_000_000, RunSize: 1000, Queues: 4,
		Status: "CASE WHEN n % 333 = 0 THEN 'PENDING' WHEN n % 20000 = 1 THEN 'RUNNING' WHEN n % 20000 = 2 THEN 'FAILED' ELSE 'DONE' END",
	}
}

// Backlog: far more work than workers.
func Backlog() Distribution {
	return Distribution{
		Name: "backlog", About: "200,000 jobs: 999 DONE, 1 FAILED, 20 RUNNING, the rest PENDING",
		Jobs: 200_000, RunSize: 1000, Queues: 1,
		Status: "CASE WHEN n % 10000 = 1 THEN 'RUNNING' WHEN n = 2 THEN 'FAILED' WHEN n <= 1000 THEN 'DONE' ELSE 'PENDING' END",
	}
}
