package lockstep_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"sort"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type FetchPart struct {
	Part string `json:"part"`
}

func (FetchPart) Kind() string { return "fetch_part" }

type Assemble struct{}

func (Assemble) Kind() string { return "assemble" }

// ExampleClient_InsertRun_workflow is a workflow: two jobs fetch parts in
// parallel, and a third, which depends on both, runs once both are DONE
// and reads what they recorded. Until then it is WAITING, a status no
// claim ever scans.
func ExampleClient_InsertRun_workflow() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	assembled := make(chan string, 1)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[FetchPart]) error {
		return lockstep.RecordOutput(ctx, map[string]string{"part": job.Args.Part, "bytes": "42"})
	}))
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[Assemble]) error {
		deps, err := lockstep.DependencyOutputs(ctx)
		if err != nil {
			return err
		}
		var parts []string
		for _, d := range deps {
			var out struct{ Part string }
			if err := json.Unmarshal(d.Output, &out); err != nil {
				return err
			}
			parts = append(parts, out.Part)
		}
		sort.Strings(parts)
		assembled <- fmt.Sprint(parts)
		return nil
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{Workers: workers, PollInterval: 50 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	// The workflow is inserted before the workers start, to show the
	// waiting job.
	_, res, err := client.InsertRun(ctx, "assemble order 7", nil,
		lockstep.InsertManyParams{Args: FetchPart{Part: "frame"}, Key: "frame"},
		lockstep.InsertManyParams{Args: FetchPart{Part: "wheels"}, Key: "wheels"},
		lockstep.InsertManyParams{Args: Assemble{}, Key: "assemble", DependsOn: []string{"frame", "wheels"}},
	)
	if err != nil {
		log.Fatal(err)
	}
	job, err := client.Job(ctx, res[2].ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("assemble:", job.Status, "waiting on", job.WaitingOn)

	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	fmt.Println("assembled from", <-assembled)
	// Output:
	// assemble: WAITING waiting on 2
	// assembled from [frame wheels]
}

// ExampleClient_InsertRun_cycle: InsertRun refuses a workflow whose
// dependencies go round, naming the cycle, before anything is written.
func ExampleClient_InsertRun_cycle() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	if err != nil {
		log.Fatal(err)
	}
	_, _, err = client.InsertRun(ctx, "round", nil,
		lockstep.InsertManyParams{Args: FetchPart{Part: "a"}, Key: "a", DependsOn: []string{"b"}},
		lockstep.InsertManyParams{Args: FetchPart{Part: "b"}, Key: "b", DependsOn: []string{"a"}},
	)
	fmt.Println(err)
	// Output:
	// create run: the dependencies form a cycle (→: depends on): "a" → "b" → "a"
}

type TellUploader struct {
	Email string `json:"email"`
}

func (TellUploader) Kind() string { return "tell_uploader" }

// ExampleRunCallback gives a run a callback: a job enqueued exactly once,
// across all processes, when every job of the run is DONE. Its worker
// receives CallbackArgs: the condition, the run's counts when it fired,
// and the data it was created with.
func ExampleRunCallback() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	fired := make(chan string, 1)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[TranscodeVideo]) error {
		return nil
	}))
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[lockstep.CallbackArgs[TellUploader]]) error {
		a := job.Args
		fired <- fmt.Sprintf("on %s: %d DONE, tell %s", a.On, a.Counts[lockstep.StatusDone], a.Data.Email)
		return nil
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{Workers: workers, PollInterval: 50 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	opts := &lockstep.RunOpts{Callbacks: []lockstep.RunCallback{
		{On: lockstep.CallbackOnSuccess, Args: TellUploader{Email: "ada@example.com"}},
	}}
	if _, _, err := client.InsertRun(ctx, "upload 982", opts,
		lockstep.InsertManyParams{Args: TranscodeVideo{Rendition: "720p"}},
		lockstep.InsertManyParams{Args: TranscodeVideo{Rendition: "1080p"}},
	); err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-fired)
	// Output:
	// on success: 2 DONE, tell ada@example.com
}
