package lockstep_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type CleanupTemp struct {
	Dir string `json:"dir"`
}

func (CleanupTemp) Kind() string { return "cleanup_temp" }

// ExampleClient_Prune deletes finished jobs once they are older than their
// status's retention, so the table does not grow without bound. Every
// started client prunes every RetentionInterval; Prune runs a pass now.
// Here cancelled jobs are kept a nanosecond (in production: hours or
// days) and failed ones forever; PENDING and RUNNING jobs are never
// deleted.
func ExampleClient_Prune() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	client, err := lockstep.NewClient(drv, lockstep.Config{
		RetainCancelled: time.Nanosecond,
		RetainFailed:    -1, // keep forever
	})
	if err != nil {
		log.Fatal(err)
	}
	res, err := client.InsertMany(ctx, []lockstep.InsertManyParams{
		{Args: CleanupTemp{Dir: "/tmp/a"}},
		{Args: CleanupTemp{Dir: "/tmp/b"}},
		{Args: CleanupTemp{Dir: "/tmp/c"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range res[:2] {
		if _, err := client.CancelJob(ctx, r.ID); err != nil {
			log.Fatal(err)
		}
	}
	// Ages are read on the database's clock, in milliseconds: a job
	// cancelled within this millisecond is not older than a nanosecond yet.
	deleted := 0
	for deleted < 2 {
		n, err := client.Prune(ctx)
		if err != nil {
			log.Fatal(err)
		}
		deleted += n
	}
	jobs, err := client.Jobs(ctx, lockstep.JobListParams{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("deleted:", deleted)
	for _, j := range jobs {
		fmt.Println("kept:", j.ID, j.Status)
	}
	// Output:
	// deleted: 2
	// kept: 3 PENDING
}
