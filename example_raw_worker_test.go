package lockstep_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/lockstep-queue/lockstep"
)

// ExampleAddRawWorker enqueues and works a kind that has no Go type: the
// args stay JSON end to end, for jobs handed on to a command, another
// service or code in another language. RawArgs enqueues JSON that is
// already encoded.
func ExampleAddRawWorker() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	handed := make(chan string, 1)
	workers := lockstep.NewWorkers()
	err := lockstep.AddRawWorker(workers, "train_model", lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[lockstep.RawArgs]) error {
		// e.g. write job.Args.JSON to a Python process's stdin
		handed <- job.Args.KindName + " " + string(job.Args.JSON)
		return nil
	}))
	if err != nil {
		log.Fatal(err)
	}
	client, err := lockstep.NewClient(drv, lockstep.Config{Workers: workers, PollInterval: 50 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	args := lockstep.RawArgs{KindName: "train_model", JSON: []byte(`{"dataset":"s3://bucket/cats","epochs":3}`)}
	if _, err := client.Insert(ctx, args, nil); err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-handed)
	// Output: train_model {"dataset":"s3://bucket/cats","epochs":3}
}
