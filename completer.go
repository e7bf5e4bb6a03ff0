package lockstep

import (
	"context"
	"time"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// maxCompleteBatch bounds one batched DONE: one transaction, rows locked by
// primary key in ascending id order.
const maxCompleteBatch = 500

// completer writes DONE results in batches, as a database does group
// commit: while one batch is being written the results that arrive wait,
// and all of them go together in the next. A job hands its DONE over and
// frees its slot; the completer tells it (its event, its log line) once the
// batch is committed. An idle client writes each DONE
// at once; a busy one writes one short transaction per batch instead of one
// per job. Only DONE is batched: failures, retries and snoozes carry
// per-job values and stay single statements.
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
	for first := range p.in {
		batch = append(batch[:0], first)
	fill:
		for len(batch) < maxCompleteBatch {
			select {
			case more, ok := <-p.in:
				if !ok {
					break fill
				}
				batch = append(batch, more)
			default:
				break fill
			}
		}
		p.write(batch)
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
