package lockstep_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type ChargeCard struct {
	Customer string `json:"customer"`
}

func (ChargeCard) Kind() string { return "charge_card" }

// ExampleInsertOpts_priority runs ready jobs lowest priority first, so an
// urgent job overtakes a backlog. One worker makes the order visible.
func ExampleInsertOpts_priority() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	ran := make(chan string, 3)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[ChargeCard]) error {
		ran <- job.Args.Customer
		return nil
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{
		Workers:      workers,
		Queues:       map[string]lockstep.QueueConfig{lockstep.DefaultQueue: {MaxWorkers: 1}},
		PollInterval: 50 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	_, err = client.InsertMany(ctx, []lockstep.InsertManyParams{
		{Args: ChargeCard{Customer: "batch"}, Opts: &lockstep.InsertOpts{Priority: 10}},
		{Args: ChargeCard{Customer: "regular"}},
		{Args: ChargeCard{Customer: "vip"}, Opts: &lockstep.InsertOpts{Priority: -5}},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	for range 3 {
		fmt.Println(<-ran)
	}
	// Output:
	// vip
	// regular
	// batch
}
