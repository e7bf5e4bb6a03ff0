package lockstep_test

import (
	"context"
	"fmt"
	"log"

	"github.com/lockstep-queue/lockstep"
)

type BuildReport struct {
	Month string `json:"month"`
}

func (BuildReport) Kind() string { return "build_report" }

// InsertOpts gives every build_report its usual queue, priority and
// attempts, wherever it is enqueued from.
func (BuildReport) InsertOpts() lockstep.InsertOpts {
	return lockstep.InsertOpts{Queue: "reports", Priority: 5, MaxAttempts: 3}
}

// ExampleJobArgsWithInsertOpts gives a kind default insert options, so
// that no enqueue has to repeat them; what an enqueue sets itself wins.
func ExampleJobArgsWithInsertOpts() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	if err != nil {
		log.Fatal(err)
	}
	usual, err := client.Insert(ctx, BuildReport{Month: "2024-05"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	urgent, err := client.Insert(ctx, BuildReport{Month: "2024-06"}, &lockstep.InsertOpts{Priority: 1})
	if err != nil {
		log.Fatal(err)
	}
	for _, id := range []int64{usual.ID, urgent.ID} {
		job, err := client.Job(ctx, id)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s queue=%s priority=%d max_attempts=%d\n", job.Args, job.Queue, job.Priority, job.MaxAttempts)
	}
	// Output:
	// {"month":"2024-05"} queue=reports priority=5 max_attempts=3
	// {"month":"2024-06"} queue=reports priority=1 max_attempts=3
}
