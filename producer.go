package lockstep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// producer claims jobs of one queue into free worker slots.
// maxClaimBackoffShift caps the wait between failing claims at 8 ×
// PollInterval: a database back from a restart is used within seconds.
const maxClaimBackoffShift = 3

type producer struct {
	c     *Client
	queue string
	max   int
	wake  chan struct{}
	done  chan struct{} // one value per finished job
}

func (p *producer) run(fetchCtx, workCtx context.Context) {
	c := p.c
	// A fixed set of worker goroutines, one per slot, rather than one
	// goroutine per job: a worker keeps the stack its jobs grew (decoding
	// args grows it), where a new goroutine per job copied it anew each
	// time — a sixth of the client's CPU under load.
	// Workers are started as the number of running jobs first reaches
	// each count, so an idle queue with a large MaxWorkers holds few.
	// Room for the largest limit a runtime setting may give.
	work := make(chan *JobRow, MaxQueueWorkers)
	defer close(work)
	workers := 0
	running := 0
	interval := c.cfg.MinPollInterval
	timer := time.NewTimer(0)
	defer timer.Stop()
	polled := true // this claim is a poll: the timer fired
	failures := 0  // claims failed in a row
	for {
		// Drain finished jobs before deciding how many to claim.
		for drained := false; !drained; {
			select {
			case <-p.done:
				running--
			default:
				drained = true
			}
		}
		paused, limit := c.queueLimit(p.queue, p.max)
		free := limit - running
		if paused {
			free = 0
		}
		if free > 0 && fetchCtx.Err() == nil {
			began := time.Now()
			jobs, err := c.exec.JobClaim(fetchCtx, &driver.JobClaimParams{Queue: p.queue, Max: free})
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
					if failures == 1 || failures%10 == 0 {
						c.logger.Error("lockstep: claim failed", "queue", p.queue, "failed", failures, "err", err)
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
			for _, j := range jobs {
				running++
				if running > workers {
					workers++
					go func() {
						for j := range work {
							c.execute(workCtx, j)
							c.jobs.Done()
							p.done <- struct{}{}
						}
					}()
				}
				c.jobs.Add(1)
				work <- j // never blocks: at most MaxQueueWorkers jobs are queued or running
			}
			// A full claim means more may be waiting: claim again as soon as
			// a slot frees, without waiting for the poll.
			if len(jobs) > 0 && len(jobs) == free {
				interval = 0
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		wait := interval
		if running >= limit || paused {
			// A finish, a resume or a new limit wakes the producer.
			wait = c.cfg.PollInterval
		}
		timer.Reset(max(wait, time.Millisecond))
		polled = false
		select {
		case <-fetchCtx.Done():
			return
		case <-p.wake:
		case <-p.done:
			running--
		case <-timer.C:
			polled = true
		}
	}
}

// execute runs one claimed job with no transaction open and writes its
// result in a short transaction of its own.
func (c *Client) execute(workCtx context.Context, job *JobRow) {
	ctx, cancel := context.WithCancelCause(workCtx)
	defer cancel(nil)
	out := &jobOutput{limit: c.cfg.MaxArgsBytes}
	ctx = context.WithValue(ctx, outputKey{}, out)
	c.track(job, cancel)
	c.emit(Event{Kind: EventJobStarted, Queue: job.Queue, JobKind: job.Kind, Wait: max(job.StartedAt.Sub(job.AvailableAt), 0)})
	start := time.Now()
	err, nextRetry := c.runWorker(ctx, job)
	// Untracked before the finish, so a heartbeat racing the finish cannot
	// take the job's own DONE for a cancellation.
	c.untrack(job.ID)
	c.finish(job, err, nextRetry, time.Since(start), context.Cause(ctx), out.bytes())
}

// runWorker decodes the args and calls the worker, turning panics into
// errors. nextRetry is the worker's own retry delay, if it has one.
func (c *Client) runWorker(ctx context.Context, job *JobRow) (err error, nextRetry func() (time.Duration, bool)) {
	var entry *workerEntry
	if c.cfg.Workers != nil {
		entry = c.cfg.Workers.byKind[job.Kind]
	}
	if entry == nil {
		return fmt.Errorf("%w %q in this process", ErrUnknownKind, job.Kind), nil
	}
	run, timeoutOf, next, err := entry.prepare(job)
	if err != nil {
		return Permanent(err), nil
	}
	timeout := c.cfg.JobTimeout
	if t, ok := timeoutOf(); ok {
		timeout = t
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, fmt.Errorf("job timed out after %s", timeout))
		defer cancel()
	}
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: string(debug.Stack())}
		}
	}()
	err = run(ctx)
	if err == nil && ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrJobLost) {
		// The worker ignored its context; the fenced finish discards it.
		return nil, next
	}
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (%v)", err, context.Cause(ctx))
	}
	return err, next
}

// finish writes the result, fenced on the claimed attempt, retrying
// database errors; it is not bound to the client's stop, so a stopping
// client still records what its jobs did.
func (c *Client) finish(job *JobRow, werr error, nextRetry func() (time.Duration, bool), took time.Duration, cause error, output []byte) {
	p := &driver.JobFinishParams{ID: job.ID, Attempt: job.Attempts}
	var snooze *SnoozeError
	var perm *PermanentError
	switch {
	case werr == nil:
		p.Status, p.Output = rowtype.StatusDone, output
	case errors.As(werr, &snooze):
		p.Status, p.Snooze, p.RetryAfter = rowtype.StatusPending, true, snooze.Duration
	case errors.As(werr, &perm) || job.Attempts >= job.MaxAttempts:
		p.Status, p.Error = rowtype.StatusFailed, werr.Error()
	default:
		p.Status, p.Error = rowtype.StatusPending, werr.Error()
		// Attempts counts claims, snoozes included; the backoff grows with
		// failures only: those in the history plus this one.
		p.RetryAfter = c.cfg.RetryBackoff(len(job.Errors) + 1)
		if nextRetry != nil {
			if d, ok := nextRetry(); ok {
				p.RetryAfter = max(d, 0)
			}
		}
	}
	began := time.Now()
	if p.Status == rowtype.StatusDone && p.Output == nil && c.completer != nil {
		// DONE goes with the others finishing now, in one transaction,
		// written after this returns: the job's slot is free at once, as
		// the work is done, and the batch's commit no longer holds it.
		// The completer reports once the DONE is committed (or failed);
		// Stop writes every queued DONE before it returns, and a process
		// that dies first leaves the job RUNNING for the reaper.
		c.completer.enqueue(driver.JobRef{ID: p.ID, Attempt: p.Attempt}, func(wrote bool, err error) {
			c.finished(job, p, werr, took, cause, began, wrote, err)
		})
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.FinishTimeout)
	defer cancel()
	var wrote bool
	lost := false // a try's connection broke: it may have committed
	err := c.retryDBIdempotent(ctx, "finish", func(ctx context.Context) error {
		var err error
		wrote, err = c.exec.JobFinish(ctx, p)
		lost = lost || c.drv.ClassifyError(err) == rowtype.ErrorConnection
		return err
	})
	if err == nil && !wrote && lost && p.Status != rowtype.StatusPending {
		wrote = c.confirmFinal(ctx, driver.JobRef{ID: p.ID, Attempt: p.Attempt}, p.Status)
	}
	c.finished(job, p, werr, took, cause, began, wrote, err)
}

// finished reports a written (or failed, or discarded) result: the event
// and the log line.
func (c *Client) finished(job *JobRow, p *driver.JobFinishParams, werr error, took time.Duration, cause error, began time.Time, wrote bool, err error) {
	if err == nil {
		c.emit(Event{
			Kind: EventJobFinished, Queue: job.Queue, JobKind: job.Kind, Status: p.Status,
			Took: time.Since(began), Ran: took, Snoozed: p.Snooze,
			Retry: p.Status == rowtype.StatusPending && !p.Snooze, Discarded: !wrote,
		})
	}
	if err == nil && wrote && p.Status == rowtype.StatusDone && !c.logger.Enabled(context.Background(), slog.LevelDebug) {
		// The common case logs nothing: skip building the logger.
		return
	}
	log := c.logger.With("job", job.ID, "kind", job.Kind, "attempt", job.Attempts, "took", took)
	switch {
	case err != nil:
		// The job stays RUNNING; the reaper returns it once its heartbeat
		// is stale, so it is retried, not lost.
		log.Error("lockstep: finish failed; the reaper will return the job", "err", err)
	case !wrote:
		log.Warn("lockstep: result discarded: the job was cancelled or reclaimed meanwhile", "result", p.Status, "cause", cause)
	case p.Status == rowtype.StatusDone:
		log.Debug("lockstep: job done")
	case p.Snooze:
		log.Info("lockstep: job snoozed", "for", p.RetryAfter)
	case p.Status == rowtype.StatusFailed:
		log.Warn("lockstep: job failed", "err", werr)
	default:
		log.Info("lockstep: job will be retried", "in", p.RetryAfter, "err", werr)
	}
}
