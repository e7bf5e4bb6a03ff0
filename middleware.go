package lockstep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lockstep-queue/lockstep/driver"
)

// WorkerMiddleware wraps the execution of jobs: logging, tracing, putting a
// tenant in the context, refusing to run. Work is called for each attempt
// of each job with the job as claimed and next, which runs the rest of the
// chain and finally the worker; it returns the job's error.
//
// Middleware set in Config.WorkerMiddleware wraps every job of the client,
// the first in the list outermost; a worker's own (WorkerWithMiddleware)
// runs inside those. next covers decoding the job's args, its timeout
// (Config.JobTimeout or WorkerTimeout, which bounds the worker, not the
// middleware) and the worker; for a job of a kind this process has no
// worker for, next returns ErrUnknownKind (retried: another process may
// have it). The context passed to next is the one the
// worker gets, so derive it from ctx: ctx is cancelled when the job is
// cancelled or the client stops.
//
// What Work returns is the job's error, classified as the worker's is: nil
// finishes the job, Snooze and Permanent keep their meaning (also wrapped
// with %w), any other error is retried while attempts remain. A middleware
// may return without calling next (the worker does not run); it must call
// next at most once. A panic in the worker reaches the middleware as a
// *PanicError returned by next, never as a panic, and a panic in a
// middleware is recovered as one too: the job records it and the process
// lives on, middleware or not.
//
// job is a copy: changing it changes nothing the client writes. Work is
// called from many goroutines at once.
type WorkerMiddleware interface {
	Work(ctx context.Context, job *JobRow, next func(ctx context.Context) error) error
}

// WorkerMiddlewareFunc adapts a function to a WorkerMiddleware.
type WorkerMiddlewareFunc func(ctx context.Context, job *JobRow, next func(ctx context.Context) error) error

// Work implements WorkerMiddleware.
func (f WorkerMiddlewareFunc) Work(ctx context.Context, job *JobRow, next func(ctx context.Context) error) error {
	return f(ctx, job, next)
}

// WorkerWithMiddleware may be implemented by a Worker to wrap its own jobs
// in middleware, inside Config.WorkerMiddleware (the first in the list
// outermost). Middleware is read once, when the worker is added.
type WorkerWithMiddleware interface {
	Middleware() []WorkerMiddleware
}

// InsertMiddleware wraps inserts: InsertMany is called once per Insert,
// InsertMany, InsertTx, InsertManyTx or InsertRun (its jobs and its
// callbacks), with the call's jobs validated and encoded but not yet
// written, and next, which runs the rest of the chain and writes them. It
// returns next's results (one per job, in the order of jobs) or an error.
// An InsertRun's jobs come in the order they are inserted (each after the
// jobs it depends on), its callbacks last; a run without jobs does not
// pass through.
//
// A middleware may add to a job's metadata (InsertJob.SetMetadata) — a
// tenant id, a trace context — before it calls next, or refuse the insert
// by returning an error without calling next: nothing is written and the
// caller gets the error, wrapped ("enqueue: …", "create run: …") so that
// errors.Is and errors.As still find it. An error returned after next
// succeeded does not undo the insert, except inside the caller's own
// transaction if the caller rolls back. next retries database errors
// itself; a middleware must call it at most once.
//
// Middleware in Config.InsertMiddleware runs in order, the first in the
// list outermost, on the caller's goroutine: a panic in one is the
// caller's, as a panic in its own JobArgs would be. Periodic jobs pass
// through it too, under the client's own context (Start's for the ticks it
// catches up), which holds no request's values: a middleware that refuses
// jobs without such a value must let those through, by kind for instance.
type InsertMiddleware interface {
	InsertMany(ctx context.Context, jobs []*InsertJob, next func(ctx context.Context) ([]InsertResult, error)) ([]InsertResult, error)
}

// InsertMiddlewareFunc adapts a function to an InsertMiddleware.
type InsertMiddlewareFunc func(ctx context.Context, jobs []*InsertJob, next func(ctx context.Context) ([]InsertResult, error)) ([]InsertResult, error)

// InsertMany implements InsertMiddleware.
func (f InsertMiddlewareFunc) InsertMany(ctx context.Context, jobs []*InsertJob, next func(ctx context.Context) ([]InsertResult, error)) ([]InsertResult, error) {
	return f(ctx, jobs, next)
}

// InsertJob is one job of an insert as InsertMiddleware sees it: checked
// and encoded, with its kind's default options applied, not yet written.
// Only its metadata is the middleware's to change.
type InsertJob struct {
	args  JobArgs
	row   *driver.JobInsertParams
	limit int  // Config.MaxArgsBytes
	sent  bool // next was called: the row is being or was written
}

// Args are the job's args as given to the insert (a run callback's as
// given in its RunCallback). Read them; do not change them.
func (j *InsertJob) Args() JobArgs { return j.args }

// Kind is the job's kind.
func (j *InsertJob) Kind() string { return j.get().Kind }

// Queue is the queue the job goes to.
func (j *InsertJob) Queue() string { return j.get().Queue }

// Metadata is the job's metadata as it will be written (a copy), nil if it
// has none.
func (j *InsertJob) Metadata() json.RawMessage { return bytes.Clone(j.get().Metadata) }

// get is the job's row; an InsertJob the client did not make (a zero
// value in a test of a middleware) reads as an empty one, not a panic.
func (j *InsertJob) get() *driver.JobInsertParams {
	if j == nil || j.row == nil {
		return &driver.JobInsertParams{}
	}
	return j.row
}

// SetMetadata sets key in the job's metadata to value, encoded as JSON,
// keeping the other keys. Metadata that is absent (or JSON null) becomes
// an object; metadata that is some other JSON value than an object cannot
// take a key, and is refused with ErrInvalidJob, as are a value that does
// not encode, holds U+0000, or makes the metadata larger than
// Config.MaxArgsBytes. The keys of the object are written sorted. It must
// be called before next.
func (j *InsertJob) SetMetadata(key string, value any) error {
	if j == nil || j.row == nil {
		return fmt.Errorf("set metadata %q: not a job of an insert (an InsertJob is made by the client)", key)
	}
	if j.sent {
		return fmt.Errorf("set metadata %q: the job has already gone to the database (set metadata before calling next)", key)
	}
	v, err := json.Marshal(value)
	if err != nil {
		return invalidJob(fmt.Errorf("set metadata %q: encode value: %w", key, err))
	}
	m := map[string]json.RawMessage{}
	if cur := bytes.TrimSpace(j.row.Metadata); len(cur) > 0 && !bytes.Equal(cur, []byte("null")) {
		if cur[0] != '{' {
			return invalidJob(fmt.Errorf("set metadata %q: the job's metadata is %s, not a JSON object, so it cannot take a key", key, jsonKindOf(cur)))
		}
		if err := json.Unmarshal(cur, &m); err != nil {
			return invalidJob(fmt.Errorf("set metadata %q: read the job's metadata: %w", key, err))
		}
	}
	m[key] = v
	b, err := json.Marshal(m)
	if err != nil {
		return invalidJob(fmt.Errorf("set metadata %q: %w", key, err))
	}
	if len(b) > j.limit {
		return invalidJob(fmt.Errorf("set metadata %q: metadata would be %d bytes; the limit is %d", key, len(b), j.limit))
	}
	if hasNUL(b) {
		return invalidJob(fmt.Errorf("set metadata %q: metadata %w", key, errNUL))
	}
	j.row.Metadata = b
	return nil
}

// jsonKindOf names the kind of an encoded JSON value by its first byte.
func jsonKindOf(b []byte) string {
	switch b[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

// runInsertMiddleware passes the prepared rows of one insert call through
// Config.InsertMiddleware, then write. args[i] are the args of rows[i];
// the middleware changes rows in place, before write reads them.
func (c *Client) runInsertMiddleware(ctx context.Context, args []JobArgs, rows []driver.JobInsertParams, write func(ctx context.Context) ([]InsertResult, error)) ([]InsertResult, error) {
	mws := c.cfg.InsertMiddleware
	if len(mws) == 0 {
		return write(ctx)
	}
	jobs := make([]*InsertJob, len(rows))
	for i := range rows {
		jobs[i] = &InsertJob{args: args[i], row: &rows[i], limit: c.cfg.MaxArgsBytes}
	}
	// The client keeps its own slice: a middleware that reorders or
	// replaces the entries of the one it gets changes nothing written.
	shared := append([]*InsertJob(nil), jobs...)
	var chain func(ctx context.Context, i int) ([]InsertResult, error)
	chain = func(ctx context.Context, i int) ([]InsertResult, error) {
		if i == len(mws) {
			for _, j := range jobs {
				j.sent = true
			}
			return write(ctx)
		}
		return mws[i].InsertMany(ctx, shared, func(ctx context.Context) ([]InsertResult, error) { return chain(ctx, i+1) })
	}
	res, err := chain(ctx, 0)
	if err != nil {
		return nil, err
	}
	// Callers index the results by job: a middleware that returns its own
	// results must return one per job.
	if len(res) != len(rows) {
		return nil, fmt.Errorf("insert middleware returned %d results for %d jobs", len(res), len(rows))
	}
	return res, nil
}

// runWorkerMiddleware runs inner inside mws, the first outermost.
func runWorkerMiddleware(ctx context.Context, mws []WorkerMiddleware, job *JobRow, inner func(ctx context.Context) error) error {
	if len(mws) == 0 {
		return inner(ctx)
	}
	return mws[0].Work(ctx, job, func(ctx context.Context) error {
		return runWorkerMiddleware(ctx, mws[1:], job, inner)
	})
}

// checkMiddleware refuses nil middleware in a list, found at start-up
// rather than as a nil call on the first job.
func checkMiddleware[M any](what string, mws []M) error {
	var errs []error
	for i, m := range mws {
		if isNilMiddleware(m) {
			errs = append(errs, fmt.Errorf("%s[%d] is nil", what, i))
		}
	}
	return errors.Join(errs...)
}

func isNilMiddleware(m any) bool {
	switch f := m.(type) {
	case nil:
		return true
	case WorkerMiddlewareFunc:
		return f == nil
	case InsertMiddlewareFunc:
		return f == nil
	}
	return false
}
