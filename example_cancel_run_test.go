package lockstep_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type CrawlPage struct {
	URL string `json:"url"`
}

func (CrawlPage) Kind() string { return "crawl_page" }

// ExampleClient_CancelRun stops a whole run: its pending jobs are
// cancelled, its running jobs' contexts are cancelled (at once in this
// process, at their next heartbeat elsewhere) and their late results
// change nothing, and no job can be added to it afterwards.
func ExampleClient_CancelRun() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	started := make(chan struct{}, 1)
	stopped := make(chan error, 1)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[CrawlPage]) error {
		started <- struct{}{}
		<-ctx.Done() // a long crawl that watches its context
		stopped <- context.Cause(ctx)
		return ctx.Err()
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{
		Workers:      workers,
		Queues:       map[string]lockstep.QueueConfig{lockstep.DefaultQueue: {MaxWorkers: 1}},
		PollInterval: 50 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	run, _, err := client.InsertRun(ctx, "crawl example.com", nil,
		lockstep.InsertManyParams{Args: CrawlPage{URL: "https://example.com/"}},
		lockstep.InsertManyParams{Args: CrawlPage{URL: "https://example.com/about"}},
	)
	if err != nil {
		log.Fatal(err)
	}
	<-started // one job runs, the other waits for the only worker
	res, err := client.CancelRun(ctx, run.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("cancelled jobs:", res.Cancelled)
	fmt.Println("running job's context:", <-stopped)
	if err := client.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	r, counts, err := client.Run(ctx, run.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("run:", r.Status, counts)
	_, err = client.Insert(ctx, CrawlPage{URL: "https://example.com/contact"}, &lockstep.InsertOpts{RunID: run.ID})
	fmt.Println("add a job to it:", errors.Is(err, lockstep.ErrRunCancelled))
	// Output:
	// cancelled jobs: [1 2]
	// running job's context: job was cancelled or reclaimed; its result will be discarded
	// run: CANCELLED map[CANCELLED:2]
	// add a job to it: true
}
