package lockstep_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type ValidateAddress struct {
	Address string `json:"address"`
}

func (ValidateAddress) Kind() string { return "validate_address" }

// ExamplePermanent fails a job at once, attempts left or not: retrying an
// address that does not exist cannot help.
func ExamplePermanent() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	ran := make(chan struct{}, 1)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[ValidateAddress]) error {
		ran <- struct{}{}
		return lockstep.Permanent(fmt.Errorf("no such street: %q", job.Args.Address))
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{Workers: workers, PollInterval: 50 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	res, err := client.Insert(ctx, ValidateAddress{Address: "1 Nowhere Lane"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	<-ran
	if err := client.Stop(ctx); err != nil { // waits for the result to be written
		log.Fatal(err)
	}
	job, err := client.Job(ctx, res.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.Status, "after", job.Attempts, "of", job.MaxAttempts, "attempts:", job.LastError)
	// Output: FAILED after 1 of 25 attempts: permanent: no such street: "1 Nowhere Lane"
}

type ParseUpload struct {
	File string `json:"file"`
}

func (ParseUpload) Kind() string { return "parse_upload" }

// ExamplePanicError shows that a panicking worker does not take the
// process down: the panic is recovered as a *PanicError and recorded, with
// its stack, in the job's error history; the job is retried like any
// failure, or, with no attempt left as here, FAILED.
func ExamplePanicError() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	ran := make(chan struct{}, 1)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[ParseUpload]) error {
		ran <- struct{}{}
		var columns map[string]int
		columns["total"]++ // a bug: assignment to entry in nil map
		return nil
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{Workers: workers, PollInterval: 50 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	res, err := client.Insert(ctx, ParseUpload{File: "q3.csv"}, &lockstep.InsertOpts{MaxAttempts: 1})
	if err != nil {
		log.Fatal(err)
	}
	<-ran
	if err := client.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	job, err := client.Job(ctx, res.ID)
	if err != nil {
		log.Fatal(err)
	}
	message, stack, _ := strings.Cut(job.LastError, "\n")
	fmt.Println(job.Status, message)
	fmt.Println("stack recorded:", strings.Contains(stack, "goroutine"))
	// Output:
	// FAILED panic: assignment to entry in nil map
	// stack recorded: true
}
