package lockstep

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"time"
)

// JobArgs is a job's payload. Kind names the worker that runs it; the value
// is stored as JSON. Implement Kind on a value (not pointer) receiver.
type JobArgs interface {
	Kind() string
}

// Job is a claimed job with its decoded args.
type Job[T JobArgs] struct {
	*JobRow
	Args T
}

// Worker runs jobs of one kind.
type Worker[T JobArgs] interface {
	Work(ctx context.Context, job *Job[T]) error
}

// WorkerTimeout may be implemented by a Worker to give its jobs their own
// timeout (negative: none), overriding Config.JobTimeout.
type WorkerTimeout[T JobArgs] interface {
	Timeout(job *Job[T]) time.Duration
}

// WorkerNextRetry may be implemented by a Worker to choose the delay before
// the next attempt after a failure, overriding Config.RetryBackoff.
type WorkerNextRetry[T JobArgs] interface {
	NextRetry(job *Job[T]) time.Duration
}

// WorkFunc adapts a function to a Worker.
func WorkFunc[T JobArgs](fn func(ctx context.Context, job *Job[T]) error) Worker[T] {
	return workFunc[T](fn)
}

type workFunc[T JobArgs] func(ctx context.Context, job *Job[T]) error

func (f workFunc[T]) Work(ctx context.Context, job *Job[T]) error { return f(ctx, job) }

// Workers is the registry of workers by kind.
type Workers struct {
	byKind map[string]*workerEntry
}

// NewWorkers returns an empty registry.
func NewWorkers() *Workers { return &Workers{byKind: map[string]*workerEntry{}} }

// workerEntry holds one kind's worker behind functions that decode the raw
// row, so the executor needs no type parameters.
type workerEntry struct {
	kind string
	// middleware is the worker's own (WorkerWithMiddleware), run inside
	// Config.WorkerMiddleware.
	middleware []WorkerMiddleware
	// prepare decodes the args; an error is permanent (bad args). A panic
	// while decoding (in an UnmarshalJSON of the args' type) is returned
	// as a *PanicError, not raised: args are input, and a job's bad input
	// must not take the process down.
	prepare func(row *JobRow) (run func(ctx context.Context) error, timeout func() (time.Duration, bool), nextRetry func() (time.Duration, bool), err error)
}

// AddWorker registers w for its args' kind. It panics on a kind registered
// twice, an invalid kind name or a nil middleware of the worker's own, a
// programming error found at start-up;
// AddWorkerSafely returns the error instead.
func AddWorker[T JobArgs](ws *Workers, w Worker[T]) {
	if err := AddWorkerSafely(ws, w); err != nil {
		panic(err)
	}
}

// AddWorkerSafely is AddWorker returning an error.
func AddWorkerSafely[T JobArgs](ws *Workers, w Worker[T]) error {
	var zero T
	kind := zero.Kind()
	return addWorker(ws, kind, w, func(row *JobRow) (T, error) {
		var args T
		if err := json.Unmarshal(row.Args, &args); err != nil {
			return args, fmt.Errorf("decode args of kind %q: %w", kind, err)
		}
		return args, nil
	})
}

// AddRawWorker registers w for jobs of the named kind without decoding
// their args: each job's args arrive as RawArgs (its kind and its JSON as
// stored), for workers that hand them on — to a command, a service, code in
// another language. It returns an error for an invalid or taken kind.
func AddRawWorker(ws *Workers, kind string, w Worker[RawArgs]) error {
	return addWorker(ws, kind, w, func(row *JobRow) (RawArgs, error) {
		return RawArgs{KindName: row.Kind, JSON: row.Args}, nil
	})
}

// addWorker registers w for kind, with decode turning a claimed row's args
// into the worker's type.
func addWorker[T JobArgs](ws *Workers, kind string, w Worker[T], decode func(row *JobRow) (T, error)) error {
	if err := validName("kind", kind); err != nil {
		return fmt.Errorf("add worker: %w", err)
	}
	if ws.byKind == nil {
		ws.byKind = map[string]*workerEntry{}
	}
	if _, dup := ws.byKind[kind]; dup {
		return fmt.Errorf("add worker: kind %q is already registered", kind)
	}
	var mws []WorkerMiddleware
	if m, ok := w.(WorkerWithMiddleware); ok {
		mws = slices.Clone(m.Middleware())
		if err := checkMiddleware("Middleware()", mws); err != nil {
			return fmt.Errorf("add worker: kind %q: %w", kind, err)
		}
	}
	ws.byKind[kind] = &workerEntry{kind: kind, middleware: mws, prepare: func(row *JobRow) (func(context.Context) error, func() (time.Duration, bool), func() (time.Duration, bool), error) {
		args, err := decodeSafely(kind, row, decode)
		if err != nil {
			return nil, nil, nil, err
		}
		job := &Job[T]{JobRow: row, Args: args}
		run := func(ctx context.Context) error { return w.Work(ctx, job) }
		timeout := func() (time.Duration, bool) {
			if t, ok := w.(WorkerTimeout[T]); ok {
				return t.Timeout(job), true
			}
			return 0, false
		}
		next := func() (time.Duration, bool) {
			if n, ok := w.(WorkerNextRetry[T]); ok {
				return n.NextRetry(job), true
			}
			return 0, false
		}
		return run, timeout, next, nil
	}}
	return nil
}

// decodeSafely runs decode, turning a panic into an error.
func decodeSafely[T JobArgs](kind string, row *JobRow, decode func(row *JobRow) (T, error)) (args T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decode args of kind %q: %w", kind, &PanicError{Value: r, Stack: string(debug.Stack())})
		}
	}()
	return decode(row)
}

// Kinds lists the registered kinds.
func (ws *Workers) Kinds() []string {
	out := make([]string, 0, len(ws.byKind))
	for k := range ws.byKind {
		out = append(out, k)
	}
	return out
}
