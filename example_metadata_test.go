package lockstep_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type ExportCSV struct {
	Table string `json:"table"`
}

func (ExportCSV) Kind() string { return "export_csv" }

// ExampleInsertOpts_metadata attaches metadata to a job — who asked for
// it, a trace id — apart from its args. The worker reads it back, and the
// CLI and the dashboard show it.
func ExampleInsertOpts_metadata() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	type requestInfo struct {
		RequestedBy string `json:"requested_by"`
		TraceID     string `json:"trace_id"`
	}
	seen := make(chan requestInfo, 1)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[ExportCSV]) error {
		var info requestInfo
		if err := json.Unmarshal(job.Metadata, &info); err != nil {
			return lockstep.Permanent(err)
		}
		seen <- info
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
	_, err = client.Insert(ctx, ExportCSV{Table: "invoices"}, &lockstep.InsertOpts{
		Metadata: requestInfo{RequestedBy: "ada", TraceID: "4bf92f35"},
	})
	if err != nil {
		log.Fatal(err)
	}
	info := <-seen
	fmt.Println("export requested by", info.RequestedBy, "trace", info.TraceID)
	// Output: export requested by ada trace 4bf92f35
}
