package lockstep_test

import (
	"context"
	"fmt"
	"log"

	"github.com/lockstep-queue/lockstep"
)

type WarmCache struct {
	Key string `json:"key"`
}

func (WarmCache) Kind() string { return "warm_cache" }

// exampleCacheJobs enqueues three jobs on "cache" and one on "cache-eu",
// and cancels one of the first.
func exampleCacheJobs(ctx context.Context, client *lockstep.Client) {
	eu := &lockstep.InsertOpts{Queue: "cache-eu"}
	res, err := client.InsertMany(ctx, []lockstep.InsertManyParams{
		{Args: WarmCache{Key: "home"}, Opts: &lockstep.InsertOpts{Queue: "cache"}},
		{Args: WarmCache{Key: "pricing"}, Opts: &lockstep.InsertOpts{Queue: "cache"}},
		{Args: WarmCache{Key: "docs"}, Opts: &lockstep.InsertOpts{Queue: "cache"}},
		{Args: WarmCache{Key: "home"}, Opts: eu},
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.CancelJob(ctx, res[0].ID); err != nil {
		log.Fatal(err)
	}
}

// ExampleClient_Stats reads every queue's counts by status and whether it
// has jobs waiting — what `lockstep stats` prints and a health check or
// an autoscaler watches. Each count is bounded (StatsParams.CountLimit),
// so stats stay cheap on a large table.
func ExampleClient_Stats() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	if err != nil {
		log.Fatal(err)
	}
	exampleCacheJobs(ctx, client)
	stats, err := client.Stats(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, q := range stats {
		fmt.Printf("%s: pending %d, cancelled %d, waiting: %t\n", q.Queue,
			q.Counts[lockstep.StatusPending].N, q.Counts[lockstep.StatusCancelled].N, !q.OldestAvailableAt.IsZero())
	}
	// Output:
	// cache: pending 2, cancelled 1, waiting: true
	// cache-eu: pending 1, cancelled 0, waiting: true
}

// ExampleClient_QueueStats reads one queue's numbers, each bounded: a
// count with more than CountLimit jobs stops there and is reported Capped,
// "at least N". Here the queue has two pending jobs and one cancelled.
func ExampleClient_QueueStats() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	if err != nil {
		log.Fatal(err)
	}
	exampleCacheJobs(ctx, client)
	q, err := client.QueueStats(ctx, "cache", &lockstep.StatsParams{CountLimit: 1})
	if err != nil {
		log.Fatal(err)
	}
	for _, status := range []lockstep.JobStatus{lockstep.StatusPending, lockstep.StatusCancelled} {
		c := q.Counts[status]
		fmt.Println(status, c.N, "capped:", c.Capped)
	}
	// Output:
	// PENDING 1 capped: true
	// CANCELLED 1 capped: false
}
