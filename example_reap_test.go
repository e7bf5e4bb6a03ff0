package lockstep_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
)

type ReindexSearch struct {
	Index string `json:"index"`
}

func (ReindexSearch) Kind() string { return "reindex_search" }

// ExampleClient_Reap recovers a job whose worker died: once its heartbeat
// is older than Config.ReapAfter, the reaper that every started client
// runs (Reap, every ReapInterval) puts it back to PENDING, and a worker
// runs it again. The intervals here are short so the example is quick;
// the defaults are a 5s heartbeat and a one-minute ReapAfter.
func ExampleClient_Reap() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	reaped := make(chan lockstep.JobStatus, 1)
	ran := make(chan int, 1)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[ReindexSearch]) error {
		select {
		case ran <- job.Attempts:
		default:
		}
		return nil
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{
		Workers:           workers,
		PollInterval:      50 * time.Millisecond,
		HeartbeatInterval: 10 * time.Millisecond,
		ReapAfter:         50 * time.Millisecond,
		ReapInterval:      10 * time.Millisecond,
		OnEvent: func(e lockstep.Event) {
			if e.Kind == lockstep.EventReaped {
				select {
				case reaped <- e.Status:
				default: // OnEvent must never block
				}
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.Insert(ctx, ReindexSearch{Index: "products"}, nil); err != nil {
		log.Fatal(err)
	}
	// A worker process claims the job and dies without a word: simulated
	// here by claiming it through the driver, which no heartbeat follows.
	if _, err := drv.Executor().JobClaim(ctx, &driver.JobClaimParams{Queue: lockstep.DefaultQueue, Max: 1}); err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	fmt.Println("reaped, now", <-reaped)
	fmt.Println("run again, attempt", <-ran)
	if err := client.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	left, err := client.Reap(ctx) // one pass now, as the loop does
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("left to reap:", len(left))
	// Output:
	// reaped, now PENDING
	// run again, attempt 2
	// left to reap: 0
}

type ArchiveMailbox struct {
	Mailbox string `json:"mailbox"`
}

func (ArchiveMailbox) Kind() string { return "archive_mailbox" }

// ExampleClient_Heartbeat shows how a job cancelled in another process —
// the CLI, the dashboard, another service's client — reaches the worker
// running it: that worker's client notices at its next heartbeat and
// cancels the job's context with ErrJobLost. Heartbeat runs one beat now
// instead of waiting for HeartbeatInterval.
func ExampleClient_Heartbeat() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	started := make(chan int64, 1)
	stopped := make(chan error, 1)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[ArchiveMailbox]) error {
		started <- job.ID
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return ctx.Err()
	}))
	worker, err := lockstep.NewClient(drv, lockstep.Config{Workers: workers, PollInterval: 50 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	if err := worker.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer worker.Stop(ctx)
	admin, err := lockstep.NewClient(drv, lockstep.Config{}) // stands for another process
	if err != nil {
		log.Fatal(err)
	}
	if _, err := admin.Insert(ctx, ArchiveMailbox{Mailbox: "ada"}, nil); err != nil {
		log.Fatal(err)
	}
	id := <-started
	ok, err := admin.CancelJob(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("cancelled by admin:", ok)
	worker.Heartbeat(ctx)
	fmt.Println("worker's context:", <-stopped)
	if err := worker.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	job, err := admin.Job(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("job:", job.Status)
	// Output:
	// cancelled by admin: true
	// worker's context: job was cancelled or reclaimed; its result will be discarded
	// job: CANCELLED
}
