package lockstep_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type FetchFeed struct {
	URL string `json:"url"`
}

func (FetchFeed) Kind() string { return "fetch_feed" }

// ExampleConfig_retryBackoff retries failed jobs after a delay of the
// client's choosing (here a short linear one) instead of the default
// attempt⁴ seconds. Each failure is kept in the job's error history.
func ExampleConfig_retryBackoff() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	done := make(chan struct{})
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[FetchFeed]) error {
		if job.Attempts < 3 {
			return errors.New("gateway timeout")
		}
		close(done)
		return nil
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{
		Workers:      workers,
		PollInterval: 50 * time.Millisecond,
		RetryBackoff: func(attempt int) time.Duration { return time.Duration(attempt) * 10 * time.Millisecond },
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	res, err := client.Insert(ctx, FetchFeed{URL: "https://example.com/feed.xml"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	<-done
	if err := client.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	job, err := client.Job(ctx, res.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.Status, "on attempt", job.Attempts)
	for _, e := range job.Errors {
		fmt.Printf("attempt %d: %s\n", e.Attempt, e.Error)
	}
	// Output:
	// DONE on attempt 3
	// attempt 1: gateway timeout
	// attempt 2: gateway timeout
}

// ExampleDefaultRetryBackoff shows the default delays — attempt⁴ seconds,
// spread by ±10% so that jobs that failed together do not come back
// together — and how to build on them: here capped at a minute.
func ExampleDefaultRetryBackoff() {
	for attempt := 1; attempt <= 3; attempt++ {
		base := time.Duration(attempt*attempt*attempt*attempt) * time.Second
		ratio := float64(lockstep.DefaultRetryBackoff(attempt)) / float64(base)
		fmt.Printf("attempt %d: %s ±10%%: %t\n", attempt, base, ratio >= 0.9 && ratio <= 1.1)
	}
	cfg := lockstep.Config{
		RetryBackoff: func(attempt int) time.Duration { return min(lockstep.DefaultRetryBackoff(attempt), time.Minute) },
	}
	fmt.Println("capped, attempt 10:", cfg.RetryBackoff(10))
	// Output:
	// attempt 1: 1s ±10%: true
	// attempt 2: 16s ±10%: true
	// attempt 3: 1m21s ±10%: true
	// capped, attempt 10: 1m0s
}

type PollPartner struct {
	Partner string `json:"partner"`
}

func (PollPartner) Kind() string { return "poll_partner" }

// PartnerWorker knows how long its partner wants to be left alone after
// a failure, whatever the client's RetryBackoff says.
type PartnerWorker struct {
	done chan struct{}
}

func (w *PartnerWorker) Work(ctx context.Context, job *lockstep.Job[PollPartner]) error {
	if job.Attempts == 1 {
		return errors.New("partner is restarting")
	}
	close(w.done)
	return nil
}

// NextRetry is the delay before the next attempt after a failure.
func (w *PartnerWorker) NextRetry(job *lockstep.Job[PollPartner]) time.Duration {
	return 20 * time.Millisecond
}

// ExampleWorkerNextRetry lets one kind's worker choose its own retry
// delay, overriding Config.RetryBackoff for that kind only.
func ExampleWorkerNextRetry() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	w := &PartnerWorker{done: make(chan struct{})}
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, w)
	client, err := lockstep.NewClient(drv, lockstep.Config{Workers: workers, PollInterval: 50 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	res, err := client.Insert(ctx, PollPartner{Partner: "acme"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	<-w.done // the default backoff would have waited a second
	if err := client.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	job, err := client.Job(ctx, res.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.Status, "on attempt", job.Attempts, "after:", job.LastError)
	// Output: DONE on attempt 2 after: partner is restarting
}
