package lockstep_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type GeneratePDF struct {
	Doc int `json:"doc"`
}

func (GeneratePDF) Kind() string { return "generate_pdf" }

// ExampleClient_SetQueueMaxWorkers caps a queue's workers in every process
// at runtime — say, while the PDF renderer it calls is struggling —
// overriding QueueConfig.MaxWorkers until the cap is cleared with 0.
func ExampleClient_SetQueueMaxWorkers() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	var mu sync.Mutex
	running, most := 0, 0
	done := make(chan struct{}, 4)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[GeneratePDF]) error {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		defer func() {
			mu.Lock()
			running--
			mu.Unlock()
			done <- struct{}{}
		}()
		return nil
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{
		Workers:      workers,
		Queues:       map[string]lockstep.QueueConfig{"pdf": {MaxWorkers: 8}},
		PollInterval: 50 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.SetQueueMaxWorkers(ctx, "pdf", 1); err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	jobs := make([]lockstep.InsertManyParams, 4)
	for i := range jobs {
		jobs[i] = lockstep.InsertManyParams{Args: GeneratePDF{Doc: i}, Opts: &lockstep.InsertOpts{Queue: "pdf"}}
	}
	if _, err := client.InsertMany(ctx, jobs); err != nil {
		log.Fatal(err)
	}
	for range jobs {
		<-done
	}
	mu.Lock()
	fmt.Println("most running at once:", most)
	mu.Unlock()
	if err := client.SetQueueMaxWorkers(ctx, "pdf", 0); err != nil { // back to the configured 8
		log.Fatal(err)
	}
	settings, err := client.ListQueueSettings(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(settings[0].Queue, "cap:", settings[0].MaxWorkers)
	// Output:
	// most running at once: 1
	// pdf cap: 0
}
