package lockstep_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/lockstep-queue/lockstep"
)

type ScanFile struct {
	Path string `json:"path"`
}

func (ScanFile) Kind() string { return "scan_file" }

type ScanArchive struct {
	Path string `json:"path"`
}

func (ScanArchive) Kind() string { return "scan_archive" }

// exampleScanJobs enqueues five jobs of two kinds and cancels one.
func exampleScanJobs(ctx context.Context, client *lockstep.Client) {
	res, err := client.InsertMany(ctx, []lockstep.InsertManyParams{
		{Args: ScanFile{Path: "a.txt"}},
		{Args: ScanArchive{Path: "b.zip"}},
		{Args: ScanFile{Path: "c.txt"}},
		{Args: ScanFile{Path: "d.txt"}},
		{Args: ScanArchive{Path: "e.tar"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.CancelJob(ctx, res[2].ID); err != nil {
		log.Fatal(err)
	}
}

// ExampleClient_Job reads one job by id; a job that does not exist (or
// that retention deleted) is ErrNotFound.
func ExampleClient_Job() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	if err != nil {
		log.Fatal(err)
	}
	exampleScanJobs(ctx, client)
	job, err := client.Job(ctx, 3)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.ID, job.Kind, string(job.Args), job.Status)
	_, err = client.Job(ctx, 99)
	fmt.Println("job 99 not found:", errors.Is(err, lockstep.ErrNotFound))
	// Output:
	// 3 scan_file {"path":"c.txt"} CANCELLED
	// job 99 not found: true
}

// ExampleClient_Jobs lists jobs oldest first, optionally of one status or
// run, a page at a time: each page starts after the last id of the one
// before.
func ExampleClient_Jobs() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	if err != nil {
		log.Fatal(err)
	}
	exampleScanJobs(ctx, client)
	p := lockstep.JobListParams{Status: lockstep.StatusPending, Limit: 3}
	for page := 1; ; page++ {
		jobs, err := client.Jobs(ctx, p)
		if err != nil {
			log.Fatal(err)
		}
		if len(jobs) == 0 {
			break
		}
		for _, j := range jobs {
			fmt.Println("page", page, "job", j.ID, j.Kind)
		}
		p.AfterID = jobs[len(jobs)-1].ID
	}
	// Output:
	// page 1 job 1 scan_file
	// page 1 job 2 scan_archive
	// page 1 job 4 scan_file
	// page 2 job 5 scan_archive
}

// ExampleClient_JobPage lists jobs newest first, filtered by kind, queue,
// status or run, as the CLI's `lockstep jobs` does. Each page examines a
// bounded window of ids, so a filter that matches few jobs never scans a
// large table; follow Next until it is 0.
func ExampleClient_JobPage() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	if err != nil {
		log.Fatal(err)
	}
	exampleScanJobs(ctx, client)
	p := lockstep.JobPageParams{Kind: "scan_file", Limit: 2}
	for {
		page, err := client.JobPage(ctx, p)
		if err != nil {
			log.Fatal(err)
		}
		for _, j := range page.Jobs {
			fmt.Println(j.ID, string(j.Args), j.Status)
		}
		if page.Next == 0 {
			break
		}
		p.BeforeID = page.Next
	}
	// Output:
	// 4 {"path":"d.txt"} PENDING
	// 3 {"path":"c.txt"} CANCELLED
	// 1 {"path":"a.txt"} PENDING
}
