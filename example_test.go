package lockstep_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/migrate"
)

type ResizeImage struct {
	Path string `json:"path"`
}

func (ResizeImage) Kind() string { return "resize_image" }

// Example enqueues a run of jobs on an embedded SQLite file, works them,
// and reads the run's progress.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "lockstep-example")
	defer os.RemoveAll(dir)
	drv, err := sqlite.Open(ctx, filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer drv.Close()
	m, _ := migrate.New(drv)
	if _, err := m.Up(ctx); err != nil {
		log.Fatal(err)
	}

	done := make(chan struct{}, 3)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[ResizeImage]) error {
		done <- struct{}{}
		return nil
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{Workers: workers, PollInterval: 50 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	run, jobs, err := client.InsertRun(ctx, "thumbnails", nil,
		lockstep.InsertManyParams{Args: ResizeImage{Path: "a.png"}},
		lockstep.InsertManyParams{Args: ResizeImage{Path: "b.png"}},
		lockstep.InsertManyParams{Args: ResizeImage{Path: "c.png"}},
	)
	if err != nil {
		log.Fatal(err)
	}
	for range jobs {
		<-done
	}
	if err := client.Stop(ctx); err != nil { // waits for the results to be written
		log.Fatal(err)
	}
	_, counts, err := client.Run(ctx, run.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("run %q: %d jobs, %d done\n", run.Name, len(jobs), counts[lockstep.StatusDone])
	// Output: run "thumbnails": 3 jobs, 3 done
}
