package lockstep_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type BillTenant struct {
	Invoice int `json:"invoice"`
}

func (BillTenant) Kind() string { return "bill_tenant" }

type tenantCtxKey struct{}

// ExampleInsertMiddleware stamps every job with the tenant of the request
// that enqueued it, and refuses an enqueue outside a tenant's request.
// The tenant travels in the job's metadata; a worker middleware puts it
// back in the context the worker runs under.
func ExampleInsertMiddleware() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()

	stampTenant := lockstep.InsertMiddlewareFunc(func(ctx context.Context, jobs []*lockstep.InsertJob, next func(context.Context) ([]lockstep.InsertResult, error)) ([]lockstep.InsertResult, error) {
		tenant, ok := ctx.Value(tenantCtxKey{}).(string)
		if !ok {
			return nil, errors.New("enqueue outside a tenant's request")
		}
		for _, job := range jobs {
			if err := job.SetMetadata("tenant", tenant); err != nil {
				return nil, err
			}
		}
		return next(ctx)
	})
	restoreTenant := lockstep.WorkerMiddlewareFunc(func(ctx context.Context, job *lockstep.JobRow, next func(context.Context) error) error {
		var meta struct {
			Tenant string `json:"tenant"`
		}
		if err := json.Unmarshal(job.Metadata, &meta); err != nil || meta.Tenant == "" {
			return lockstep.Permanent(errors.New("job has no tenant"))
		}
		return next(context.WithValue(ctx, tenantCtxKey{}, meta.Tenant))
	})

	sent := make(chan string, 1)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[BillTenant]) error {
		sent <- fmt.Sprintf("invoice %d for tenant %s", job.Args.Invoice, ctx.Value(tenantCtxKey{}))
		return nil
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{
		Workers:          workers,
		PollInterval:     50 * time.Millisecond,
		InsertMiddleware: []lockstep.InsertMiddleware{stampTenant},
		WorkerMiddleware: []lockstep.WorkerMiddleware{restoreTenant},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)

	_, err = client.Insert(ctx, BillTenant{Invoice: 1}, nil)
	fmt.Println(err)

	request := context.WithValue(ctx, tenantCtxKey{}, "acme")
	if _, err := client.Insert(request, BillTenant{Invoice: 2}, nil); err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-sent)
	// Output:
	// enqueue: enqueue outside a tenant's request
	// invoice 2 for tenant acme
}

type MakeThumbnail struct {
	Path string `json:"path"`
}

func (MakeThumbnail) Kind() string { return "make_thumbnail" }

// ExampleWorkerMiddleware wraps every job in two middlewares: the first in
// the list is outermost. A panic in the worker reaches them as a
// *PanicError, and the job records it as it would without them.
func ExampleWorkerMiddleware() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()

	steps := make(chan string, 10)
	named := func(name string) lockstep.WorkerMiddleware {
		return lockstep.WorkerMiddlewareFunc(func(ctx context.Context, job *lockstep.JobRow, next func(context.Context) error) error {
			steps <- name + " before attempt " + fmt.Sprint(job.Attempts)
			err := next(ctx)
			var panicked *lockstep.PanicError
			if errors.As(err, &panicked) {
				steps <- fmt.Sprintf("%s after: the worker panicked: %v", name, panicked.Value)
			} else {
				steps <- name + " after"
			}
			return err
		})
	}
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[MakeThumbnail]) error {
		steps <- "work " + job.Args.Path
		var sizes map[string]int
		sizes["thumb"] = 64 // a nil map: the worker panics
		return nil
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{
		Workers:          workers,
		PollInterval:     50 * time.Millisecond,
		WorkerMiddleware: []lockstep.WorkerMiddleware{named("log"), named("trace")},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	res, err := client.Insert(ctx, MakeThumbnail{Path: "cat.png"}, &lockstep.InsertOpts{MaxAttempts: 1})
	if err != nil {
		log.Fatal(err)
	}
	for range 5 {
		fmt.Println(<-steps)
	}
	if err := client.Stop(ctx); err != nil { // waits for the result to be written
		log.Fatal(err)
	}
	job, err := client.Job(ctx, res.ID)
	if err != nil {
		log.Fatal(err)
	}
	message, _, _ := strings.Cut(job.LastError, "\n") // then the stack
	fmt.Println(job.Status, message)
	// Output:
	// log before attempt 1
	// trace before attempt 1
	// work cat.png
	// trace after: the worker panicked: assignment to entry in nil map
	// log after: the worker panicked: assignment to entry in nil map
	// FAILED panic: assignment to entry in nil map
}
