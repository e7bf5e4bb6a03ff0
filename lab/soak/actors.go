package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-queue/lockstep"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// actors are the load: enqueuers, a canceller and a dead worker. Each runs
// until stop is closed, with its own random stream so that its choices are
// reproducible from the seed. Database calls run on the soak's ctx, not on
// stop, so a call in flight when the load ends completes and its outcome is
// known: an insert cut off half-way might have committed unseen.
type actors struct {
	s    *soak
	stop <-chan struct{}
}

// pause waits d or until the load ends; false when it ended.
func (a *actors) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-a.stop:
		return false
	case <-t.C:
		return true
	}
}

// client picks who issues a call: the soak's own client (another process,
// as far as the workers know) or one of the worker clients, whose cancels
// reach their running jobs at once rather than at the next heartbeat.
func (a *actors) client(rng *rand.Rand) *lockstep.Client {
	if rng.IntN(2) == 0 {
		return a.s.client
	}
	return a.s.pools[rng.IntN(len(a.s.pools))].client
}

// sequenced returns the client enqueuer n inserts through when params
// hold a job of the sequenced queue, c otherwise. A sequence runs in id
// order, which is insert order through one server; a Galera node hands out
// its own auto-increment ids (wsrep_auto_increment_control), so through
// two nodes a later insert can get the smaller id. The enqueuer that owns
// a key's sequence therefore inserts its jobs through one pool, as one
// process would (docs/scaling.md).
func (a *actors) sequenced(c *lockstep.Client, n int, params []lockstep.InsertManyParams) *lockstep.Client {
	for _, p := range params {
		if p.Opts != nil && p.Opts.Queue == queueSeq {
			return a.s.pools[n%len(a.s.pools)].client
		}
	}
	return c
}

// unexpected records an error that no part of the load should meet.
func (a *actors) unexpected(ctx context.Context, what string, err error) {
	if ctx.Err() == nil {
		a.s.ledger.problem("%s: %v", what, err)
	}
}

func (a *actors) enqueuer(ctx context.Context, rng *rand.Rand, n int) {
	l := a.s.ledger
	for seq := 0; ; seq++ {
		// Keep the backlog bounded so the drain stays short: wait for the
		// workers rather than pile up jobs they cannot reach in time.
		for a.s.backlog.Load() > int64(a.s.cfg.MaxBacklog) {
			if !a.pause(50 * time.Millisecond) {
				return
			}
		}
		c := a.client(rng)
		switch p := rng.IntN(100); {
		case p < 3 || seq == 0 && n == 0: // a burst on one key of the rate-limited queue
			params, modes := a.keyBurst(rng, n, queueRate, 3*rateLimit)
			if params == nil {
				break
			}
			res, err := c.InsertMany(ctx, params)
			if err != nil {
				a.unexpected(ctx, "enqueue a rate burst", err)
				break
			}
			l.enqueued(jobIDs(res), modes, 0)
		case p < 4 || seq == 0 && n == 1: // a burst on one key of a sequence
			params, modes := a.keyBurst(rng, n, queueSeq, 4)
			if params == nil {
				break
			}
			// The first holds the key long enough for a claim to meet
			// the others: they are BLOCKED, and released in turn.
			params[0].Args, modes[0] = Args{Mode: ModeSlow, Millis: 300}, ModeSlow
			res, err := a.sequenced(c, n, params).InsertMany(ctx, params)
			if err != nil {
				a.unexpected(ctx, "enqueue a sequence burst", err)
				break
			}
			l.enqueued(jobIDs(res), modes, 0)
		case p < 30: // a new run, with or without jobs of its own
			params, modes := a.batch(rng, n, rng.IntN(8))
			c = a.sequenced(c, n, params)
			run, res, err := c.InsertRun(ctx, fmt.Sprintf("soak-%d-%d", n, seq), nil, params...)
			if err != nil {
				a.unexpected(ctx, "create run", err)
				break
			}
			l.runCreated(run.ID)
			l.enqueued(jobIDs(res), modes, run.ID)
		case p < 65: // more jobs into a recent run, which may be cancelled by now
			runID, ok := l.pickRun(20, true, rng.IntN)
			if !ok {
				break
			}
			params, modes := a.batch(rng, n, 1+rng.IntN(10))
			c = a.sequenced(c, n, params)
			for i := range params {
				params[i].Opts.RunID = runID
			}
			a.enqueueIntoRun(ctx, c, runID, params, modes)
		default: // loose jobs
			params, modes := a.batch(rng, n, 1+rng.IntN(15))
			c = a.sequenced(c, n, params)
			res, err := c.InsertMany(ctx, params)
			if err != nil {
				a.unexpected(ctx, "enqueue", err)
				break
			}
			l.enqueued(jobIDs(res), modes, 0)
		}
		if !a.pause(time.Duration(rng.IntN(25)) * time.Millisecond) {
			return
		}
	}
}

// newRun creates a run of a few plain jobs for the canceller.
func (a *actors) newRun(ctx context.Context, rng *rand.Rand, c *lockstep.Client) (int64, bool) {
	params := make([]lockstep.InsertManyParams, 1+rng.IntN(3))
	modes := make([]Mode, len(params))
	for i := range params {
		args, opts := randomJob(rng, a.s.queues)
		params[i], modes[i] = lockstep.InsertManyParams{Args: args, Opts: &opts}, args.Mode
	}
	run, res, err := c.InsertRun(ctx, fmt.Sprintf("soak-cancel-%d", rng.Int64()), nil, params...)
	if err != nil {
		a.unexpected(ctx, "create a run to cancel", err)
		return 0, false
	}
	a.s.ledger.runCreated(run.ID)
	a.s.ledger.enqueued(jobIDs(res), modes, run.ID)
	return run.ID, true
}

// enqueueAfterCancel adds a job to a run whose cancel has just committed:
// it must be refused. The enqueuers meet cancelled runs only by chance (on
// a slow machine, perhaps never in a whole soak); this meets one after
// every cancel, and the ledger counts an insert that got in as a problem.
func (a *actors) enqueueAfterCancel(ctx context.Context, rng *rand.Rand, c *lockstep.Client, runID int64) {
	args, opts := randomJob(rng, a.s.queues)
	opts.RunID = runID
	a.enqueueIntoRun(ctx, c, runID, []lockstep.InsertManyParams{{Args: args, Opts: &opts}}, []Mode{args.Mode})
}

// enqueueIntoRun adds jobs (whose RunID is set) to a run that may be
// cancelled by now, and checks the answer against the run's cancel.
func (a *actors) enqueueIntoRun(ctx context.Context, c *lockstep.Client, runID int64, params []lockstep.InsertManyParams, modes []Mode) {
	began := time.Now()
	res, err := c.InsertMany(ctx, params)
	switch {
	case errors.Is(err, lockstep.ErrRunCancelled):
		a.s.ledger.refusedIntoRun(runID)
	case err != nil:
		a.unexpected(ctx, "enqueue into run", err)
	default:
		a.s.ledger.enqueuedIntoRun(runID, began, len(res))
		a.s.ledger.enqueued(jobIDs(res), modes, runID)
	}
}

// batch makes n jobs of the mix for enqueuer number enq: in the plain
// queues, or in a limited one with a limit key.
func (a *actors) batch(rng *rand.Rand, enq, n int) ([]lockstep.InsertManyParams, []Mode) {
	params := make([]lockstep.InsertManyParams, n)
	modes := make([]Mode, n)
	for i := range params {
		args, opts := randomJob(rng, a.s.queues)
		if q := a.s.pickLimited(rng); q != nil {
			opts.Queue, opts.LimitKey = q.name, q.key(rng, enq)
		}
		params[i] = lockstep.InsertManyParams{Args: args, Opts: &opts}
		modes[i] = args.Mode
	}
	return params, modes
}

// keyBurst makes n jobs with one key of a limited queue, all available at
// once. In the rate-limited queue, more than its rate admits in a period:
// whatever the load, a claim meets a key whose window is spent and must
// defer the rest; in the sequenced one, jobs behind the key's first: a
// claim meets them while it runs and blocks them (a soak whose claims
// happened to miss both would not prove the deferral or the block). Nil
// while that queue's backlog is full.
func (a *actors) keyBurst(rng *rand.Rand, enq int, queue string, n int) ([]lockstep.InsertManyParams, []Mode) {
	q := a.s.limitedQueue(queue)
	if q == nil || q.open.Load() >= int64(q.backlog) {
		return nil, nil
	}
	key := q.key(rng, enq)
	params := make([]lockstep.InsertManyParams, n)
	modes := make([]Mode, n)
	for i := range params {
		args, opts := randomJob(rng, a.s.queues)
		opts.Queue, opts.LimitKey = q.name, key
		params[i] = lockstep.InsertManyParams{Args: args, Opts: &opts}
		modes[i] = args.Mode
	}
	return params, modes
}

// canceller cancels a recent run or a recent job every so often. A cancel
// of a job that has finished is expected and changes nothing.
func (a *actors) canceller(ctx context.Context, rng *rand.Rand) {
	l := a.s.ledger
	for a.pause(time.Duration(100+rng.IntN(300)) * time.Millisecond) {
		c := a.client(rng)
		if rng.IntN(100) < 35 {
			runID, ok := l.pickRun(30, false, rng.IntN)
			if !ok {
				// No run left to cancel (the enqueuers, slow on a loaded
				// machine, made few): make one, so that a soak always
				// cancels runs.
				if runID, ok = a.newRun(ctx, rng, c); !ok {
					continue
				}
			}
			l.cancelRunTried(runID)
			_, err := c.CancelRun(ctx, runID)
			if errors.Is(err, lockstep.ErrRunFinished) {
				l.cancelRunRefused(runID)
				continue
			}
			if err != nil {
				a.unexpected(ctx, fmt.Sprintf("cancel run %d", runID), err)
				continue
			}
			l.cancelRunDone(runID, time.Now())
			a.enqueueAfterCancel(ctx, rng, c, runID)
			continue
		}
		// A burst: several jobs at once hit more of them while running;
		// every other one as an operator's bulk cancel of the ids
		// selected, after its preview.
		if rng.IntN(2) == 0 {
			a.bulkCancel(ctx, rng, c)
			continue
		}
		for range 1 + rng.IntN(4) {
			id, ok := l.pickRecent(rng.IntN)
			if !ok {
				break
			}
			l.cancelJobTried(id)
			ok, err := c.CancelJob(ctx, id)
			if err != nil {
				a.unexpected(ctx, fmt.Sprintf("cancel job %d", id), err)
				continue
			}
			if ok {
				l.cancelJobApplied(id)
			}
		}
	}
}

// bulkCancel cancels a few recent jobs as one bulk action (one batch:
// job.bulk_refs, then job.cancel_many by primary key ascending, the
// single-job path for steps with dependents, releases after the commit),
// preceded by the preview of a filter over one of the plain queues
// (job.id_bounds, job.match_count windows).
func (a *actors) bulkCancel(ctx context.Context, rng *rand.Rand, c *lockstep.Client) {
	l := a.s.ledger
	var ids []int64
	for range 1 + rng.IntN(6) {
		id, ok := l.pickRecent(rng.IntN)
		if !ok {
			break
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return
	}
	queue := a.s.queues[rng.IntN(len(a.s.queues))]
	if _, err := c.BulkCount(ctx, lockstep.BulkCancel, lockstep.JobFilter{Queue: queue}); err != nil {
		a.unexpected(ctx, "bulk cancel preview of "+queue, err)
		return
	}
	l.bulkPreviewed()
	a.search(ctx, rng, c)
	for _, id := range ids {
		l.cancelJobTried(id)
	}
	res, err := c.Bulk(ctx, lockstep.BulkParams{Action: lockstep.BulkCancel, IDs: ids})
	if err != nil {
		a.unexpected(ctx, fmt.Sprintf("bulk cancel %v", ids), err)
		return
	}
	l.bulkDone(res.Batches)
	if res.Changed == len(sortedUnique(ids)) {
		for _, id := range ids {
			l.cancelJobApplied(id)
		}
	}
}

// search looks for the jobs of one mode, as an operator searching the
// jobs page would (a window of 50 ids, then the text index if there is
// one), and counts a job returned without the text as a problem.
func (a *actors) search(ctx context.Context, rng *rand.Rand, c *lockstep.Client) {
	mode := []Mode{ModeFailAlways, ModeSnoozeOnce, ModeFailOnce}[rng.IntN(3)]
	p, err := c.JobPage(ctx, lockstep.JobPageParams{Search: string(mode), Window: 50, Limit: 50})
	if err != nil {
		a.unexpected(ctx, "search for "+string(mode), err)
		return
	}
	for _, j := range p.Jobs {
		if !strings.Contains(strings.ToLower(string(j.Args)+string(j.Metadata)), string(mode)) {
			a.s.ledger.problem("search for %q returned job %d, whose args are %s", mode, j.ID, j.Args)
		}
	}
	a.s.ledger.searched(p.Indexed)
}

func sortedUnique(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// settings changes a plain queue's shared settings under the load: a cap
// on its workers, then its settings row removed (queues remove), so that
// queue.set_max_workers and queue.delete meet the claims, finishes and
// reaps of every process. The limited queues keep theirs: removing their
// limits mid-soak would rightly break the limits the sampler checks.
func (a *actors) settings(ctx context.Context, rng *rand.Rand) {
	l := a.s.ledger
	for a.pause(time.Duration(200+rng.IntN(400)) * time.Millisecond) {
		c := a.client(rng)
		queue := a.s.queues[rng.IntN(len(a.s.queues))]
		if err := c.SetQueueMaxWorkers(ctx, queue, 1+rng.IntN(3)); err != nil {
			a.unexpected(ctx, "set max workers of "+queue, err)
			continue
		}
		if !a.pause(time.Duration(50+rng.IntN(200)) * time.Millisecond) {
			return
		}
		removed, err := c.RemoveQueueSettings(ctx, queue)
		switch {
		case err != nil:
			a.unexpected(ctx, "remove settings of "+queue, err)
		case removed:
			l.settingsRemoved()
		}
	}
}

// deadWorker claims jobs straight from the executor, as a worker would,
// and abandons them: it never heartbeats, so the clients' reapers must
// return them. Later it tries the finish the dead worker would have sent,
// fenced on the attempt it claimed, once the job has moved on.
func (a *actors) deadWorker(ctx context.Context, rng *rand.Rand, d *deadWorker) {
	// Until its first claim has taken a job, it enqueues one and claims in
	// the same transaction: the workers drain the queues as fast as jobs
	// arrive, so on a loaded machine (CI under -race) a short soak's every
	// claim at the usual pace could find nothing, and the reaper and the
	// fence would go untested.
	claimed := false
	claim := func() ([]*rowtype.JobRow, error) {
		if !claimed {
			return a.plantAndClaim(ctx, rng, d)
		}
		return a.deadClaim(ctx, rng, d)
	}
	for a.pause(time.Duration(150+rng.IntN(250)) * time.Millisecond) {
		// A busy or deadlocked claim is tried again at once, with backoff,
		// as a worker's would be (RetryTx): on SQLite under a loaded
		// machine every round's single try could otherwise be turned away.
		jobs, err := claim()
		for try := 1; try < 5 && err != nil && d.drv.ClassifyError(err).Retryable(); try++ {
			a.s.ledger.onRetry("dead worker claim", err)
			if !a.pause(time.Duration(10*try) * time.Millisecond) {
				return
			}
			jobs, err = claim()
		}
		switch {
		case err != nil && d.drv.ClassifyError(err).Retryable():
			a.s.ledger.onRetry("dead worker claim", err)
		case err != nil:
			a.unexpected(ctx, "dead worker claim", err)
		default:
			a.s.ledger.deadClaimed(jobs)
			claimed = claimed || len(jobs) > 0
			for _, j := range jobs {
				d.abandoned = append(d.abandoned, abandoned{ref{j.ID, j.Attempts}, j.Queue, j.LimitKey})
			}
		}
		// A stale finish the database turned away as busy or deadlocked
		// keeps its job in the list, so the next round sends it again, as
		// a worker's retry would.
		switch err := d.staleFinishes(ctx, rng, false); {
		case err != nil && d.drv.ClassifyError(err).Retryable():
			a.s.ledger.onRetry("dead worker stale finish", err)
		case err != nil:
			a.unexpected(ctx, "dead worker stale finish", err)
		}
	}
}

// plantAndClaim enqueues one job into a plain queue and claims from that
// queue in the same transaction, as a worker process about to die: the
// claim finds at least the job it enqueued, whatever the workers took.
func (a *actors) plantAndClaim(ctx context.Context, rng *rand.Rand, d *deadWorker) (jobs []*rowtype.JobRow, err error) {
	args, opts := randomJob(rng, a.s.queues)
	tx, err := d.drv.BeginSQL(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	res, err := a.client(rng).InsertTx(ctx, tx, args, &opts)
	if err != nil {
		return nil, err
	}
	exec, err := d.drv.UnwrapTx(tx)
	if err != nil {
		return nil, err
	}
	if jobs, err = exec.JobClaim(ctx, &driver.JobClaimParams{Queue: opts.Queue, Max: 1}); err != nil {
		return nil, err
	}
	if err = tx.Commit(); err != nil {
		return nil, err
	}
	a.s.ledger.enqueued([]int64{res.ID}, []Mode{args.Mode}, 0)
	d.keep(opts.Queue, jobs, nil)
	return jobs, nil
}

// deadClaim claims like a worker process that is about to die: from a
// plain queue, or from a limited one as its clients do (JobClaimLimited,
// counting cancelled jobs' slots for ReapAfter), so that its abandoned
// jobs hold their keys' and queue's slots until they are reaped.
func (a *actors) deadClaim(ctx context.Context, rng *rand.Rand, d *deadWorker) ([]*rowtype.JobRow, error) {
	n := 1 + rng.IntN(2)
	d.claims++
	// Every other claim, while it holds a key of a plain queue, starts
	// after that key, as a saturated queue's producer claims: the claim
	// after a key meets every other writer too. Not left to chance: a
	// fast server drains the plain queues, and claims that took all they
	// asked for (a producer's cue) can be too rare to count on.
	if queue, k, ok := d.lastKey(a.s.queues); ok && d.claims%2 == 0 {
		jobs, err := d.exec.JobClaim(ctx, &driver.JobClaimParams{Queue: queue, Max: n, After: &k})
		if err == nil {
			d.ledger.claimedAfterKey()
			if len(jobs) == 0 {
				delete(d.after, queue) // nothing left after it
			}
		}
		d.keep(queue, jobs, err)
		return jobs, err
	}
	i := rng.IntN(len(a.s.queues) + len(a.s.limited))
	if i < len(a.s.queues) {
		queue := a.s.queues[i]
		jobs, err := d.exec.JobClaim(ctx, &driver.JobClaimParams{Queue: queue, Max: n})
		d.keep(queue, jobs, err)
		return jobs, err
	}
	q := a.s.limited[i-len(a.s.queues)]
	c, err := d.exec.JobClaimLimited(ctx, &driver.JobClaimParams{Queue: q.name, Max: n, Limits: q.limits, Grace: a.s.cfg.ReapAfter})
	if c == nil {
		return nil, err
	}
	// The claim committed; its release of keys, or the creation of keys'
	// rows, after it failed: its jobs are claimed all the same.
	switch {
	case err != nil && d.drv.ClassifyError(err).Retryable():
		a.s.ledger.onRetry("dead worker claim: after its commit", err)
	case err != nil:
		a.unexpected(ctx, "dead worker claim: after its commit", err)
	}
	return c.Jobs, nil
}

// deadWorker is the dead-worker simulator's state; one goroutine owns it.
type deadWorker struct {
	drv       driver.Driver
	exec      driver.Executor
	ledger    *ledger
	abandoned []abandoned // claims not yet finished late or let go
	// after is, per plain queue, the last key a claim of that queue took,
	// until a claim after it finds nothing.
	after  map[string]driver.ClaimKey
	claims int
}

// keep remembers the last key a claim of a plain queue took. A claim
// that took nothing leaves the key: the next claim after it is then sure
// to come, however fast the workers drain the queue.
func (d *deadWorker) keep(queue string, jobs []*rowtype.JobRow, err error) {
	if err == nil && len(jobs) > 0 {
		d.after[queue] = driver.LastKey(jobs)
	}
}

// lastKey is the first of queues, in their order, that has a key.
func (d *deadWorker) lastKey(queues []string) (string, driver.ClaimKey, bool) {
	for _, q := range queues {
		if k, ok := d.after[q]; ok {
			return q, k, true
		}
	}
	return "", driver.ClaimKey{}, false
}

// abandoned is a claim the dead worker abandoned.
type abandoned struct {
	ref
	queue, key string
}

// staleFinishes looks at the abandoned claims and, for those that have
// moved on (reaped, reclaimed or cancelled: no longer RUNNING at the
// claimed attempt), sends the dead worker's late finish, which must be
// refused. Attempts only grow, so a claim seen to have moved on can never
// match the fence again. With all false it looks at a few and lets some go
// unfinished; with all it finishes every one.
func (d *deadWorker) staleFinishes(ctx context.Context, rng *rand.Rand, all bool) error {
	keep := d.abandoned[:0]
	for i, ab := range d.abandoned {
		r := ab.ref
		if !all && i >= 4 {
			keep = append(keep, d.abandoned[i:]...)
			break
		}
		j, err := d.exec.JobGet(ctx, r.id)
		if err != nil {
			keep = append(keep, d.abandoned[i:]...)
			d.abandoned = keep
			return err
		}
		if j.Status == rowtype.StatusRunning && j.Attempts == r.attempt {
			keep = append(keep, ab) // not reaped yet
			continue
		}
		if !all && rng.IntN(3) == 0 {
			continue // a dead worker that never comes back
		}
		p := &driver.JobFinishParams{ID: r.id, Attempt: r.attempt, Queue: ab.queue, LimitKey: ab.key}
		switch rng.IntN(4) {
		case 0:
			p.Status = rowtype.StatusDone
		case 1:
			p.Status, p.Error = rowtype.StatusFailed, "soak: stale finish"
		case 2:
			p.Status, p.Error = rowtype.StatusPending, "soak: stale finish"
		default:
			p.Status, p.Snooze = rowtype.StatusPending, true
		}
		wrote, err := d.exec.JobFinish(ctx, p)
		if err != nil {
			keep = append(keep, d.abandoned[i:]...)
			d.abandoned = keep
			return err
		}
		d.ledger.staleFinish(r, p.Status, wrote)
	}
	d.abandoned = keep
	return nil
}

// jobIDs are the ids of inserted jobs, in input order.
func jobIDs(res []lockstep.InsertResult) []int64 {
	ids := make([]int64, len(res))
	for i, r := range res {
		ids[i] = r.ID
	}
	return ids
}
