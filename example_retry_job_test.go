package lockstep_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type DeliverWebhook struct {
	Endpoint string `json:"endpoint"`
}

func (DeliverWebhook) Kind() string { return "deliver_webhook" }

// ExampleClient_RetryJob puts a FAILED job back to work once its cause is
// fixed — the CLI's `lockstep retry job` — with one more attempt when it
// had none left. Its error history is kept.
func ExampleClient_RetryJob() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	finished := make(chan lockstep.JobStatus, 2)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[DeliverWebhook]) error {
		if job.Attempts == 1 {
			return errors.New("503 from the endpoint")
		}
		return nil
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{
		Workers:      workers,
		PollInterval: 50 * time.Millisecond,
		OnEvent: func(e lockstep.Event) {
			if e.Kind == lockstep.EventJobFinished {
				finished <- e.Status // sent once the result is written
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
	res, err := client.Insert(ctx, DeliverWebhook{Endpoint: "https://example.com/hook"}, &lockstep.InsertOpts{MaxAttempts: 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first run:", <-finished)
	ok, err := client.RetryJob(ctx, res.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("retried:", ok)
	fmt.Println("second run:", <-finished)
	job, err := client.Job(ctx, res.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("attempts:", job.Attempts, "of", job.MaxAttempts)
	for _, e := range job.Errors {
		fmt.Printf("attempt %d failed: %s\n", e.Attempt, e.Error)
	}
	// Output:
	// first run: FAILED
	// retried: true
	// second run: DONE
	// attempts: 2 of 2
	// attempt 1 failed: 503 from the endpoint
}
