package lockstep_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type ImportFeed struct {
	Feed string `json:"feed"`
}

func (ImportFeed) Kind() string { return "import_feed" }

// ExampleClient_Insert_invalidJob tells a job refused for what it is —
// args that are not JSON, a bad queue name, an option out of range — from
// a database failure: errors.Is(err, ErrInvalidJob). Nothing reached the
// database, and retrying the same call cannot succeed.
func ExampleClient_Insert_invalidJob() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	if err != nil {
		log.Fatal(err)
	}
	_, err = client.Insert(ctx, ImportFeed{Feed: "news"}, &lockstep.InsertOpts{Queue: "imports\n"})
	fmt.Println(errors.Is(err, lockstep.ErrInvalidJob), err)
	_, err = client.Insert(ctx, ImportFeed{Feed: "news"}, &lockstep.InsertOpts{Delay: time.Hour, ScheduledAt: time.Now()})
	fmt.Println(errors.Is(err, lockstep.ErrInvalidJob), err)
	_, err = client.Insert(ctx, lockstep.RawArgs{KindName: "import_feed", JSON: []byte(`{"feed":`)}, nil)
	fmt.Println(errors.Is(err, lockstep.ErrInvalidJob))
	// Output:
	// true enqueue: queue name "imports\n" contains a control or invalid character
	// true enqueue: give Delay or ScheduledAt, not both
	// true
}

// ExampleErrorKindOf classifies a database error the client returned, by
// its code rather than its message: here a retry that the unique index
// refused, because a newer job took the failed job's key meanwhile.
func ExampleErrorKindOf() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	ran := make(chan struct{}, 1)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[ImportFeed]) error {
		ran <- struct{}{}
		return lockstep.Permanent(errors.New("feed moved"))
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{Workers: workers, PollInterval: 50 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	unique := &lockstep.InsertOpts{Unique: &lockstep.UniqueOpts{}}
	failed, err := client.Insert(ctx, ImportFeed{Feed: "news"}, unique)
	if err != nil {
		log.Fatal(err)
	}
	<-ran
	if err := client.Stop(ctx); err != nil { // the job is FAILED once Stop returns
		log.Fatal(err)
	}
	newer, err := client.Insert(ctx, ImportFeed{Feed: "news"}, unique) // FAILED does not hold the key
	if err != nil {
		log.Fatal(err)
	}
	_, err = client.RetryJob(ctx, failed.ID)
	kind := lockstep.ErrorKindOf(err)
	fmt.Println("retry refused:", kind == lockstep.ErrorDuplicate, kind)
	fmt.Println("worth retrying:", kind.Retryable(), "- job", newer.ID, "holds the key")
	// Output:
	// retry refused: true duplicate key
	// worth retrying: false - job 2 holds the key
}

// ExampleClient_ClassifyError classifies an error from the application's
// own SQL on the client's database, by code, the way the client classifies
// its own: a duplicate here, never worth retrying, where a deadlock or a
// lock timeout would be.
func ExampleClient_ClassifyError() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	if err != nil {
		log.Fatal(err)
	}
	db := client.DB()
	if _, err := db.ExecContext(ctx, `CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE)`); err != nil {
		log.Fatal(err)
	}
	for range 2 {
		_, err := db.ExecContext(ctx, `INSERT INTO users (email) VALUES ('ada@example.com')`)
		if err == nil {
			fmt.Println("signed up")
			continue
		}
		kind := client.ClassifyError(err)
		fmt.Println("refused:", kind, "retryable:", kind.Retryable())
	}
	// Output:
	// signed up
	// refused: duplicate key retryable: false
}
