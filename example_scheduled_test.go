package lockstep_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type SendReminder struct {
	Note string `json:"note"`
}

func (SendReminder) Kind() string { return "send_reminder" }

// ExampleInsertOpts_scheduled enqueues jobs for later: Delay counts from
// now, ScheduledAt names the time. Until then they wait PENDING, and a
// running worker takes only what is due.
func ExampleInsertOpts_scheduled() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	ran := make(chan string, 3)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[SendReminder]) error {
		ran <- job.Args.Note
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
	tomorrow := time.Now().Add(24 * time.Hour)
	results, err := client.InsertMany(ctx, []lockstep.InsertManyParams{
		{Args: SendReminder{Note: "in an hour"}, Opts: &lockstep.InsertOpts{Delay: time.Hour}},
		{Args: SendReminder{Note: "tomorrow"}, Opts: &lockstep.InsertOpts{ScheduledAt: tomorrow}},
		{Args: SendReminder{Note: "now"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("ran:", <-ran)
	if err := client.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	for _, r := range results {
		job, err := client.Job(ctx, r.ID)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(string(job.Args), job.Status, "due later:", job.AvailableAt.After(time.Now()))
	}
	// Output:
	// ran: now
	// {"note":"in an hour"} PENDING due later: true
	// {"note":"tomorrow"} PENDING due later: true
	// {"note":"now"} DONE due later: false
}
