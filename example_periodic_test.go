package lockstep_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type CollectMetrics struct {
	Source string `json:"source"`
}

func (CollectMetrics) Kind() string { return "collect_metrics" }

// ExamplePeriodicJob_interval enqueues a job at every multiple of an
// interval since the Unix epoch — the same instants in every process, so
// that however many processes have the schedule, each tick makes one job.
// The interval here is short so that the example does not wait long for
// its first tick.
func ExamplePeriodicJob_interval() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	ticked := make(chan int64, 1)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[CollectMetrics]) error {
		select {
		case ticked <- job.ID:
		default: // later ticks
		}
		return nil
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{
		Workers:      workers,
		PollInterval: 50 * time.Millisecond,
		PeriodicJobs: []lockstep.PeriodicJob{
			{Name: "collect-metrics", Interval: 50 * time.Millisecond, Args: CollectMetrics{Source: "db"}},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	id := <-ticked
	if err := client.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	job, err := client.Job(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.Kind, string(job.Args), job.Status)
	fmt.Println("scheduled on a tick:", job.AvailableAt.UnixMilli()%50 == 0)
	fmt.Println("unique per tick:", job.UniqueKey != "")
	// Output:
	// collect_metrics {"source":"db"} DONE
	// scheduled on a tick: true
	// unique per tick: true
}
