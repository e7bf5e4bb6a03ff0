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
	// be portable between the dialects (CASE, %, IN). 'CANCELLING' is a
	// job cancelled while it ran whose worker has not stopped yet: it is
	// loaded as CANCELLED with finished_at unset and a fresh heartbeat, the
	// row a limited queue still counts as holding its slot.
	Status string
	// LimitKey is a SQL expression over n giving the job's limit_key, NULL
	// for a job without one ("" means no job has a key). Every queue of a
	// distribution is a limited queue (lockstep_queues row with limits):
	// each key its jobs carry has its lockstep_limit_keys row, and the
	// starts of its RUNNING (and cancelling) jobs, with some old ones a
	// claim would prune, are in lockstep_limit_starts.
	LimitKey string
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

// limitsSQL are the limits every queue of a distribution has: concurrency,
// key_concurrency, sequence, rate, rate_period_us, rate_by_key (50 at
// once, one per key, 1,000 starts a second per key).
const limitsSQL = "50, 1, 0, 1000, 1000000, 1"

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

// NearEmpty: seven jobs, one of each status a statement expects, four
// of them under one limit key. Statistics say every range is tiny, so
// every index looks as cheap as the primary key.
func NearEmpty() Distribution {
	return withWaiting(Distribution{
		Name: "near-empty", About: "7 jobs in one run: DONE, RUNNING, PENDING, FAILED, WAITING (on the FAILED one), BLOCKED, cancelled while running; the RUNNING, PENDING, BLOCKED and cancelled ones under one limit key",
		Jobs: 7, RunSize: 7, Queues: 1,
		Status:   "CASE WHEN n = 1 THEN 'DONE' WHEN n = 2 THEN 'RUNNING' WHEN n = 4 THEN 'FAILED' WHEN n = 5 THEN 'WAITING' WHEN n = 6 THEN 'BLOCKED' WHEN n = 7 THEN 'CANCELLING' ELSE 'PENDING' END",
		LimitKey: "CASE WHEN n IN (2, 3, 6, 7) THEN 'k1' END",
	})
}

// FreshRun: a run just enqueued, all live, beside an older run that is
// finishing. The published MySQL 8.4 plan for the range cancel here was
// idx_run. The new run's jobs are spread over 20 limit keys, the last 50
// of them BLOCKED behind their keys' RUNNING jobs.
func FreshRun() Distribution {
	return withWaiting(Distribution{
		Name: "fresh-run", About: "run 2: 950 PENDING, 50 BLOCKED over 20 limit keys; run 1: 993 DONE, 1 FAILED, 5 RUNNING (keyed), 1 cancelled while running; run 3: 100 WAITING in a chain",
		Jobs: 2100, RunSize: 1000, Queues: 1,
		Status:   "CASE WHEN n > 2000 THEN 'WAITING' WHEN n > 1950 THEN 'BLOCKED' WHEN n > 1000 THEN 'PENDING' WHEN n > 995 THEN 'RUNNING' WHEN n = 2 THEN 'FAILED' WHEN n = 3 THEN 'CANCELLING' ELSE 'DONE' END",
		LimitKey: "CASE WHEN (n > 995 AND n <= 2000) OR n = 3 THEN concat('k', n % 20) END",
	})
}

// AlmostDone is the dangerous case of the claim/cancel deadlock: runs with 2 PENDING jobs
// of 1,000, where a status-led index looks far cheaper than the run index
// or the primary key, and the cancel's lock order flips. Runs 7 to 10 also
// hold a keyed PENDING and a BLOCKED job each (after the rows the
// interleavings of lab/lockorder use).
func AlmostDone() Distribution {
	return withWaiting(Distribution{
		Name: "almost-done", About: "10 runs of 1,000: 2 PENDING and 1 WAITING each, runs 7–10 also 1 keyed PENDING and 1 BLOCKED each (3 keys), 1 RUNNING, 1 FAILED and 1 cancelled while running in all, the rest DONE",
		Jobs: 10000, RunSize: 1000, Queues: 1,
		Status: "CASE WHEN n % 1000 IN (999, 0) THEN 'PENDING' WHEN n % 1000 = 1 AND n > 1 THEN 'WAITING' WHEN n = 5500 THEN 'RUNNING' WHEN n = 2 THEN 'FAILED'" +
			" WHEN n > 6000 AND n % 1000 = 997 THEN 'PENDING' WHEN n > 6000 AND n % 1000 = 998 THEN 'BLOCKED' WHEN n = 4500 THEN 'CANCELLING' ELSE 'DONE' END",
		LimitKey: "CASE WHEN (n > 6000 AND n % 1000 IN (997, 998)) OR n = 4500 THEN concat('k', n % 3) END",
	})
}

// MillionMostlyDone: a table that has run for a while, a seventh of its
// jobs and every BLOCKED one under one of 500 limit keys.
func MillionMostlyDone() Distribution {
	return withWaiting(Distribution{
		Name: "million-mostly-done", About: "1,000,000 jobs in 4 queues: 3,003 PENDING, 3,003 WAITING, 3,002 BLOCKED, 50 RUNNING, 50 FAILED, 50 cancelled while running, the rest DONE; about 151,000 under 500 limit keys (every PENDING, BLOCKED, RUNNING and cancelled one)",
		Jobs: 1_000_000, RunSize: 1000, Queues: 4,
		Status: "CASE WHEN n % 333 = 0 THEN 'PENDING' WHEN n % 333 = 1 AND n > 1 THEN 'WAITING' WHEN n % 20000 = 1 THEN 'RUNNING' WHEN n % 20000 = 2 THEN 'FAILED'" +
			" WHEN n % 20000 = 3 THEN 'CANCELLING' WHEN n % 333 = 2 THEN 'BLOCKED' ELSE 'DONE' END",
		LimitKey: "CASE WHEN n % 333 IN (0, 2) OR n % 7 = 0 OR n % 20000 IN (1, 3) THEN concat('k', n % 500) END",
	})
}

// Backlog: far more work than workers, and a tenth of it BLOCKED behind
// its keys.
func Backlog() Distribution {
	return withWaiting(Distribution{
		Name: "backlog", About: "200,000 jobs: 997 DONE, 1 FAILED, 20 RUNNING, 1 cancelled while running, 19,900 WAITING, 19,900 BLOCKED, the rest PENDING; 3 in 10 under 300 limit keys",
		Jobs: 200_000, RunSize: 1000, Queues: 1,
		Status: "CASE WHEN n % 10000 = 1 THEN 'RUNNING' WHEN n = 2 THEN 'FAILED' WHEN n = 3 THEN 'CANCELLING' WHEN n <= 1000 THEN 'DONE' WHEN n % 10 = 5 THEN 'WAITING'" +
			" WHEN n % 10 = 7 THEN 'BLOCKED' ELSE 'PENDING' END",
		LimitKey: "CASE WHEN n % 10 IN (1, 3, 7) THEN concat('k', n % 1000) END",
	})
}

// WideFanIn: one run, 1 → 2,000 → 1: a root DONE, 2,000 jobs that depend
// on it (most DONE, some RUNNING, BLOCKED and PENDING), and one job
// WAITING on all 2,000 — the dependents of one job, and the dependencies
// of another, are both wide.
func WideFanIn() Distribution {
	return Distribution{
		Name: "wide-fan-in", About: "1 → 2,000 → 1 in one run: root DONE; 1,878 DONE, 20 RUNNING, 1 FAILED, 1 cancelled while running, 22 BLOCKED, 78 PENDING (10 limit keys); the fan-in WAITING on 2,000",
		Jobs: 2002, RunSize: 2002, Queues: 1,
		Status: "CASE WHEN n = 2002 THEN 'WAITING' WHEN n = 1 THEN 'DONE' WHEN n = 3 THEN 'FAILED' WHEN n = 4 THEN 'CANCELLING' WHEN n % 100 = 0 THEN 'RUNNING'" +
			" WHEN n > 1922 THEN 'PENDING' WHEN n > 1900 THEN 'BLOCKED' ELSE 'DONE' END",
		LimitKey: "CASE WHEN (n > 1900 AND n < 2002) OR n % 100 = 0 OR n = 4 THEN concat('k', n % 10) END",
		Edges: []Edges{
			{Count: 2000, Job: "n + 1", On: "1"},
			{Count: 2000, Job: "2002", On: "n + 1"},
		},
	}
}

// ManyWaiting: thousands of WAITING jobs beside the claimable ones — the
// claim's range must never reach them, nor the BLOCKED ones beside them.
func ManyWaiting() Distribution {
	return withWaiting(Distribution{
		Name: "many-waiting", About: "100,000 jobs: 89,999 WAITING in chains of 10, 8,091 PENDING, 900 BLOCKED, 10 RUNNING, 1 FAILED, 1 cancelled while running, the rest DONE; the live ones under 100 limit keys",
		Jobs: 100_000, RunSize: 1000, Queues: 1,
		Status: "CASE WHEN n = 2 THEN 'FAILED' WHEN n = 11 THEN 'CANCELLING' WHEN n % 10000 = 1 THEN 'RUNNING' WHEN n % 10 <> 1 THEN 'WAITING' WHEN n <= 10000 THEN 'DONE'" +
			" WHEN n % 100 = 11 THEN 'BLOCKED' ELSE 'PENDING' END",
		LimitKey: "CASE WHEN (n % 10 = 1 AND n > 10000) OR n = 11 THEN concat('k', n % 1000) END",
	})
}
