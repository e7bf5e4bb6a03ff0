package lockstep_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type ResizeAvatar struct {
	User int `json:"user"`
}

func (ResizeAvatar) Kind() string { return "resize_avatar" }

// ExampleEvent follows a job through the client's events — for metrics,
// tracing or logs (the metrics package is built on them). Config.OnEvent
// is called synchronously from the client's goroutines, so it hands each
// event on and returns at once.
func ExampleEvent() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	events := make(chan lockstep.Event, 16)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[ResizeAvatar]) error {
		return nil
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{
		Workers:      workers,
		PollInterval: 50 * time.Millisecond,
		OnEvent: func(e lockstep.Event) {
			switch e.Kind {
			case lockstep.EventEnqueued, lockstep.EventJobStarted, lockstep.EventJobFinished:
				events <- e
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	// Enqueued before Start: a started client may claim the job, and report
	// it started, before Insert has returned and reported it enqueued.
	if _, err := client.Insert(ctx, ResizeAvatar{User: 42}, nil); err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	for e := range events {
		if e.Kind == lockstep.EventJobFinished {
			fmt.Println(e.Kind, e.Queue, e.JobKind, e.Status)
			break
		}
		fmt.Println(e.Kind, e.Queue, e.JobKind)
	}
	// Output:
	// enqueued default resize_avatar
	// job_started default resize_avatar
	// job_finished default resize_avatar DONE
}
