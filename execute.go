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

// claimed is a job the producer has claimed, with the context it runs
// under. The producer creates the context and tracks the job (heartbeats,
// cancellation) as it claims it, so that a job claimed ahead of a free
// worker is heartbeated while it waits, and a cancel reaches its context
// before it starts: its worker then starts with the context cancelled, as
// a job cancelled at the moment it started always did.
type claimed struct {
	job    *JobRow
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// claim makes job's context under workCtx and tracks the job.
func (c *Client) claim(workCtx context.Context, job *JobRow) claimed {
	ctx, cancel := context.WithCancelCause(workCtx)
	c.track(job, cancel)
	return claimed{job: job, ctx: ctx, cancel: cancel}
}

// execute runs one claimed job with no transaction open and writes its
// result in a short transaction of its own.
func (c *Client) execute(cl claimed) {
	job, cancel := cl.job, cl.cancel
	defer cancel(nil)
	out := &jobOutput{limit: c.cfg.MaxArgsBytes, c: c, jobID: job.ID}
	ctx := context.WithValue(cl.ctx, outputKey{}, out)
	c.emit(Event{Kind: EventJobStarted, Queue: job.Queue, JobKind: job.Kind, Wait: max(job.StartedAt.Sub(job.AvailableAt), 0)})
	start := time.Now()
	err, nextRetry := c.runWorker(ctx, job)
	// Heartbeated until its result is written (untracked in finished);
	// a heartbeat that finds it gone meanwhile leaves it be.
	c.finishing(job.ID, job.Attempts)
	c.finish(job, err, nextRetry, time.Since(start), context.Cause(ctx), out.bytes())
}

// runWorker runs the job through the middleware (Config.WorkerMiddleware,
// then the worker's own) to the worker, turning panics into errors.
// nextRetry is the worker's own retry delay, if it has one.
func (c *Client) runWorker(ctx context.Context, job *JobRow) (err error, nextRetry func() (time.Duration, bool)) {
	// Middleware and worker get a copy of the row: the finish is fenced on
	// the original's id and attempt, which they must not be able to change.
	seen := *job
	// A panic in a middleware is recovered here, as a worker's is below:
	// the job records it and the process lives on.
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: string(debug.Stack())}
		}
	}()
	err = runWorkerMiddleware(ctx, c.cfg.WorkerMiddleware, &seen, func(ctx context.Context) error {
		var entry *workerEntry
		if c.cfg.Workers != nil {
			entry = c.cfg.Workers.byKind[job.Kind]
		}
		if entry == nil {
			return fmt.Errorf("%w %q in this process", ErrUnknownKind, job.Kind)
		}
		return runWorkerMiddleware(ctx, entry.middleware, &seen, func(ctx context.Context) error {
			var err error
			err, nextRetry = c.work(ctx, &seen, entry)
			return err
		})
	})
	return err, nextRetry
}

// work decodes the args and calls the worker under the job's timeout,
// turning a panic into a *PanicError, which is what the middleware around
// it sees: an error, never a panic.
func (c *Client) work(ctx context.Context, job *JobRow, entry *workerEntry) (err error, nextRetry func() (time.Duration, bool)) {
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
	p := &driver.JobFinishParams{ID: job.ID, Attempt: job.Attempts, RunID: job.RunID, Dependents: job.Dependents, Queue: job.Queue, LimitKey: job.LimitKey}
	if job.Dependents > 0 {
		p.Flow = &driver.FlowCounts{}
	}
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
	if p.Status == rowtype.StatusDone && p.Output == nil && c.completer != nil && job.Dependents == 0 {
		// DONE goes with the others finishing now, in one transaction,
		// written after this returns: the job's slot is free at once, as
		// the work is done, and the batch's commit no longer holds it.
		// The completer reports once the DONE is committed (or failed);
		// Stop writes every queued DONE before it returns, and a process
		// that dies first leaves the job RUNNING for the reaper.
		c.completer.enqueue(driver.JobRef{ID: p.ID, Attempt: p.Attempt, Queue: job.Queue, LimitKey: job.LimitKey}, func(wrote bool, err error) {
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
		err = c.released("finish", err)
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
	c.untrack(job.ID, job.Attempts)
	if err == nil && wrote && p.Flow != nil {
		if p.Flow.Promoted > 0 {
			c.emit(Event{Kind: EventPromoted, Queue: job.Queue, JobKind: job.Kind, Count: p.Flow.Promoted})
		}
		if p.Flow.Callbacks > 0 {
			c.emit(Event{Kind: EventCallback, Queue: job.Queue, JobKind: job.Kind, Count: p.Flow.Callbacks})
		}
	}
	if err == nil && wrote {
		c.recordFinish(job, p.Status, p.Snooze, took)
	}
	if err == nil {
		c.emit(Event{
			Kind: EventJobFinished, Queue: job.Queue, JobKind: job.Kind, Status: p.Status,
			Took: time.Since(began), Ran: took, Snoozed: p.Snooze,
			Retry: p.Status == rowtype.StatusPending && !p.Snooze, Discarded: !wrote,
		})
	}
	if err == nil && wrote && job.LimitKey != "" {
		// Its end released (after its commit) what its key held back:
		// claim again now, rather than at the next poll.
		c.wakeQueue(job.Queue)
	}
	if err == nil && !wrote {
		// Cancelled (or reaped) while it ran: its worker has returned now.
		// A cancelled job records when (its finish time), and frees the
		// slot of a limited queue it may still hold.
		c.releaseCancelled(job)
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

// maxCompleteBatch bounds one batched DONE: one transaction, rows locked by
// primary key in ascending id order.
const maxCompleteBatch = 500

// DefaultCompleteBatchWait is how long a busy client gathers DONE results
// into one write, unless Config.CompleteBatchWait says otherwise.
const DefaultCompleteBatchWait = 10 * time.Millisecond

// completer writes DONE results in batches, as a database does group
// commit: while one batch is being written the results that arrive wait,
// and all of them go together in the next. A job hands its DONE over and
// frees its slot; the completer tells it (its event, its log line) once the
// batch is committed. An idle client writes each DONE at once. A busy one —
// its last batch held more than one DONE — also waits up to
// Config.CompleteBatchWait for more before it writes: without the wait,
// batches under load stay as small as one commit's flush time lets them
// grow (about 35 rows on PostgreSQL), and the flushes become the
// database's main cost (BENCHMARKS.md, issue 22). Only DONE is batched:
// failures, retries and snoozes carry per-job values and stay single
// statements.
type completer struct {
	c    *Client
	in   chan *completion
	done chan struct{}
}

// completion is one DONE waiting to be written, and who to tell.
type completion struct {
	ref  driver.JobRef
	done func(wrote bool, err error)
}

func newCompleter(c *Client) *completer {
	return &completer{c: c, in: make(chan *completion, maxCompleteBatch), done: make(chan struct{})}
}

// run writes batches until stop closes in, and every queued DONE is written.
func (p *completer) run() {
	defer close(p.done)
	batch := make([]*completion, 0, maxCompleteBatch)
	wait := time.NewTimer(time.Hour)
	wait.Stop()
	busy := false
	for first := range p.in {
		batch = append(batch[:0], first)
		// Idle: take what is already queued and write. Busy: gather
		// until the wait is over or the batch is full.
		var until <-chan time.Time
		if busy {
			wait.Reset(p.c.cfg.CompleteBatchWait)
			until = wait.C
		}
	fill:
		for len(batch) < maxCompleteBatch {
			if until == nil {
				select {
				case more, ok := <-p.in:
					if !ok {
						break fill
					}
					batch = append(batch, more)
				default:
					break fill
				}
				continue
			}
			select {
			case more, ok := <-p.in:
				if !ok {
					break fill
				}
				batch = append(batch, more)
			case <-until:
				until = nil
				break fill
			}
		}
		if until != nil {
			wait.Stop()
		}
		p.write(batch)
		busy = len(batch) > 1
	}
}

// write writes one batch, retrying database errors as every unit of work
// is retried, and tells each job its outcome.
func (p *completer) write(batch []*completion) {
	refs := make([]driver.JobRef, len(batch))
	for i, b := range batch {
		refs[i] = b.ref
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.c.cfg.FinishTimeout)
	defer cancel()
	var written []driver.JobRef
	lost := false // a try's connection broke: it may have committed
	err := p.c.retryDBIdempotent(ctx, "complete", func(ctx context.Context) error {
		var err error
		written, err = p.c.exec.JobCompleteMany(ctx, refs)
		err = p.c.released("complete", err)
		lost = lost || p.c.drv.ClassifyError(err) == rowtype.ErrorConnection
		return err
	})
	ok := make(map[driver.JobRef]bool, len(written))
	for _, w := range written {
		ok[w] = true
	}
	for _, b := range batch {
		wrote := err == nil && (ok[b.ref] || lost && p.c.confirmFinal(ctx, b.ref, rowtype.StatusDone))
		b.done(wrote, err)
	}
}

// enqueue queues one DONE; done is called once its batch is written. It
// blocks only while a full batch is already waiting, which holds back
// claims when the database falls behind.
func (p *completer) enqueue(ref driver.JobRef, done func(wrote bool, err error)) {
	// The client stops the completer only after its last job has
	// finished, so in is open here.
	p.in <- &completion{ref: ref, done: done}
}

// stop lets the queued DONEs be written and waits for the writer, up to
// the finish timeout.
func (p *completer) stop() {
	close(p.in)
	select {
	case <-p.done:
	case <-time.After(p.c.cfg.FinishTimeout):
	}
}

// confirmFinal reports whether the job is in the final status at the
// attempt ref names. After a try whose connection broke, the fenced retry
// refuses a result the lost try had already committed; reading the row
// tells that apart from a job cancelled or reaped meanwhile. Only final
// statuses are told apart this way: a reap also leaves a job PENDING at
// the same attempt, as a retry does.
func (c *Client) confirmFinal(ctx context.Context, ref driver.JobRef, status rowtype.JobStatus) bool {
	j, err := c.exec.JobGet(ctx, ref.ID)
	return err == nil && j.Status == status && j.Attempts == ref.Attempt
}
