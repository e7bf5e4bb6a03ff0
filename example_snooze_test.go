package lockstep_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type CallPartnerAPI struct {
	Request string `json:"request"`
}

func (CallPartnerAPI) Kind() string { return "call_partner_api" }

// ExampleSnooze holds a job back for a while without using up an attempt
// or recording an error: the partner's rate limit is not the job's fault.
// The job below has one attempt, is snoozed twice, and still runs.
func ExampleSnooze() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	done := make(chan struct{})
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[CallPartnerAPI]) error {
		if job.Attempts <= 2 { // the partner says "429: retry in a moment"
			return lockstep.Snooze(10 * time.Millisecond)
		}
		close(done)
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
	res, err := client.Insert(ctx, CallPartnerAPI{Request: "quote"}, &lockstep.InsertOpts{MaxAttempts: 1})
	if err != nil {
		log.Fatal(err)
	}
	<-done
	if err := client.Stop(ctx); err != nil { // writes the DONE
		log.Fatal(err)
	}
	job, err := client.Job(ctx, res.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s after %d claims, max attempts now %d, %d errors\n", job.Status, job.Attempts, job.MaxAttempts, len(job.Errors))
	// Output: DONE after 3 claims, max attempts now 3, 0 errors
}
