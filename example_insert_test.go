package lockstep_test

import (
	"context"
	"fmt"
	"log"

	"github.com/lockstep-queue/lockstep"
)

type SendEmail struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

func (SendEmail) Kind() string { return "send_email" }

// ExampleClient_Insert enqueues one job with its insert-time options and
// reads it back as stored. A client that only enqueues needs no workers
// and is never started.
func ExampleClient_Insert() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	if err != nil {
		log.Fatal(err)
	}
	res, err := client.Insert(ctx, SendEmail{To: "ada@example.com", Subject: "Welcome"}, &lockstep.InsertOpts{
		Queue:       "email",
		MaxAttempts: 5,
	})
	if err != nil {
		log.Fatal(err)
	}
	job, err := client.Job(ctx, res.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("job", job.ID, job.Kind, "on", job.Queue, job.Status)
	fmt.Println("args:", string(job.Args))
	fmt.Println("attempts:", job.Attempts, "of", job.MaxAttempts)
	// Output:
	// job 1 send_email on email PENDING
	// args: {"to":"ada@example.com","subject":"Welcome"}
	// attempts: 0 of 5
}
