package lockstep_test

import (
	"context"
	"fmt"
	"log"

	"github.com/lockstep-queue/lockstep"
)

type TranscodeVideo struct {
	Rendition string `json:"rendition"`
}

func (TranscodeVideo) Kind() string { return "transcode_video" }

// ExampleClient_InsertRun creates a run — a group of jobs followed and
// cancelled as one — with metadata of its own, adds a job to it later
// through InsertOpts.RunID, and reads its progress.
func ExampleClient_InsertRun() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	if err != nil {
		log.Fatal(err)
	}
	run, _, err := client.InsertRun(ctx, "upload 981", &lockstep.RunOpts{Metadata: map[string]string{"uploader": "ada"}},
		lockstep.InsertManyParams{Args: TranscodeVideo{Rendition: "720p"}},
		lockstep.InsertManyParams{Args: TranscodeVideo{Rendition: "1080p"}},
	)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.Insert(ctx, TranscodeVideo{Rendition: "4k"}, &lockstep.InsertOpts{RunID: run.ID}); err != nil {
		log.Fatal(err)
	}
	summary, err := client.RunSummary(ctx, run.ID, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("run %d %q %s %s\n", summary.ID, summary.Name, summary.Status, summary.Metadata)
	fmt.Println("pending:", summary.Counts.Counts[lockstep.StatusPending], "capped:", summary.Counts.Capped)
	// Output:
	// run 1 "upload 981" ACTIVE {"uploader":"ada"}
	// pending: 3 capped: false
}

// ExampleClient_Runs lists runs newest first with their job counts, as
// the CLI's `lockstep runs` and the dashboard do. Every count is bounded
// (here by the default of 100,000 jobs per run), so listing stays cheap on
// large runs.
func ExampleClient_Runs() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	if err != nil {
		log.Fatal(err)
	}
	renditions := []lockstep.InsertManyParams{
		{Args: TranscodeVideo{Rendition: "720p"}},
		{Args: TranscodeVideo{Rendition: "1080p"}},
	}
	_, monday, err := client.InsertRun(ctx, "monday import", nil, renditions...)
	if err != nil {
		log.Fatal(err)
	}
	if _, _, err := client.InsertRun(ctx, "tuesday import", nil, renditions...); err != nil {
		log.Fatal(err)
	}
	if _, err := client.CancelJob(ctx, monday[0].ID); err != nil {
		log.Fatal(err)
	}
	runs, err := client.Runs(ctx, lockstep.RunListParams{}, 0)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range runs {
		fmt.Println(r.ID, r.Name, r.Counts.Counts)
	}
	// Output:
	// 2 tuesday import map[PENDING:2]
	// 1 monday import map[CANCELLED:1 PENDING:1]
}
