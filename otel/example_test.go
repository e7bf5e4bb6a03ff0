package lockstepotel_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/migrate"
	lockstepotel "github.com/lockstep-queue/lockstep/otel"
)

type SendWelcome struct {
	User string `json:"user"`
}

func (SendWelcome) Kind() string { return "send_welcome" }

// Example traces a job from the request that enqueued it to its worker:
// the insert span is the request's child; the claim span that took the
// job, the root of a trace of its own, links back to it, and the work span
// is the claim's child, linked to the insert too.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "lockstepotel-example")
	if err != nil {
		log.Fatal(err)
	}
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

	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	mw := lockstepotel.New(lockstepotel.Config{TracerProvider: tp})

	done := make(chan struct{})
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[SendWelcome]) error {
		close(done)
		return nil
	}))
	// mw.Driver(drv): the client's claims are traced too.
	client, err := lockstep.NewClient(mw.Driver(drv), lockstep.Config{
		Workers:          workers,
		PollInterval:     50 * time.Millisecond,
		InsertMiddleware: []lockstep.InsertMiddleware{mw},
		WorkerMiddleware: []lockstep.WorkerMiddleware{mw},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}

	reqCtx, req := tp.Tracer("app").Start(ctx, "POST /signup")
	if _, err := client.Insert(reqCtx, SendWelcome{User: "ada"}, nil); err != nil {
		log.Fatal(err)
	}
	req.End()
	<-done
	if err := client.Stop(ctx); err != nil { // the work span has ended
		log.Fatal(err)
	}

	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans.GetSpans() {
		byName[s.Name] = s
	}
	request, insert, claim, work := byName["POST /signup"], byName["lockstep.insert"], byName["lockstep.claim default"], byName["lockstep.work send_welcome"]
	fmt.Println(insert.Name, insert.SpanKind, "child of the request:", insert.Parent.SpanID() == request.SpanContext.SpanID())
	fmt.Println(claim.Name, claim.SpanKind, "linked to the insert:", claim.Links[0].SpanContext.SpanID() == insert.SpanContext.SpanID())
	fmt.Println(work.Name, work.SpanKind, "child of the claim:", work.Parent.SpanID() == claim.SpanContext.SpanID(),
		"linked to the insert:", work.Links[0].SpanContext.SpanID() == insert.SpanContext.SpanID())
	// Output:
	// lockstep.insert producer child of the request: true
	// lockstep.claim default client linked to the insert: true
	// lockstep.work send_welcome consumer child of the claim: true linked to the insert: true
}
