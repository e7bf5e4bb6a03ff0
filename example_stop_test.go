package lockstep_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type EncodeAudio struct {
	Track string `json:"track"`
}

func (EncodeAudio) Kind() string { return "encode_audio" }

// ExampleClient_Stop shuts down gracefully: Stop stops claiming and waits
// for running jobs up to its context's deadline, then cancels their
// contexts (cause ErrClientStopping) and writes what they return. A job
// interrupted so is retried later, not lost. StopAndCancel does not wait.
func ExampleClient_Stop() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	started := make(chan struct{}, 1)
	stopped := make(chan error, 1)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[EncodeAudio]) error {
		started <- struct{}{}
		<-ctx.Done() // an encode far longer than the shutdown grace period
		stopped <- context.Cause(ctx)
		return ctx.Err()
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{Workers: workers, PollInterval: 50 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	res, err := client.Insert(ctx, EncodeAudio{Track: "symphony.wav"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	<-started
	grace, cancel := context.WithTimeout(ctx, 50*time.Millisecond) // in production: seconds
	defer cancel()
	err = client.Stop(grace)
	fmt.Println("stop ran out of time:", errors.Is(err, context.DeadlineExceeded))
	fmt.Println("job's context:", <-stopped)
	job, err := client.Job(ctx, res.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("job:", job.Status, "after", job.LastError)
	// Output:
	// stop ran out of time: true
	// job's context: client is stopping
	// job: PENDING after context canceled (client is stopping)
}
