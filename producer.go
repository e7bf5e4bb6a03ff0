package lockstep

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// The claim stage: a producer per served queue claims jobs into free
// worker slots and hands each to a worker goroutine, which executes it
// (execute.go).

// maxClaimBackoffShift caps the wait between failing claims at 8 ×
// PollInterval: a database back from a restart is used within seconds.
const maxClaimBackoffShift = 3

// producer claims jobs of one queue into free worker slots.
type producer struct {
	c     *Client
	queue string
	max   int
	// strict: QueueConfig.StrictPriority, every claim from the head.
	strict bool
	wake   chan struct{}
	done   chan struct{} // one value per finished job
	// ran is the total time the queue's jobs have run, in nanoseconds:
	// with the finishes counted on done, the producer's mean job time.
	ran atomic.Int64
}

func (p *producer) run(fetchCtx, workCtx context.Context) {
	c := p.c
	// A fixed set of worker goroutines, one per slot, rather than one
	// goroutine per job: a worker keeps the stack its jobs grew (decoding
	// args grows it), where a new goroutine per job copied it anew each
	// time — a sixth of the client's CPU under load.
	// Workers are started as the number of running jobs first reaches
	// each count, so an idle queue with a large MaxWorkers holds few.
	// Room for the largest limit a runtime setting may give: only
	// started jobs go through it, never more than the limit.
	work := make(chan *claimed, MaxQueueWorkers)
	defer close(work)
	workers := 0
	executing := 0 // handed to a worker and not finished
	// waiting are jobs claimed ahead (see aheadOf), in claim order: the
	// producer hands one to a worker only while fewer than the queue's
	// current limit execute, so a lower limit holds from its next turn.
	// Claimed, they run, as running jobs do through a pause or a stop:
	// every claimed attempt reaches its worker (the soak's audit holds
	// the queue to that), with the job's context cancelled if it was
	// cancelled, reaped or the client stops with StopAndCancel meanwhile.
	var waiting []*claimed
	ahead := 0 // jobs the next claim may take beyond the free workers
	dispatch := func(limit int) {
		for executing < limit && len(waiting) > 0 {
			cl := waiting[0]
			waiting[0] = nil
			waiting = waiting[1:]
			executing++
			if workers < executing {
				workers++
				go func() {
					for cl := range work {
						start := time.Now()
						c.execute(*cl)
						p.ran.Add(int64(time.Since(start)))
						c.jobs.Done()
						p.done <- struct{}{}
					}
				}()
			}
			work <- cl // never blocks: at most limit ≤ MaxQueueWorkers are in it
		}
	}
	// jobTime is the mean run time of the jobs finished since the last
	// claim, from ran.
	var jobTime time.Duration
	ranSeen, finished := int64(0), 0
	interval := c.cfg.MinPollInterval
	timer := time.NewTimer(0)
	defer timer.Stop()
	polled := true // this claim is a poll: the timer fired
	failures := 0  // claims failed in a row
	// throttledUntil is when the queue's rate limit next frees a start;
	// held is whether the last claim found the queue at its concurrency
	// limit (another process's finish frees a slot: poll for it).
	var throttledUntil time.Time
	held := false
	// after is where the next claim starts while the queue is saturated:
	// the last key the previous claim took, when it took all it asked
	// for. The claim index's head then holds the entries of rows claimed
	// before, which a snapshot held open elsewhere (a long transaction,
	// a backup) keeps there, dead, until it ends: a claim from the head
	// would read them all, every time. A claim from the head still runs
	// whenever the previous claim came back short, and while the queue
	// stays saturated once per headEvery (fromHead is the last), so that
	// a job sorting before the key — a higher priority inserted
	// meanwhile, a row another transaction held while the claim skipped
	// it — waits that long at most.
	var after *driver.ClaimKey
	var fromHead time.Time
	var headTook time.Duration // how long the last claim from the head took
	for {
		// Drain finished jobs before deciding how many to claim.
		for drained := false; !drained; {
			select {
			case <-p.done:
				executing--
				finished++
			default:
				drained = true
			}
		}
		if finished > 0 {
			ran := p.ran.Load()
			jobTime = time.Duration((ran - ranSeen) / int64(finished))
			ranSeen, finished = ran, 0
		}
		paused, limit := c.queueLimit(p.queue, p.max)
		if paused {
			ahead = 0
		}
		dispatch(limit)
		running := executing + len(waiting)
		free := limit + min(ahead, limit, MaxQueueWorkers-limit) - running
		if paused {
			free = 0
		}
		// A queue whose rate limit is spent is not claimed from until a
		// start frees up: no statement while it is throttled.
		throttled := time.Now().Before(throttledUntil)
		held = false
		if free > 0 && fetchCtx.Err() == nil && !throttled {
			began := time.Now()
			// A deadlock victim, a lock wait timeout or a busy SQLite is
			// retried with backoff, like every unit of work: its
			// transaction was rolled back and it claimed nothing. A lost
			// connection is not: the claim may have committed (the reaper
			// returns such jobs), and it is logged below.
			var jobs []*JobRow
			var limited *driver.LimitedClaim
			lim := c.queueLimits(p.queue)
			claim := &driver.JobClaimParams{Queue: p.queue, Max: free, ProcessID: c.processID}
			fromTheHead := after == nil || began.Sub(fromHead) >= headEvery(c.cfg.PollInterval, headTook)
			if !fromTheHead {
				claim.After = after
			}
			err := c.retryDB(fetchCtx, "claim", func(ctx context.Context) error {
				var err error
				if lim.Any() {
					limited, err = c.exec.JobClaimLimited(ctx, &driver.JobClaimParams{Queue: p.queue, Max: free, Limits: lim, Grace: c.cfg.ReapAfter, ProcessID: c.processID})
					if limited != nil {
						jobs = limited.Jobs
					}
					return c.released("claim", err)
				}
				jobs, err = c.exec.JobClaim(ctx, claim)
				return err
			})
			if err == nil {
				c.emit(Event{Kind: EventClaimed, Queue: p.queue, Count: len(jobs), Took: time.Since(began)})
			}
			if err == nil && failures > 0 {
				c.logger.Info("lockstep: claims work again", "queue", p.queue, "failed", failures)
				failures = 0
			}
			switch {
			case err != nil:
				// A failed claim took nothing, whatever rows it returned.
				// (One whose commit was lost with its connection left
				// its jobs RUNNING with no heartbeat: the reaper returns
				// them.)
				jobs = nil
				if fetchCtx.Err() == nil {
					failures++
					// An outage gets one line, then one per ten tries.
					// A claim that lost every retry to a conflict (a
					// deadlock or serialization failure) is a warning: it
					// took nothing, and the next poll claims again. Where
					// that is expected — writers on several Galera nodes
					// certify their claims of the same jobs against each
					// other — it is no error; where it is not, the
					// server's deadlock counter says so. A database that
					// is away, busy or refusing writes is an error.
					level := slog.LevelError
					if k := c.drv.ClassifyError(err); k == rowtype.ErrorDeadlock || k == rowtype.ErrorSerialization {
						level = slog.LevelWarn
					}
					if failures == 1 || failures%10 == 0 {
						c.logger.Log(fetchCtx, level, "lockstep: claim failed", "queue", p.queue, "failed", failures, "err", err)
					}
				}
				// Back off while the database is away: PollInterval,
				// doubling to maxClaimBackoff of them.
				interval = c.cfg.PollInterval << min(max(failures-1, 0), maxClaimBackoffShift)
			case len(jobs) > 0:
				interval = c.cfg.MinPollInterval
			case polled:
				// Only a poll that found nothing backs off. A claim made
				// because a job finished or a wake-up came says nothing
				// about how often work arrives: were it to back off too,
				// a steady trickle of jobs (each finish followed by an
				// empty claim) would push the poll to PollInterval.
				interval = min(interval*2, c.cfg.PollInterval)
			}
			ahead = aheadOf(err == nil && len(jobs) == free, lim.Any(), limit, jobTime, time.Since(began))
			if fromTheHead {
				fromHead, headTook = began, time.Since(began)
			}
			after = nil
			if err == nil && len(jobs) == free && !lim.Any() && !p.strict {
				last := driver.LastKey(jobs)
				after = &last
			}
			for _, j := range jobs {
				c.jobs.Add(1)
				cl := c.claim(workCtx, j)
				waiting = append(waiting, &cl)
			}
			dispatch(limit)
			running = executing + len(waiting)
			// A full claim means more may be waiting: claim again as soon as
			// a slot frees, without waiting for the poll.
			if len(jobs) > 0 && len(jobs) == free {
				interval = 0
			}
			if err == nil && limited != nil {
				interval = p.afterLimited(limited, interval, &throttledUntil, &held)
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		wait := interval
		if running >= limit || paused || held {
			// A finish, a resume or a new limit wakes the producer.
			wait = c.cfg.PollInterval
		}
		if throttled := time.Until(throttledUntil); throttled > 0 && running < limit && !paused {
			wait = throttled
		}
		timer.Reset(max(wait, time.Millisecond))
		polled = false
		select {
		case <-fetchCtx.Done():
			// Stopping: the jobs claimed ahead run too (Stop waits for
			// them), as many at once as the limit allows.
			_, limit := c.queueLimit(p.queue, p.max)
			for limit = max(limit, 1); len(waiting) > 0; dispatch(limit) {
				if executing >= limit {
					<-p.done
					executing--
				}
			}
			return
		case <-p.wake:
		case <-p.done:
			executing--
			finished++
		case <-timer.C:
			polled = true
		}
	}
}

// headShare bounds a saturated queue's claims from the head to one
// headShare-th of its claiming time (see headEvery).
const headShare = 10

// headEvery is how often a saturated queue claims from its head: every
// PollInterval, or, when a claim from the head has grown slow — a
// snapshot held elsewhere keeps the entries of every job claimed since it
// began at the head of the claim index — seldom enough that those claims
// take at most a tenth of the time: headShare times as long as the last
// one took.
func headEvery(poll, headTook time.Duration) time.Duration {
	return max(poll, headShare*headTook)
}

// aheadOf is how many jobs the next claim may take beyond the queue's
// free workers. A producer claims again as soon as a worker frees, so
// while the queue is saturated each claim takes the workers that freed
// during the one before: when jobs run for less time than a claim takes,
// about half the workers sit idle waiting for the next claim. Then — the
// last claim filled every slot it asked for (more jobs are waiting), the
// mean job ran shorter than that claim took, and the queue has no limits
// (whose slots and rate starts are counted in RUNNING rows) — the next
// claim may take up to limit more, which wait in the process for a
// worker, heartbeated and cancellable as running jobs. Any other claim
// takes only what is free.
func aheadOf(full, limited bool, limit int, jobTime, claimTook time.Duration) int {
	if !full || limited || jobTime <= 0 || jobTime >= claimTook {
		return 0
	}
	return limit
}

// afterLimited is what a limited claim tells the producer about its next
// one: a spent rate limit is waited out (by the database's clock, measured
// from the claim), a full queue waits for a slot, keys another claim held
// are tried again soon. It returns the next poll interval.
func (p *producer) afterLimited(l *driver.LimitedClaim, interval time.Duration, throttledUntil *time.Time, held *bool) time.Duration {
	c := p.c
	if l.Blocked > 0 || l.Deferred > 0 {
		c.emit(Event{Kind: EventLimited, Queue: p.queue, Count: l.Blocked, Deferred: l.Deferred})
	}
	switch {
	case !l.RetryAt.IsZero():
		*throttledUntil = time.Now().Add(max(l.RetryAt.Sub(l.Now), time.Millisecond))
	case l.Full:
		*held = true
	case l.Skipped > 0 || l.Blocked > 0 || l.Deferred > 0:
		// Jobs of other keys may be ready behind those it passed over.
		interval = min(interval, c.cfg.MinPollInterval)
	}
	return interval
}
