package lockstep_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type SendReceipt struct {
	OrderID int `json:"order_id"`
}

func (SendReceipt) Kind() string { return "send_receipt" }

// ExampleClient_InsertTx is the transactional outbox: the job is inserted
// in the same transaction as the application's own write, so it exists if
// and only if that transaction commits. No receipt is sent for an order
// that was rolled back, and no order goes without one.
func ExampleClient_InsertTx() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	sent := make(chan int, 2)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[SendReceipt]) error {
		sent <- job.Args.OrderID
		return nil
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{Workers: workers, PollInterval: 50 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	db := client.DB() // the application's tables may live in the same database
	if _, err := db.ExecContext(ctx, `CREATE TABLE orders (id INTEGER PRIMARY KEY, total_cents INTEGER NOT NULL)`); err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)

	placeOrder := func(id, totalCents int) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() // a no-op once committed
		if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id, total_cents) VALUES (?, ?)`, id, totalCents); err != nil {
			return err
		}
		if _, err := client.InsertTx(ctx, tx, SendReceipt{OrderID: id}, nil); err != nil {
			return err
		}
		if totalCents <= 0 {
			return errors.New("an order must cost something") // rolls back the order and its job
		}
		return tx.Commit()
	}
	fmt.Println("order 1:", placeOrder(1, 4200))
	fmt.Println("order 2:", placeOrder(2, 0))
	fmt.Println("receipt sent for order", <-sent)
	if err := client.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	jobs, err := client.Jobs(ctx, lockstep.JobListParams{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("jobs:", len(jobs))
	// Output:
	// order 1: <nil>
	// order 2: an order must cost something
	// receipt sent for order 1
	// jobs: 1
}
