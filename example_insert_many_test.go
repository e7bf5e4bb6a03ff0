package lockstep_test

import (
	"context"
	"fmt"
	"log"

	"github.com/lockstep-queue/lockstep"
)

type IndexDocument struct {
	Doc string `json:"doc"`
}

func (IndexDocument) Kind() string { return "index_document" }

// ExampleClient_InsertMany enqueues a batch of jobs in one statement; the
// results come back in input order, each with its job's id. Each job may
// have options of its own.
func ExampleClient_InsertMany() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	if err != nil {
		log.Fatal(err)
	}
	results, err := client.InsertMany(ctx, []lockstep.InsertManyParams{
		{Args: IndexDocument{Doc: "intro.md"}},
		{Args: IndexDocument{Doc: "guide.md"}},
		{Args: IndexDocument{Doc: "faq.md"}, Opts: &lockstep.InsertOpts{Queue: "search-slow"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range results {
		job, err := client.Job(ctx, r.ID)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(r.ID, job.Queue, string(job.Args))
	}
	// Output:
	// 1 default {"doc":"intro.md"}
	// 2 default {"doc":"guide.md"}
	// 3 search-slow {"doc":"faq.md"}
}
