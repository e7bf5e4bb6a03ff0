package lockstep_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type SendNewsletter struct {
	Issue int `json:"issue"`
}

func (SendNewsletter) Kind() string { return "send_newsletter" }

// ExampleClient_ResumeQueue holds a queue's work back and lets it go: while
// "newsletters" is paused its jobs are accepted but none is claimed, in
// any process; once resumed, they run. A queue paused before Start is not
// claimed from even once.
func ExampleClient_ResumeQueue() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	sent := make(chan int, 1)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[SendNewsletter]) error {
		sent <- job.Args.Issue
		return nil
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{
		Workers:      workers,
		Queues:       map[string]lockstep.QueueConfig{"newsletters": {MaxWorkers: 2}},
		PollInterval: 50 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.PauseQueue(ctx, "newsletters"); err != nil { // e.g. while the mail provider is down
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	res, err := client.Insert(ctx, SendNewsletter{Issue: 12}, &lockstep.InsertOpts{Queue: "newsletters"})
	if err != nil {
		log.Fatal(err)
	}
	job, err := client.Job(ctx, res.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("while paused:", job.Status)
	if err := client.ResumeQueue(ctx, "newsletters"); err != nil {
		log.Fatal(err)
	}
	fmt.Println("resumed, sent issue", <-sent)
	// Output:
	// while paused: PENDING
	// resumed, sent issue 12
}
