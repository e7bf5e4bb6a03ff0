package lockstep_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/lockstep-queue/lockstep"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/migrate"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// exampleDriver opens a migrated SQLite file in a fresh directory.
func exampleDriver(ctx context.Context) (driver.Driver, func()) {
	dir, err := os.MkdirTemp("", "lockstep-example")
	if err != nil {
		log.Fatal(err)
	}
	drv, err := sqlite.Open(ctx, filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatal(err)
	}
	m, _ := migrate.New(drv)
	if _, err := m.Up(ctx); err != nil {
		log.Fatal(err)
	}
	return drv, func() { drv.Close(); os.RemoveAll(dir) }
}

type SyncAccount struct {
	Account int `json:"account"`
}

func (SyncAccount) Kind() string { return "sync_account" }

// ExampleUniqueOpts enqueues the same sync twice: the second is a
// duplicate of the first while the first is PENDING or RUNNING.
func ExampleUniqueOpts() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	if err != nil {
		log.Fatal(err)
	}
	opts := &lockstep.InsertOpts{Unique: &lockstep.UniqueOpts{ByPeriod: time.Hour}}
	first, err := client.Insert(ctx, SyncAccount{Account: 42}, opts)
	if err != nil {
		log.Fatal(err)
	}
	second, err := client.Insert(ctx, SyncAccount{Account: 42}, opts)
	if err != nil {
		log.Fatal(err)
	}
	other, err := client.Insert(ctx, SyncAccount{Account: 7}, opts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first inserted:", !first.Duplicate)
	fmt.Println("second is a duplicate of the first:", second.Duplicate && second.ID == first.ID)
	fmt.Println("another account inserted:", !other.Duplicate)
	// Output:
	// first inserted: true
	// second is a duplicate of the first: true
	// another account inserted: true
}

// ExampleRecordOutput records a job's output and reads it back, with the
// metadata it was enqueued with.
func ExampleRecordOutput() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	done := make(chan struct{})
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[SyncAccount]) error {
		defer close(done)
		return lockstep.RecordOutput(ctx, map[string]int{"synced": 12})
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{Workers: workers, PollInterval: 50 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	res, err := client.Insert(ctx, SyncAccount{Account: 42}, &lockstep.InsertOpts{Metadata: map[string]string{"requested_by": "ada"}})
	if err != nil {
		log.Fatal(err)
	}
	<-done
	if err := client.Stop(ctx); err != nil { // writes the job's DONE with its output
		log.Fatal(err)
	}
	job, err := client.Job(ctx, res.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.Status, string(job.Metadata), string(job.Output))
	// Output: DONE {"requested_by":"ada"} {"synced":12}
}

// ExamplePeriodicJob declares a job enqueued at the top of every hour
// (UTC) and one every 15 minutes; every process that has them enqueues
// each tick once between them.
func ExamplePeriodicJob() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	client, err := lockstep.NewClient(drv, lockstep.Config{
		PeriodicJobs: []lockstep.PeriodicJob{
			{Name: "hourly-sync", Cron: "0 * * * *", Args: SyncAccount{Account: 42}},
			{Name: "quarter-hour-sync", Interval: 15 * time.Minute, Args: SyncAccount{Account: 7},
				Opts: &lockstep.InsertOpts{Queue: "sync"}, CatchUp: time.Hour},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil { // enqueues the last hour's missed quarter-hours
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	jobs, err := client.Jobs(ctx, rowtype.JobListParams{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("caught up:", len(jobs) >= 4 && len(jobs) <= 5)
	// Output: caught up: true
}

// ExampleClient_PauseQueue pauses a queue in every process serving it,
// caps its workers per process, and resumes it.
func ExampleClient_PauseQueue() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.PauseQueue(ctx, "reports"); err != nil {
		log.Fatal(err)
	}
	if err := client.SetQueueMaxWorkers(ctx, "reports", 2); err != nil {
		log.Fatal(err)
	}
	settings, err := client.ListQueueSettings(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range settings {
		fmt.Println(s.Queue, "paused:", !s.Paused.IsZero(), "max workers:", s.MaxWorkers)
	}
	if err := client.ResumeQueue(ctx, "reports"); err != nil {
		log.Fatal(err)
	}
	// Output: reports paused: true max workers: 2
}
