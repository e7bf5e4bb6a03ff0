package lockstep_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type PurgeCache struct {
	Shard int `json:"shard"`
}

func (PurgeCache) Kind() string { return "purge_cache" }

// ExampleClient_Bulk cancels every job matching a filter — the dashboard's
// "Cancel all matching live…" and the CLI's `lockstep jobs cancel` —
// after a preview of how many it would select. The preview is bounded by
// a time budget: on a table of millions of finished jobs it stops and
// says "at least" (Exact false) rather than read every id.
func ExampleClient_Bulk() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	if err != nil {
		log.Fatal(err)
	}
	var params []lockstep.InsertManyParams
	for i := range 5 {
		params = append(params, lockstep.InsertManyParams{Args: PurgeCache{Shard: i}, Opts: &lockstep.InsertOpts{Queue: "cdn"}})
	}
	if _, err := client.InsertMany(ctx, params); err != nil {
		log.Fatal(err)
	}
	filter := lockstep.JobFilter{Queue: "cdn", Kind: PurgeCache{}.Kind()}
	preview, err := client.BulkPreview(ctx, lockstep.BulkPreviewParams{Action: lockstep.BulkCancel, Filter: filter, Budget: 150 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("would cancel:", preview.Jobs, "exact:", preview.Exact)
	res, err := client.Bulk(ctx, lockstep.BulkParams{Action: lockstep.BulkCancel, Filter: filter})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("cancelled:", res.Changed, "in", res.Batches, "batch")
	// Output:
	// would cancel: 5 exact: true
	// cancelled: 5 in 1 batch
}
