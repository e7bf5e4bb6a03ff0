package lockstep_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/internal/clienttest"
)

// The middleware is the same code on every database; SQLite files keep
// these tests cheap.
func middlewareDriver(t *testing.T) driver.Driver {
	t.Helper()
	return testDialects[0].open(t)
}

type mwArgs struct{ N int }

func (mwArgs) Kind() string { return "mw" }

type tenantKey struct{}

// trail records what a middleware chain did, in order.
type trail struct {
	mu    sync.Mutex
	steps []string
}

func (r *trail) add(s string) {
	r.mu.Lock()
	r.steps = append(r.steps, s)
	r.mu.Unlock()
}

func (r *trail) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.steps...)
}

// tracing is a middleware that records entering and leaving, and what next
// returned.
func tracing(r *trail, name string) lockstep.WorkerMiddleware {
	return lockstep.WorkerMiddlewareFunc(func(ctx context.Context, job *lockstep.JobRow, next func(context.Context) error) error {
		r.add(name + ">")
		err := next(ctx)
		r.add("<" + name)
		return err
	})
}

// ownMiddlewareWorker is a worker with middleware of its own.
type ownMiddlewareWorker struct {
	r    *trail
	done chan string
}

func (w *ownMiddlewareWorker) Middleware() []lockstep.WorkerMiddleware {
	return []lockstep.WorkerMiddleware{tracing(w.r, "own")}
}

func (w *ownMiddlewareWorker) Work(ctx context.Context, job *lockstep.Job[mwArgs]) error {
	w.r.add("work")
	tenant, _ := ctx.Value(tenantKey{}).(string)
	w.done <- tenant
	return nil
}

func TestWorkerMiddlewareOrderAndContext(t *testing.T) {
	ctx := context.Background()
	drv := middlewareDriver(t)
	r := &trail{}
	w := &ownMiddlewareWorker{r: r, done: make(chan string, 1)}
	ws := lockstep.NewWorkers()
	lockstep.AddWorker(ws, w)
	cfg := clienttest.FastConfig(ws)
	tenancy := lockstep.WorkerMiddlewareFunc(func(ctx context.Context, job *lockstep.JobRow, next func(context.Context) error) error {
		var meta struct {
			Tenant string `json:"tenant"`
		}
		if err := json.Unmarshal(job.Metadata, &meta); err != nil {
			return lockstep.Permanent(fmt.Errorf("read tenant: %w", err))
		}
		return next(context.WithValue(ctx, tenantKey{}, meta.Tenant))
	})
	cfg.WorkerMiddleware = []lockstep.WorkerMiddleware{tracing(r, "first"), tenancy, tracing(r, "second")}
	c := clienttest.StartClient(t, drv, cfg)
	res, err := c.Insert(ctx, mwArgs{}, &lockstep.InsertOpts{Metadata: map[string]string{"tenant": "acme"}})
	require.NoError(t, err)
	require.Equal(t, "acme", <-w.done, "the value a middleware put in ctx reaches the worker")
	clienttest.WaitStatus(t, c, res.ID, lockstep.StatusDone)
	require.Equal(t, []string{"first>", "second>", "own>", "work", "<own", "<second", "<first"}, r.get(),
		"the first of Config.WorkerMiddleware is outermost, the worker's own innermost")
}

func TestWorkerMiddlewareSeesPanicAsError(t *testing.T) {
	ctx := context.Background()
	drv := middlewareDriver(t)
	ws := lockstep.NewWorkers()
	lockstep.AddWorker(ws, lockstep.WorkFunc(func(context.Context, *lockstep.Job[panicArgs]) error {
		panic("worker exploded")
	}))
	seen := make(chan error, 1)
	cfg := clienttest.FastConfig(ws)
	cfg.WorkerMiddleware = []lockstep.WorkerMiddleware{lockstep.WorkerMiddlewareFunc(func(ctx context.Context, job *lockstep.JobRow, next func(context.Context) error) error {
		err := next(ctx)
		seen <- err
		return err
	})}
	c := clienttest.StartClient(t, drv, cfg)
	res, err := c.Insert(ctx, panicArgs{}, &lockstep.InsertOpts{MaxAttempts: 1})
	require.NoError(t, err)
	var pe *lockstep.PanicError
	require.ErrorAs(t, <-seen, &pe, "the middleware gets the panic as an error")
	require.Equal(t, "worker exploded", pe.Value)
	require.Contains(t, pe.Stack, "middleware_test.go", "the stack is the panic's")
	j := clienttest.WaitStatus(t, c, res.ID, lockstep.StatusFailed)
	require.Contains(t, j.LastError, "panic: worker exploded", "recorded as without middleware")
}

func TestWorkerMiddlewarePanicIsRecovered(t *testing.T) {
	ctx := context.Background()
	drv := middlewareDriver(t)
	ws := lockstep.NewWorkers()
	ran := make(chan struct{}, 1)
	lockstep.AddWorker(ws, lockstep.WorkFunc(func(context.Context, *lockstep.Job[mwArgs]) error {
		ran <- struct{}{}
		return nil
	}))
	cfg := clienttest.FastConfig(ws)
	cfg.WorkerMiddleware = []lockstep.WorkerMiddleware{lockstep.WorkerMiddlewareFunc(func(ctx context.Context, job *lockstep.JobRow, next func(context.Context) error) error {
		if err := next(ctx); err != nil {
			return err
		}
		panic("middleware exploded")
	})}
	c := clienttest.StartClient(t, drv, cfg)
	res, err := c.Insert(ctx, mwArgs{}, &lockstep.InsertOpts{MaxAttempts: 1})
	require.NoError(t, err)
	<-ran
	j := clienttest.WaitStatus(t, c, res.ID, lockstep.StatusFailed)
	require.Contains(t, j.LastError, "panic: middleware exploded", "a panicking middleware fails the job; the process lives on")
}

func TestWorkerMiddlewareErrorIsRetried(t *testing.T) {
	ctx := context.Background()
	drv := middlewareDriver(t)
	ws := lockstep.NewWorkers()
	ran := make(chan int, 2)
	lockstep.AddWorker(ws, lockstep.WorkFunc(func(_ context.Context, job *lockstep.Job[mwArgs]) error {
		ran <- job.Attempts
		return nil
	}))
	cfg := clienttest.FastConfig(ws)
	cfg.WorkerMiddleware = []lockstep.WorkerMiddleware{lockstep.WorkerMiddlewareFunc(func(ctx context.Context, job *lockstep.JobRow, next func(context.Context) error) error {
		if job.Attempts == 1 {
			return errors.New("quota service unavailable") // short-circuits: the worker does not run
		}
		return next(ctx)
	})}
	c := clienttest.StartClient(t, drv, cfg)
	res, err := c.Insert(ctx, mwArgs{}, nil)
	require.NoError(t, err)
	j := clienttest.WaitStatus(t, c, res.ID, lockstep.StatusDone)
	require.Equal(t, 2, j.Attempts)
	require.Len(t, j.Errors, 1)
	require.Equal(t, "quota service unavailable", j.Errors[0].Error, "the middleware's error is the job's")
	require.Equal(t, 2, <-ran, "the worker ran once, on the attempt the middleware let through")
	require.Empty(t, ran)
}

func TestWorkerMiddlewarePermanentFailsAtOnce(t *testing.T) {
	ctx := context.Background()
	drv := middlewareDriver(t)
	ws := lockstep.NewWorkers()
	lockstep.AddWorker(ws, lockstep.WorkFunc(func(context.Context, *lockstep.Job[mwArgs]) error { return nil }))
	cfg := clienttest.FastConfig(ws)
	cfg.WorkerMiddleware = []lockstep.WorkerMiddleware{lockstep.WorkerMiddlewareFunc(func(ctx context.Context, job *lockstep.JobRow, next func(context.Context) error) error {
		return fmt.Errorf("tenant check: %w", lockstep.Permanent(errors.New("tenant suspended")))
	})}
	c := clienttest.StartClient(t, drv, cfg)
	res, err := c.Insert(ctx, mwArgs{}, nil)
	require.NoError(t, err)
	j := clienttest.WaitStatus(t, c, res.ID, lockstep.StatusFailed)
	require.Equal(t, 1, j.Attempts, "a wrapped Permanent keeps its meaning")
	require.Equal(t, "tenant check: permanent: tenant suspended", j.LastError)
}

func TestWorkerMiddlewareNilIsRefused(t *testing.T) {
	drv := middlewareDriver(t)
	_, err := lockstep.NewClient(drv, lockstep.Config{WorkerMiddleware: []lockstep.WorkerMiddleware{nil}})
	require.ErrorContains(t, err, "config: WorkerMiddleware[0] is nil")
	_, err = lockstep.NewClient(drv, lockstep.Config{InsertMiddleware: []lockstep.InsertMiddleware{lockstep.InsertMiddlewareFunc(nil)}})
	require.ErrorContains(t, err, "config: InsertMiddleware[0] is nil")
	ws := lockstep.NewWorkers()
	err = lockstep.AddWorkerSafely(ws, nilMiddlewareWorker{})
	require.ErrorContains(t, err, `add worker: kind "mw": Middleware()[0] is nil`)
}

type nilMiddlewareWorker struct{}

func (nilMiddlewareWorker) Middleware() []lockstep.WorkerMiddleware {
	return []lockstep.WorkerMiddleware{nil}
}
func (nilMiddlewareWorker) Work(context.Context, *lockstep.Job[mwArgs]) error {
	return nil
}

// tenantHook adds the tenant in ctx to every job's metadata, and refuses
// an insert without one.
func tenantHook(seen *[]string) lockstep.InsertMiddleware {
	return lockstep.InsertMiddlewareFunc(func(ctx context.Context, jobs []*lockstep.InsertJob, next func(context.Context) ([]lockstep.InsertResult, error)) ([]lockstep.InsertResult, error) {
		tenant, _ := ctx.Value(tenantKey{}).(string)
		if tenant == "" {
			return nil, errNoTenant
		}
		for _, j := range jobs {
			*seen = append(*seen, j.Kind()+"@"+j.Queue())
			if err := j.SetMetadata("tenant", tenant); err != nil {
				return nil, err
			}
		}
		return next(ctx)
	})
}

var errNoTenant = errors.New("no tenant in the request")

func TestInsertMiddlewareAddsMetadata(t *testing.T) {
	drv := middlewareDriver(t)
	var seen []string
	c := quietClient(t, drv, lockstep.Config{InsertMiddleware: []lockstep.InsertMiddleware{tenantHook(&seen)}})
	ctx := context.WithValue(context.Background(), tenantKey{}, "acme")
	meta := func(id int64) map[string]any {
		t.Helper()
		j, err := c.Job(context.Background(), id)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(j.Metadata, &m))
		return m
	}

	res, err := c.Insert(ctx, mwArgs{}, &lockstep.InsertOpts{Queue: "mail", Metadata: map[string]string{"requested_by": "ada"}})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"requested_by": "ada", "tenant": "acme"}, meta(res.ID), "the hook's key joins the enqueuer's")
	require.Equal(t, []string{"mw@mail"}, seen)

	many, err := c.InsertMany(ctx, []lockstep.InsertManyParams{{Args: mwArgs{N: 1}}, {Args: mwArgs{N: 2}}})
	require.NoError(t, err)
	for _, r := range many {
		require.Equal(t, map[string]any{"tenant": "acme"}, meta(r.ID))
	}

	tx, err := drv.DB().Begin()
	require.NoError(t, err)
	one, err := c.InsertTx(ctx, tx, mwArgs{}, nil)
	require.NoError(t, err)
	txMany, err := c.InsertManyTx(ctx, tx, []lockstep.InsertManyParams{{Args: mwArgs{N: 3}}})
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	require.Equal(t, map[string]any{"tenant": "acme"}, meta(one.ID))
	require.Equal(t, map[string]any{"tenant": "acme"}, meta(txMany[0].ID))

	seen = nil
	_, runRes, err := c.InsertRun(ctx, "import", &lockstep.RunOpts{
		Callbacks: []lockstep.RunCallback{{On: lockstep.CallbackOnSuccess, Args: noopArgs{}}},
	}, lockstep.InsertManyParams{Args: mwArgs{N: 4}})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"tenant": "acme"}, meta(runRes[0].ID))
	require.Equal(t, []string{"mw@default", "noop@default"}, seen, "a run's jobs and its callbacks pass through the hook")
	require.Equal(t, 1, countWhere(t, drv, "kind = ? AND metadata IS NOT NULL", "noop"), "the callback carries the metadata too")
}

func TestInsertMiddlewareRefuses(t *testing.T) {
	drv := middlewareDriver(t)
	var seen []string
	c := quietClient(t, drv, lockstep.Config{InsertMiddleware: []lockstep.InsertMiddleware{tenantHook(&seen)}})
	ctx := context.Background() // no tenant

	_, err := c.Insert(ctx, mwArgs{}, nil)
	require.ErrorIs(t, err, errNoTenant)
	require.Equal(t, "enqueue: no tenant in the request", err.Error())
	_, err = c.InsertMany(ctx, []lockstep.InsertManyParams{{Args: mwArgs{}}, {Args: mwArgs{}}})
	require.ErrorIs(t, err, errNoTenant)
	tx, err := drv.DB().Begin()
	require.NoError(t, err)
	_, err = c.InsertTx(ctx, tx, mwArgs{}, nil)
	require.ErrorIs(t, err, errNoTenant)
	_, err = c.InsertManyTx(ctx, tx, []lockstep.InsertManyParams{{Args: mwArgs{}}})
	require.ErrorIs(t, err, errNoTenant)
	require.NoError(t, tx.Commit())
	_, _, err = c.InsertRun(ctx, "import", nil, lockstep.InsertManyParams{Args: mwArgs{}})
	require.ErrorIs(t, err, errNoTenant)
	require.Equal(t, "create run: no tenant in the request", err.Error())

	require.Equal(t, 0, countWhere(t, drv, "1 = 1"), "nothing was inserted")
	var runs int
	require.NoError(t, drv.DB().QueryRow("SELECT COUNT(*) FROM lockstep_runs").Scan(&runs))
	require.Equal(t, 0, runs, "nor the run")
	require.Empty(t, seen)
}

func TestInsertMiddlewareMetadataRefusals(t *testing.T) {
	drv := middlewareDriver(t)
	set := func(key string, value any) lockstep.InsertMiddleware {
		return lockstep.InsertMiddlewareFunc(func(ctx context.Context, jobs []*lockstep.InsertJob, next func(context.Context) ([]lockstep.InsertResult, error)) ([]lockstep.InsertResult, error) {
			for _, j := range jobs {
				if err := j.SetMetadata(key, value); err != nil {
					return nil, err
				}
			}
			return next(ctx)
		})
	}
	ctx := context.Background()

	c := quietClient(t, drv, lockstep.Config{InsertMiddleware: []lockstep.InsertMiddleware{set("tenant", "acme")}})
	_, err := c.Insert(ctx, mwArgs{}, &lockstep.InsertOpts{Metadata: []string{"a", "list"}})
	require.ErrorIs(t, err, lockstep.ErrInvalidJob)
	require.ErrorContains(t, err, `set metadata "tenant": the job's metadata is an array, not a JSON object, so it cannot take a key`)

	c = quietClient(t, drv, lockstep.Config{MaxArgsBytes: 64, InsertMiddleware: []lockstep.InsertMiddleware{set("blob", strings.Repeat("x", 64))}})
	_, err = c.Insert(ctx, mwArgs{}, nil)
	require.ErrorIs(t, err, lockstep.ErrInvalidJob)
	require.ErrorContains(t, err, "metadata would be 75 bytes; the limit is 64")

	c = quietClient(t, drv, lockstep.Config{InsertMiddleware: []lockstep.InsertMiddleware{set("bad", "a\x00b")}})
	_, err = c.Insert(ctx, mwArgs{}, nil)
	require.ErrorIs(t, err, lockstep.ErrInvalidJob)
	require.ErrorContains(t, err, "U+0000")

	var late error
	c = quietClient(t, drv, lockstep.Config{InsertMiddleware: []lockstep.InsertMiddleware{lockstep.InsertMiddlewareFunc(
		func(ctx context.Context, jobs []*lockstep.InsertJob, next func(context.Context) ([]lockstep.InsertResult, error)) ([]lockstep.InsertResult, error) {
			res, err := next(ctx)
			late = jobs[0].SetMetadata("too", "late")
			return res, err
		})}})
	res, err := c.Insert(ctx, mwArgs{}, &lockstep.InsertOpts{Metadata: map[string]int{"n": 1}})
	require.NoError(t, err)
	require.ErrorContains(t, late, "set metadata before calling next")
	j, err := c.Job(ctx, res.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"n":1}`, string(j.Metadata))

	c = quietClient(t, drv, lockstep.Config{InsertMiddleware: []lockstep.InsertMiddleware{lockstep.InsertMiddlewareFunc(
		func(ctx context.Context, jobs []*lockstep.InsertJob, next func(context.Context) ([]lockstep.InsertResult, error)) ([]lockstep.InsertResult, error) {
			return nil, nil // a middleware that forgets its results
		})}})
	_, err = c.Insert(ctx, mwArgs{}, nil)
	require.EqualError(t, err, "enqueue: insert middleware returned 0 results for 1 jobs")
	_, _, err = c.InsertRun(ctx, "import", nil, lockstep.InsertManyParams{Args: mwArgs{}})
	require.ErrorContains(t, err, "create run: insert middleware returned 0 results for 1 jobs")
	require.Equal(t, 1, countWhere(t, drv, "1 = 1"), "only the job of the middleware that called next")

	var zero lockstep.InsertJob // as a test of a middleware might make one
	require.Empty(t, zero.Kind())
	require.Nil(t, zero.Metadata())
	require.ErrorContains(t, zero.SetMetadata("tenant", "acme"), "not a job of an insert")
}
