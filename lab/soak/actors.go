package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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
		case p < 30: // a new run, with or without jobs of its own
			params, modes := a.batch(rng, rng.IntN(8))
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
			params, modes := a.batch(rng, 1+rng.IntN(10))
			for i := range params {
				params[i].Opts.RunID = runID
			}
			began := time.Now()
			res, err := c.InsertMany(ctx, params)
			switch {
			case errors.Is(err, lockstep.ErrRunCancelled):
				l.refusedIntoRun(runID)
			case err != nil:
				a.unexpected(ctx, "enqueue into run", err)
			default:
				l.enqueuedIntoRun(runID, began, len(res))
				l.enqueued(jobIDs(res), modes, runID)
			}
		default: // loose jobs
			params, modes := a.batch(rng, 1+rng.IntN(15))
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

func (a *actors) batch(rng *rand.Rand, n int) ([]lockstep.InsertManyParams, []Mode) {
	params := make([]lockstep.InsertManyParams, n)
	modes := make([]Mode, n)
	for i := range params {
		args, opts := randomJob(rng, a.s.queues)
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
				continue
			}
			l.cancelRunTried(runID)
			if _, err := c.CancelRun(ctx, runID); err != nil {
				a.unexpected(ctx, fmt.Sprintf("cancel run %d", runID), err)
				continue
			}
			l.cancelRunDone(runID, time.Now())
			continue
		}
		// A burst: several jobs at once hit more of them while running.
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

// deadWorker claims jobs straight from the executor, as a worker would,
// and abandons them: it never heartbeats, so the clients' reapers must
// return them. Later it tries the finish the dead worker would have sent,
// fenced on the attempt it claimed, once the job has moved on.
func (a *actors) deadWorker(ctx context.Context, rng *rand.Rand, d *deadWorker) {
	for a.pause(time.Duration(150+rng.IntN(250)) * time.Millisecond) {
		jobs, err := d.exec.JobClaim(ctx, &driver.JobClaimParams{Queue: a.s.queues[rng.IntN(len(a.s.queues))], Max: 1 + rng.IntN(2)})
		switch {
		case err != nil && d.drv.ClassifyError(err).Retryable():
			a.s.ledger.onRetry("dead worker claim", err)
		case err != nil:
			a.unexpected(ctx, "dead worker claim", err)
		default:
			a.s.ledger.deadClaimed(jobs)
			for _, j := range jobs {
				d.abandoned = append(d.abandoned, ref{j.ID, j.Attempts})
			}
		}
		if err := d.staleFinishes(ctx, rng, false); err != nil {
			a.unexpected(ctx, "dead worker stale finish", err)
		}
	}
}

// deadWorker is the dead-worker simulator's state; one goroutine owns it.
type deadWorker struct {
	drv       driver.Driver
	exec      driver.Executor
	ledger    *ledger
	abandoned []ref // claims not yet finished late or let go
}

// staleFinishes looks at the abandoned claims and, for those that have
// moved on (reaped, reclaimed or cancelled: no longer RUNNING at the
// claimed attempt), sends the dead worker's late finish, which must be
// refused. Attempts only grow, so a claim seen to have moved on can never
// match the fence again. With all false it looks at a few and lets some go
// unfinished; with all it finishes every one.
func (d *deadWorker) staleFinishes(ctx context.Context, rng *rand.Rand, all bool) error {
	keep := d.abandoned[:0]
	for i, r := range d.abandoned {
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
			keep = append(keep, r) // not reaped yet
			continue
		}
		if !all && rng.IntN(3) == 0 {
			continue // a dead worker that never comes back
		}
		p := &driver.JobFinishParams{ID: r.id, Attempt: r.attempt}
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
