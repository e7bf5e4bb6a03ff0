package lockstep_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type RenderThumbnail struct {
	Image string `json:"image"`
}

func (RenderThumbnail) Kind() string { return "render_thumbnail" }

// ThumbnailWorker gives its jobs a deadline of their own.
type ThumbnailWorker struct{}

func (ThumbnailWorker) Timeout(job *lockstep.Job[RenderThumbnail]) time.Duration {
	return 20 * time.Millisecond
}

func (ThumbnailWorker) Work(ctx context.Context, job *lockstep.Job[RenderThumbnail]) error {
	<-ctx.Done() // a render that hangs, but watches its context
	return ctx.Err()
}

// ExampleWorkerTimeout bounds each job of one kind, overriding
// Config.JobTimeout: the job's context ends at the deadline, and the
// attempt fails with the reason.
func ExampleWorkerTimeout() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	finished := make(chan lockstep.JobStatus, 1)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, ThumbnailWorker{})
	client, err := lockstep.NewClient(drv, lockstep.Config{
		Workers:      workers,
		PollInterval: 50 * time.Millisecond,
		OnEvent: func(e lockstep.Event) {
			if e.Kind == lockstep.EventJobFinished {
				finished <- e.Status
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	res, err := client.Insert(ctx, RenderThumbnail{Image: "huge.tiff"}, &lockstep.InsertOpts{MaxAttempts: 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-finished)
	job, err := client.Job(ctx, res.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.LastError)
	// Output:
	// FAILED
	// context deadline exceeded (job timed out after 20ms)
}
