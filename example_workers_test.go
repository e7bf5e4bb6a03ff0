package lockstep_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/lockstep-queue/lockstep"
)

type SendInvoice struct {
	Invoice int `json:"invoice"`
}

func (SendInvoice) Kind() string { return "send_invoice" }

// InvoiceWorker is a worker with dependencies of its own: here where it
// delivers, in an application a mailer or a database handle.
type InvoiceWorker struct {
	outbox chan<- string
}

func (w *InvoiceWorker) Work(ctx context.Context, job *lockstep.Job[SendInvoice]) error {
	w.outbox <- fmt.Sprintf("invoice %d, attempt %d", job.Args.Invoice, job.Attempts)
	return nil
}

// ExampleAddWorker registers a worker type — any type with a Work method
// for its args' kind — rather than a WorkFunc. The job it receives has its
// args decoded and the row's fields (id, attempt, queue, metadata).
func ExampleAddWorker() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	outbox := make(chan string, 1)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, &InvoiceWorker{outbox: outbox})
	client, err := lockstep.NewClient(drv, lockstep.Config{Workers: workers, PollInterval: 50 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	if _, err := client.Insert(ctx, SendInvoice{Invoice: 1001}, nil); err != nil {
		log.Fatal(err)
	}
	fmt.Println("sent", <-outbox)
	fmt.Println("kinds:", workers.Kinds())
	// Output:
	// sent invoice 1001, attempt 1
	// kinds: [send_invoice]
}

// ExampleAddWorkerSafely registers workers from configuration or plugins,
// where a kind registered twice is an error to report rather than the
// panic AddWorker raises.
func ExampleAddWorkerSafely() {
	workers := lockstep.NewWorkers()
	first := lockstep.AddWorkerSafely(workers, &InvoiceWorker{})
	second := lockstep.AddWorkerSafely(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[SendInvoice]) error {
		return nil
	}))
	fmt.Println("first:", first)
	fmt.Println("second:", second)
	// Output:
	// first: <nil>
	// second: add worker: kind "send_invoice" is already registered
}
