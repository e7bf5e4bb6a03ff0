package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// Opening the queue's client for the commands that read and change jobs,
// runs and queues, and naming what they did not find.

// withQueueClient opens the database named by --dsn and runs fn with a
// client that enqueues and reads but runs no workers.
func (c *app) withQueueClient(ctx context.Context, fn func(*lockstep.Client) error) error {
	d, err := c.OpenDriver(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	client, err := lockstep.NewClient(d, lockstep.Config{Logger: c.Logger})
	if err != nil {
		return err
	}
	return fn(client)
}

// notFoundAs turns the library's ErrNotFound into "job 7 not found".
func notFoundAs(err error, what string, id int64) error {
	if errors.Is(err, rowtype.ErrNotFound) {
		return fmt.Errorf("%s %d not found", what, id)
	}
	return err
}
