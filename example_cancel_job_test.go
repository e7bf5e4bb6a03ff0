package lockstep_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type PublishPost struct {
	Post int `json:"post"`
}

func (PublishPost) Kind() string { return "publish_post" }

// ExampleClient_CancelJob withdraws one job — here a post scheduled for
// tomorrow whose author changed their mind. Only a PENDING or RUNNING job
// can be cancelled; cancelling it again reports false.
func ExampleClient_CancelJob() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	if err != nil {
		log.Fatal(err)
	}
	res, err := client.Insert(ctx, PublishPost{Post: 77}, &lockstep.InsertOpts{Delay: 24 * time.Hour})
	if err != nil {
		log.Fatal(err)
	}
	ok, err := client.CancelJob(ctx, res.ID)
	if err != nil {
		log.Fatal(err)
	}
	again, err := client.CancelJob(ctx, res.ID)
	if err != nil {
		log.Fatal(err)
	}
	job, err := client.Job(ctx, res.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("cancelled:", ok, "cancelled again:", again, "status:", job.Status)
	// Output: cancelled: true cancelled again: false status: CANCELLED
}
