package lockstep_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type RefreshFeed struct {
	Feed string `json:"feed"`
}

func (RefreshFeed) Kind() string { return "refresh_feed" }

// ExampleUniqueOpts_byStatus contrasts the two common shapes of unique
// job. By default a job holds its key while PENDING or RUNNING — "not
// twice at once" — so once it is done the same job may be enqueued again.
// Adding DONE to ByStatus makes it "at most once": the finished job keeps
// its key (until retention deletes it).
func ExampleUniqueOpts_byStatus() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	ran := make(chan struct{}, 2)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[RefreshFeed]) error {
		ran <- struct{}{}
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
	notTwiceAtOnce := &lockstep.InsertOpts{Unique: &lockstep.UniqueOpts{}}
	atMostOnce := &lockstep.InsertOpts{Unique: &lockstep.UniqueOpts{
		Key:      "migrate-feeds-v2",
		ByStatus: []lockstep.JobStatus{lockstep.StatusPending, lockstep.StatusRunning, lockstep.StatusDone},
	}}
	if _, err := client.Insert(ctx, RefreshFeed{Feed: "news"}, notTwiceAtOnce); err != nil {
		log.Fatal(err)
	}
	if _, err := client.Insert(ctx, RefreshFeed{Feed: "all"}, atMostOnce); err != nil {
		log.Fatal(err)
	}
	<-ran
	<-ran
	if err := client.Stop(ctx); err != nil { // both are DONE once Stop returns
		log.Fatal(err)
	}
	again, err := client.Insert(ctx, RefreshFeed{Feed: "news"}, notTwiceAtOnce)
	if err != nil {
		log.Fatal(err)
	}
	once, err := client.Insert(ctx, RefreshFeed{Feed: "all"}, atMostOnce)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("refresh news again: duplicate", again.Duplicate, "job", again.ID)
	fmt.Println("migrate feeds again: duplicate", once.Duplicate, "job", once.ID)
	// Output:
	// refresh news again: duplicate false job 3
	// migrate feeds again: duplicate true job 2
}
