package lockstep_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/internal/clienttest"
)

// limitArgs are jobs of a limited queue; the kind derives its limit key
// from its args, as a kind usually does.
type limitArgs struct {
	N    int    `json:"n"`
	Key  string `json:"key"`
	Fail bool   `json:"fail,omitempty"`
}

func (limitArgs) Kind() string { return "limit_test" }

func (a limitArgs) InsertOpts() lockstep.InsertOpts {
	return lockstep.InsertOpts{Queue: "limited", LimitKey: a.Key}
}

// execution is one run of a job by a worker: the ledger's row.
type execution struct {
	id      int64
	key     string
	attempt int
	who     string
	// start and end are the worker's own clock (one process, one clock);
	// claimed is the database's start of the attempt (started_at).
	start, end, claimed time.Time
}

// execLedger records every execution of every worker of every client.
type execLedger struct {
	mu   sync.Mutex
	runs []execution
}

func (l *execLedger) add(e execution) {
	l.mu.Lock()
	l.runs = append(l.runs, e)
	l.mu.Unlock()
}

func (l *execLedger) all() []execution {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.runs)
}

// maxConcurrent is the most executions of one group (by key) that
// overlapped in time, per group.
func maxConcurrent(runs []execution, group func(execution) string) map[string]int {
	type edge struct {
		at    time.Time
		delta int
	}
	edges := map[string][]edge{}
	for _, r := range runs {
		g := group(r)
		edges[g] = append(edges[g], edge{r.start, +1}, edge{r.end, -1})
	}
	out := map[string]int{}
	for g, es := range edges {
		// Ends before starts at the same instant: touching is not overlap.
		slices.SortFunc(es, func(a, b edge) int {
			if c := a.at.Compare(b.at); c != 0 {
				return c
			}
			return a.delta - b.delta
		})
		n := 0
		for _, e := range es {
			n += e.delta
			out[g] = max(out[g], n)
		}
	}
	return out
}

// limitedRun is three clients with eight workers each on one database,
// draining a queue under limits.
type limitedRun struct {
	drvs   []driver.Driver
	ledger *execLedger
	// work runs inside each execution; nil does nothing.
	work func(ctx context.Context, j *lockstep.Job[limitArgs]) error
	// beforeStart, when set, prepares each client before it starts;
	// onEvent receives every client's events.
	beforeStart func(i int, c *lockstep.Client)
	onEvent     func(lockstep.Event)
}

func (r *limitedRun) start(t *testing.T, clients, workers int) []*lockstep.Client {
	t.Helper()
	var out []*lockstep.Client
	for i := range clients {
		who := fmt.Sprintf("client-%d", i)
		ws := lockstep.NewWorkers()
		lockstep.AddWorker(ws, lockstep.WorkFunc(func(ctx context.Context, j *lockstep.Job[limitArgs]) error {
			e := execution{id: j.ID, key: j.Args.Key, attempt: j.Attempts, who: who, start: time.Now(), claimed: j.StartedAt}
			var err error
			if r.work != nil {
				err = r.work(ctx, j)
			}
			e.end = time.Now()
			r.ledger.add(e)
			return err
		}))
		cfg := clienttest.FastConfig(ws)
		cfg.Queues = map[string]lockstep.QueueConfig{"limited": {MaxWorkers: workers}}
		cfg.Logger = quietBadInputLogger()
		cfg.OnEvent = r.onEvent
		c, err := lockstep.NewClient(r.drvs[i%len(r.drvs)], cfg)
		require.NoError(t, err)
		if r.beforeStart != nil {
			r.beforeStart(i, c)
		}
		require.NoError(t, c.Start(context.Background()))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = c.StopAndCancel(ctx)
		})
		out = append(out, c)
	}
	return out
}

// enqueueLimited sets the queue's limits and inserts the jobs through a
// client of its own.
func enqueueLimited(t *testing.T, drv driver.Driver, limits lockstep.QueueLimits, args []limitArgs) []int64 {
	t.Helper()
	ctx := context.Background()
	c, err := lockstep.NewClient(drv, lockstep.Config{Logger: quietBadInputLogger()})
	require.NoError(t, err)
	require.NoError(t, c.SetQueueLimits(ctx, "limited", limits))
	var ids []int64
	for start := 0; start < len(args); start += 1000 {
		var params []lockstep.InsertManyParams
		for _, a := range args[start:min(start+1000, len(args))] {
			params = append(params, lockstep.InsertManyParams{Args: a})
		}
		res, err := c.InsertMany(ctx, params)
		require.NoError(t, err)
		ids = append(ids, insertedIDs(res)...)
	}
	return ids
}

// waitFinal waits until no job of the queue is live.
func waitFinal(t *testing.T, drv driver.Driver, limit time.Duration) {
	t.Helper()
	eventually(t, limit, "every job of the limited queue to end", func() bool {
		return countWhere(t, drv, "queue = 'limited' AND status IN ('WAITING', 'PENDING', 'BLOCKED', 'RUNNING')") == 0
	})
}

// requireOncePerJob checks that every job ran once and ended DONE.
func requireOncePerJob(t *testing.T, drv driver.Driver, ids []int64, runs []execution) {
	t.Helper()
	byID := map[int64]int{}
	for _, r := range runs {
		byID[r.id]++
	}
	for _, id := range ids {
		require.Equal(t, 1, byID[id], "job %d ran %d times", id, byID[id])
	}
	require.Equal(t, len(ids), countWhere(t, drv, "queue = 'limited' AND status = 'DONE'"))
}

// acceptanceSize is the load of the per-key and sequence tests: 5,000 jobs
// over 50 keys, or 1,000 over 20 under the race detector (make test runs
// them at full size without it too).
func acceptanceSize() (jobs, keys int) {
	if raceEnabled {
		return 1000, 20
	}
	return 5000, 50
}

// TestLimitKeyConcurrency: 5,000 jobs over 50 keys at one at a time per
// key, drained by three clients of eight workers: never two executions
// of one key overlap (by the workers' own clock), and every job is DONE
// once. The jobs are inserted key by key, so a claim's first candidates
// are all of one key: it must block them and reach the others.
func TestLimitKeyConcurrency(t *testing.T) {
	forEachDialectN(t, 3, func(t *testing.T, drvs []driver.Driver) {
		jobs, keys := acceptanceSize()
		args := make([]limitArgs, jobs)
		for i := range args {
			args[i] = limitArgs{N: i, Key: fmt.Sprintf("customer-%02d", i*keys/jobs)}
		}
		ids := enqueueLimited(t, drvs[0], lockstep.QueueLimits{KeyConcurrency: 1}, args)
		// A job takes a moment, as real ones do, so that keys overlap.
		r := &limitedRun{drvs: drvs, ledger: &execLedger{}, work: func(context.Context, *lockstep.Job[limitArgs]) error {
			time.Sleep(time.Millisecond)
			return nil
		}}
		r.start(t, 3, 8)
		waitFinal(t, drvs[0], 5*time.Minute)
		runs := r.ledger.all()
		for k, n := range maxConcurrent(runs, func(e execution) string { return e.key }) {
			require.LessOrEqual(t, n, 1, "key %s ran %d jobs at once", k, n)
		}
		requireOncePerJob(t, drvs[0], ids, runs)
		// More than one key ran at a time: the limit is per key.
		require.Greater(t, maxConcurrent(runs, func(execution) string { return "" })[""], 1)
	})
}

// TestLimitSequences: 5,000 jobs in 50 sequences, three clients: each
// sequence's jobs run one at a time in insert (id) order.
func TestLimitSequences(t *testing.T) {
	forEachDialectN(t, 3, func(t *testing.T, drvs []driver.Driver) {
		jobs, keys := acceptanceSize()
		args := make([]limitArgs, jobs)
		for i := range args {
			args[i] = limitArgs{N: i, Key: fmt.Sprintf("seq-%02d", i%keys)}
		}
		ids := enqueueLimited(t, drvs[0], lockstep.QueueLimits{Sequence: lockstep.SequenceRelease}, args)
		r := &limitedRun{drvs: drvs, ledger: &execLedger{}}
		r.start(t, 3, 8)
		waitFinal(t, drvs[0], 5*time.Minute)
		runs := r.ledger.all()
		requireOncePerJob(t, drvs[0], ids, runs)
		for k, n := range maxConcurrent(runs, func(e execution) string { return e.key }) {
			require.LessOrEqual(t, n, 1, "sequence %s ran %d jobs at once", k, n)
		}
		bySeq := map[string][]execution{}
		for _, e := range runs {
			bySeq[e.key] = append(bySeq[e.key], e)
		}
		for k, es := range bySeq {
			slices.SortFunc(es, func(a, b execution) int { return a.start.Compare(b.start) })
			for i := 1; i < len(es); i++ {
				require.Less(t, es[i-1].id, es[i].id, "sequence %s ran job %d after job %d", k, es[i].id, es[i-1].id)
			}
		}
	})
}

// TestLimitSequenceFailed: with SequenceHold a FAILED job holds the rest
// of its sequence BLOCKED until it is retried; with SequenceRelease the
// next job runs.
func TestLimitSequenceFailed(t *testing.T) {
	for _, policy := range []lockstep.SequencePolicy{lockstep.SequenceHold, lockstep.SequenceRelease} {
		t.Run(policy.String(), func(t *testing.T) {
			forEachDialect(t, func(t *testing.T, drv driver.Driver) {
				ctx := context.Background()
				args := []limitArgs{{N: 0, Key: "s", Fail: true}, {N: 1, Key: "s"}, {N: 2, Key: "s"}}
				ids := enqueueLimited(t, drv, lockstep.QueueLimits{Sequence: policy}, args)
				failOnce := map[int64]bool{}
				var mu sync.Mutex
				r := &limitedRun{drvs: []driver.Driver{drv}, ledger: &execLedger{}, work: func(ctx context.Context, j *lockstep.Job[limitArgs]) error {
					mu.Lock()
					defer mu.Unlock()
					if j.Args.Fail && !failOnce[j.ID] {
						failOnce[j.ID] = true
						return lockstep.Permanent(errors.New("the first attempt fails"))
					}
					return nil
				}}
				cs := r.start(t, 1, 4)
				jobStatus := func(id int64) lockstep.JobStatus {
					j, err := cs[0].Job(ctx, id)
					require.NoError(t, err)
					return j.Status
				}
				if policy == lockstep.SequenceRelease {
					waitFinal(t, drv, time.Minute)
					require.Equal(t, lockstep.StatusFailed, jobStatus(ids[0]))
					require.Equal(t, lockstep.StatusDone, jobStatus(ids[1]))
					require.Equal(t, lockstep.StatusDone, jobStatus(ids[2]))
					return
				}
				eventually(t, time.Minute, "the first job to fail", func() bool { return jobStatus(ids[0]) == lockstep.StatusFailed })
				// The next job is held: BLOCKED (a claim found it behind the
				// failed one), never run, as long as the failed job stays.
				eventually(t, time.Minute, "the second job to be blocked", func() bool { return jobStatus(ids[1]) == lockstep.StatusBlocked })
				cs[0].WaitProducerTurn(t, "limited")
				require.Equal(t, lockstep.StatusBlocked, jobStatus(ids[1]))
				require.Len(t, r.ledger.all(), 1)
				// Retried, the failed job runs first and the sequence goes on.
				_, err := cs[0].RetryJob(ctx, ids[0])
				require.NoError(t, err)
				waitFinal(t, drv, time.Minute)
				runs := r.ledger.all()
				require.Len(t, runs, 4)
				require.Equal(t, []int64{ids[0], ids[0], ids[1], ids[2]}, []int64{runs[0].id, runs[1].id, runs[2].id, runs[3].id})
			})
		})
	}
}

// requireRate checks that no window of length period holds more than rate
// starts of one group, by the database's start of each attempt (the time
// the claim recorded in the rate window).
func requireRate(t *testing.T, runs []execution, rate int, period time.Duration, group func(execution) string) {
	t.Helper()
	starts := map[string][]time.Time{}
	for _, r := range runs {
		require.False(t, r.claimed.IsZero())
		starts[group(r)] = append(starts[group(r)], r.claimed)
	}
	for g, ss := range starts {
		slices.SortFunc(ss, func(a, b time.Time) int { return a.Compare(b) })
		for i := range ss {
			// The starts in [ss[i], ss[i]+period).
			n := 0
			for j := i; j < len(ss) && ss[j].Before(ss[i].Add(period)); j++ {
				n++
			}
			require.LessOrEqual(t, n, rate, "group %q: %d starts within %s from %s", g, n, period, ss[i])
		}
	}
}

// statementRate counts a client's claim statements per second.
type statementRate struct {
	mu    sync.Mutex
	times []time.Time
}

func (s *statementRate) trace() *driver.StatementTrace {
	return &driver.StatementTrace{Before: func(context.Context, string) error {
		s.mu.Lock()
		s.times = append(s.times, time.Now())
		s.mu.Unlock()
		return nil
	}}
}

// busiest is the most statements in any one-second window.
func (s *statementRate) busiest() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	most := 0
	for i := range s.times {
		n := 0
		for j := i; j < len(s.times) && s.times[j].Sub(s.times[i]) < time.Second; j++ {
			n++
		}
		most = max(most, n)
	}
	return most
}

// TestLimitRate: a queue-wide rate of 10 starts per 500ms, three clients:
// never more than 10 starts in any 500ms window, every job done once, and
// the producers wait out a spent window instead of polling for it (their
// claim statements per second stay bounded while throttled).
func TestLimitRate(t *testing.T) {
	forEachDialectN(t, 3, func(t *testing.T, drvs []driver.Driver) {
		const jobs, rate, period = 60, 10, 500 * time.Millisecond
		args := make([]limitArgs, jobs)
		for i := range args {
			args[i] = limitArgs{N: i}
		}
		ids := enqueueLimited(t, drvs[0], lockstep.QueueLimits{Rate: rate, RatePeriod: period}, args)
		r := &limitedRun{drvs: drvs, ledger: &execLedger{}}
		rates := make([]*statementRate, 3)
		for i := range rates {
			rates[i] = &statementRate{}
		}
		r.beforeStart = func(i int, c *lockstep.Client) { c.SetClaimTrace(rates[i].trace()) }
		began := time.Now()
		r.start(t, 3, 8)
		waitFinal(t, drvs[0], 2*time.Minute)
		took := time.Since(began)
		runs := r.ledger.all()
		requireOncePerJob(t, drvs[0], ids, runs)
		requireRate(t, runs, rate, period, func(execution) string { return "" })
		// 60 jobs at 10 per 500ms take at least 2.5s.
		require.GreaterOrEqual(t, took, (jobs/rate-1)*period)
		for i, s := range rates {
			n := s.busiest()
			t.Logf("client %d: at most %d claim statements in one second (run took %s)", i, n, took.Round(time.Millisecond))
			// A producer polling a spent window would issue thousands.
			require.Less(t, n, 200, "client %d issued %d claim statements in one second", i, n)
		}
	})
}

// TestLimitRateByKey: a rate of 5 starts per 500ms per key: each key's
// starts stay under it, jobs over it are deferred (available_at moved)
// and run later, and keys do not hold one another back.
func TestLimitRateByKey(t *testing.T) {
	forEachDialectN(t, 3, func(t *testing.T, drvs []driver.Driver) {
		const jobs, keys, rate, period = 60, 3, 5, 500 * time.Millisecond
		args := make([]limitArgs, jobs)
		for i := range args {
			args[i] = limitArgs{N: i, Key: fmt.Sprintf("api-%d", i%keys)}
		}
		ids := enqueueLimited(t, drvs[0], lockstep.QueueLimits{Rate: rate, RatePeriod: period, RateByKey: true}, args)
		r := &limitedRun{drvs: drvs, ledger: &execLedger{}}
		var deferred sync.Map
		r.onEvent = func(e lockstep.Event) {
			if e.Kind == lockstep.EventLimited && e.Deferred > 0 {
				deferred.Store(e.Deferred, true)
			}
		}
		r.start(t, 3, 8)
		waitFinal(t, drvs[0], 2*time.Minute)
		runs := r.ledger.all()
		requireOncePerJob(t, drvs[0], ids, runs)
		requireRate(t, runs, rate, period, func(e execution) string { return e.key })
		n := 0
		deferred.Range(func(any, any) bool { n++; return true })
		require.Positive(t, n, "no claim deferred a job")
	})
}

// TestLimitConcurrency: a global limit of 5 across three clients of eight
// workers: never more than five executions at once.
func TestLimitConcurrency(t *testing.T) {
	forEachDialectN(t, 3, func(t *testing.T, drvs []driver.Driver) {
		const jobs, limit = 300, 5
		args := make([]limitArgs, jobs)
		for i := range args {
			args[i] = limitArgs{N: i}
		}
		ids := enqueueLimited(t, drvs[0], lockstep.QueueLimits{Concurrency: limit}, args)
		r := &limitedRun{drvs: drvs, ledger: &execLedger{}, work: func(context.Context, *lockstep.Job[limitArgs]) error {
			time.Sleep(time.Millisecond) // a job takes a moment, so that they overlap
			return nil
		}}
		r.start(t, 3, 8)
		waitFinal(t, drvs[0], 2*time.Minute)
		runs := r.ledger.all()
		requireOncePerJob(t, drvs[0], ids, runs)
		most := maxConcurrent(runs, func(execution) string { return "" })[""]
		require.LessOrEqual(t, most, limit)
		require.Greater(t, most, 1, "the limit is five, not one")
	})
}

// TestLimitCancelledKeepsSlot: a job cancelled while it runs keeps its
// slot until its worker returns — the worker may still be doing the work
// — and frees it then, without waiting for the reap limit.
func TestLimitCancelledKeepsSlot(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		ids := enqueueLimited(t, drv, lockstep.QueueLimits{Concurrency: 1}, []limitArgs{{N: 0}, {N: 1}})
		started := make(chan int64, 2)
		release := make(chan struct{})
		r := &limitedRun{drvs: []driver.Driver{drv}, ledger: &execLedger{}, work: func(ctx context.Context, j *lockstep.Job[limitArgs]) error {
			started <- j.ID
			if j.Args.N == 0 {
				<-release // a worker that does not stop at its context's end
			}
			return nil
		}}
		cs := r.start(t, 1, 4)
		require.Equal(t, ids[0], <-started)
		ok, err := cs[0].CancelJob(ctx, ids[0])
		require.NoError(t, err)
		require.True(t, ok)
		// The first job is CANCELLED, its worker still running: the
		// second must not start, however often the producer claims.
		for range 3 {
			cs[0].WaitProducerTurn(t, "limited")
		}
		j, err := cs[0].Job(ctx, ids[1])
		require.NoError(t, err)
		require.Equal(t, lockstep.StatusPending, j.Status)
		require.Empty(t, started)
		// The worker returns: its result is discarded, its slot freed.
		close(release)
		require.Equal(t, ids[1], <-started)
		waitFinal(t, drv, time.Minute)
		j, err = cs[0].Job(ctx, ids[0])
		require.NoError(t, err)
		require.Equal(t, lockstep.StatusCancelled, j.Status)
		require.False(t, j.FinishedAt.IsZero(), "the release records when the worker stopped")
	})
}

// TestLimitClearedReleasesBlocked: removing a queue's limits releases what
// they held back at once — here a sequence held by its FAILED first job,
// which no job of its key will ever end to release.
func TestLimitClearedReleasesBlocked(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		ids := enqueueLimited(t, drv, lockstep.QueueLimits{Sequence: lockstep.SequenceHold}, []limitArgs{{N: 0, Key: "s", Fail: true}, {N: 1, Key: "s"}})
		r := &limitedRun{drvs: []driver.Driver{drv}, ledger: &execLedger{}, work: func(ctx context.Context, j *lockstep.Job[limitArgs]) error {
			if j.Args.Fail {
				return lockstep.Permanent(errors.New("fails"))
			}
			return nil
		}}
		cs := r.start(t, 1, 4)
		status := func(id int64) lockstep.JobStatus {
			j, err := cs[0].Job(ctx, id)
			require.NoError(t, err)
			return j.Status
		}
		eventually(t, time.Minute, "the second job to be held", func() bool { return status(ids[1]) == lockstep.StatusBlocked })
		require.NoError(t, cs[0].SetQueueLimits(ctx, "limited", lockstep.QueueLimits{}))
		require.NotEqual(t, lockstep.StatusBlocked, status(ids[1]), "released by the call itself")
		waitFinal(t, drv, time.Minute)
		require.Equal(t, lockstep.StatusDone, status(ids[1]))
		require.ErrorIs(t, cs[0].SetQueueLimits(ctx, "limited", lockstep.QueueLimits{Concurrency: lockstep.MaxLimit + 1}), lockstep.ErrInvalidQueueSetting)
	})
}
