package lockstep_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"

	"github.com/lockstep-queue/lockstep"
)

type ProvisionAccount struct {
	Account int    `json:"account"`
	Plan    string `json:"plan"`
}

func (ProvisionAccount) Kind() string { return "provision_account" }

type NotifyOwner struct {
	Account int    `json:"account"`
	Message string `json:"message"`
}

func (NotifyOwner) Kind() string { return "notify_owner" }

// ExampleClient_RetryTx runs an application transaction that also enqueues
// jobs (InsertManyTx), rolled back and run again whole if the database
// reports a deadlock, a lock timeout or, on SQLite, BUSY. The function must
// be safe to run more than once; RetryTx refuses to nest.
func ExampleClient_RetryTx() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.DB().ExecContext(ctx, `CREATE TABLE accounts (id INTEGER PRIMARY KEY, plan TEXT NOT NULL);
		INSERT INTO accounts VALUES (42, 'free')`); err != nil {
		log.Fatal(err)
	}
	err = client.RetryTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE accounts SET plan = 'pro' WHERE id = 42`); err != nil {
			return err
		}
		_, err := client.InsertManyTx(ctx, tx, []lockstep.InsertManyParams{
			{Args: ProvisionAccount{Account: 42, Plan: "pro"}},
			{Args: NotifyOwner{Account: 42, Message: "Welcome to Pro"}},
		})
		if err != nil {
			return err
		}
		nested := client.RetryTx(ctx, func(context.Context, *sql.Tx) error { return nil })
		fmt.Println("nested RetryTx refused:", errors.Is(nested, lockstep.ErrNestedRetryTx))
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	var plan string
	if err := client.DB().QueryRowContext(ctx, `SELECT plan FROM accounts WHERE id = 42`).Scan(&plan); err != nil {
		log.Fatal(err)
	}
	jobs, err := client.Jobs(ctx, lockstep.JobListParams{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("plan:", plan)
	for _, j := range jobs {
		fmt.Println("job:", j.Kind)
	}
	// Output:
	// nested RetryTx refused: true
	// plan: pro
	// job: provision_account
	// job: notify_owner
}
