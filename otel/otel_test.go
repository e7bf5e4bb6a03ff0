package lockstepotel_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/migrate"
	lockstepotel "github.com/lockstep-queue/lockstep/otel"
)

type welcomeArgs struct {
	User string `json:"user"`
	Fail int    `json:"fail"` // fail this many attempts first
}

func (welcomeArgs) Kind() string { return "welcome_email" }

// openDB opens n drivers (n processes) on one fresh, migrated SQLite file.
func openDB(t *testing.T, n int) []driver.Driver {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lockstep.db")
	var drvs []driver.Driver
	for i := range n {
		drv, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = drv.Close() })
		if i == 0 {
			m, err := migrate.New(drv)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Up(ctx); err != nil {
				t.Fatal(err)
			}
		}
		drvs = append(drvs, drv)
	}
	return drvs
}

func newClient(t *testing.T, drv driver.Driver, cfg lockstep.Config) *lockstep.Client {
	t.Helper()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := lockstep.NewClient(drv, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tracing is an in-memory exporter behind a provider that exports each
// span as it ends.
func tracing(t *testing.T) (*tracetest.InMemoryExporter, *sdktrace.TracerProvider) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return exp, tp
}

// worker starts a client that works welcome emails through mw, starting a
// span of its own in each, and reports every finished job to finished.
func worker(t *testing.T, drv driver.Driver, mw *lockstepotel.Middleware, tp trace.TracerProvider) (*lockstep.Client, chan lockstep.Event) {
	t.Helper()
	ws := lockstep.NewWorkers()
	lockstep.AddWorker(ws, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[welcomeArgs]) error {
		_, span := tp.Tracer("app").Start(ctx, "render template")
		span.End()
		switch {
		case job.Args.Fail < 0:
			panic("template missing")
		case job.Attempts <= job.Args.Fail:
			return errors.New("smtp: connection refused")
		}
		return nil
	}))
	finished := make(chan lockstep.Event, 10)
	c := newClient(t, drv, lockstep.Config{
		Workers:          ws,
		WorkerMiddleware: []lockstep.WorkerMiddleware{mw},
		PollInterval:     20 * time.Millisecond,
		RetryBackoff:     func(int) time.Duration { return 0 },
		OnEvent: func(e lockstep.Event) {
			if e.Kind == lockstep.EventJobFinished {
				finished <- e
			}
		},
	})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.StopAndCancel(context.Background()) })
	return c, finished
}

func spanNamed(t *testing.T, spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	t.Helper()
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no span %q among %d", name, len(spans))
	}
	return out
}

func attr(s tracetest.SpanStub, key attribute.Key) attribute.Value {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value
		}
	}
	return attribute.Value{}
}

// TestWorkSpanLinksToInsertSpan: client A enqueues inside a request's span,
// client B (another pool on the same database, as another process) works
// the job; B's work span is linked to A's insert span, and the worker's own
// span is a child of the work span.
func TestWorkSpanLinksToInsertSpan(t *testing.T) {
	ctx := context.Background()
	exp, tp := tracing(t)
	mw := lockstepotel.New(lockstepotel.Config{TracerProvider: tp})
	drvs := openDB(t, 2)
	a := newClient(t, drvs[0], lockstep.Config{InsertMiddleware: []lockstep.InsertMiddleware{mw}})
	_, finished := worker(t, drvs[1], lockstepotel.New(lockstepotel.Config{TracerProvider: tp}), tp)

	reqCtx, req := tp.Tracer("app").Start(ctx, "POST /signup")
	res, err := a.Insert(reqCtx, welcomeArgs{User: "ada"}, &lockstep.InsertOpts{Metadata: map[string]string{"requested_by": "ada"}})
	if err != nil {
		t.Fatal(err)
	}
	req.End()
	if e := <-finished; e.Status != lockstep.StatusDone {
		t.Fatalf("job finished %s, want DONE", e.Status)
	}

	spans := exp.GetSpans()
	request := spanNamed(t, spans, "POST /signup")[0]
	insert := spanNamed(t, spans, lockstepotel.InsertSpanName)[0]
	work := spanNamed(t, spans, lockstepotel.WorkSpanName+" welcome_email")[0]
	render := spanNamed(t, spans, "render template")[0]

	if insert.Parent.SpanID() != request.SpanContext.SpanID() || insert.SpanContext.TraceID() != request.SpanContext.TraceID() {
		t.Errorf("the insert span is not a child of the request's")
	}
	if insert.SpanKind != trace.SpanKindProducer || work.SpanKind != trace.SpanKindConsumer {
		t.Errorf("span kinds: insert %s, work %s", insert.SpanKind, work.SpanKind)
	}
	if len(work.Links) != 1 {
		t.Fatalf("work span has %d links, want 1", len(work.Links))
	}
	link := work.Links[0].SpanContext
	if link.TraceID() != insert.SpanContext.TraceID() || link.SpanID() != insert.SpanContext.SpanID() {
		t.Errorf("the work span links to %s/%s, want the insert span %s/%s",
			link.TraceID(), link.SpanID(), insert.SpanContext.TraceID(), insert.SpanContext.SpanID())
	}
	if work.Parent.IsValid() || work.SpanContext.TraceID() == insert.SpanContext.TraceID() {
		t.Errorf("the work span is a root of its own trace, linked, not parented")
	}
	if render.Parent.SpanID() != work.SpanContext.SpanID() {
		t.Errorf("the worker's span is not a child of the work span")
	}

	id := strconv.FormatInt(res.ID, 10)
	for key, want := range map[attribute.Key]string{
		"messaging.system":           "lockstep",
		"messaging.destination.name": "default",
		"messaging.message.id":       id,
		"messaging.operation.type":   "process",
		lockstepotel.AttrJobKind:     "welcome_email",
	} {
		if got := attr(work, key).Emit(); got != want {
			t.Errorf("work span %s = %q, want %q", key, got, want)
		}
	}
	if got := attr(work, lockstepotel.AttrJobAttempt).AsInt64(); got != 1 {
		t.Errorf("work span attempt = %d, want 1", got)
	}
	if work.Status.Code != codes.Unset {
		t.Errorf("a successful work span's status is %s, want Unset", work.Status.Code)
	}
	if got := attr(insert, "messaging.message.id").Emit(); got != id {
		t.Errorf("insert span message id = %q, want %q", got, id)
	}

	// The trace context is in the job's metadata, beside the enqueuer's.
	job, err := a.Job(ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		RequestedBy  string            `json:"requested_by"`
		TraceContext map[string]string `json:"trace_context"`
	}
	if err := json.Unmarshal(job.Metadata, &meta); err != nil {
		t.Fatal(err)
	}
	want := "00-" + insert.SpanContext.TraceID().String() + "-" + insert.SpanContext.SpanID().String() + "-01"
	if meta.RequestedBy != "ada" || meta.TraceContext["traceparent"] != want {
		t.Errorf("metadata %s, want requested_by and traceparent %s", job.Metadata, want)
	}
	if sc := lockstepotel.Enqueued(job); sc.SpanID() != insert.SpanContext.SpanID() {
		t.Errorf("Enqueued = %s, want the insert span", sc.SpanID())
	}
}

// TestWorkSpanRecordsFailures: each attempt is a span of its own, linked
// to the one insert span; a failed attempt's span is an error with the
// job's error, a panic's with the panic's value and its stack apart.
func TestWorkSpanRecordsFailures(t *testing.T) {
	ctx := context.Background()
	exp, tp := tracing(t)
	mw := lockstepotel.New(lockstepotel.Config{TracerProvider: tp})
	drv := openDB(t, 1)[0]
	_, finished := worker(t, drv, mw, tp)
	// One client both enqueues and works, through one middleware.
	c2 := newClient(t, drv, lockstep.Config{InsertMiddleware: []lockstep.InsertMiddleware{mw}})

	if _, err := c2.Insert(ctx, welcomeArgs{User: "bob", Fail: 1}, nil); err != nil {
		t.Fatal(err)
	}
	for e := range finished {
		if e.Status == lockstep.StatusDone {
			break
		}
	}
	if _, err := c2.Insert(ctx, welcomeArgs{User: "eve", Fail: -1}, &lockstep.InsertOpts{MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	if e := <-finished; e.Status != lockstep.StatusFailed {
		t.Fatalf("the panicking job finished %s, want FAILED", e.Status)
	}

	spans := exp.GetSpans()
	inserts := spanNamed(t, spans, lockstepotel.InsertSpanName)
	works := spanNamed(t, spans, lockstepotel.WorkSpanName+" welcome_email")
	if len(inserts) != 2 || len(works) != 3 {
		t.Fatalf("%d insert and %d work spans, want 2 and 3", len(inserts), len(works))
	}
	failed, retried, panicked := works[0], works[1], works[2]
	for i, w := range []tracetest.SpanStub{failed, retried} {
		if len(w.Links) != 1 || w.Links[0].SpanContext.SpanID() != inserts[0].SpanContext.SpanID() {
			t.Errorf("attempt %d is not linked to its insert span", i+1)
		}
		if got := attr(w, lockstepotel.AttrJobAttempt).AsInt64(); got != int64(i+1) {
			t.Errorf("attempt attribute %d, want %d", got, i+1)
		}
	}
	if failed.Status.Code != codes.Error || failed.Status.Description != "smtp: connection refused" {
		t.Errorf("failed attempt's status: %v", failed.Status)
	}
	if len(failed.Events) != 1 || failed.Events[0].Name != "exception" {
		t.Errorf("the failed attempt's error is not recorded: %v", failed.Events)
	}
	if retried.Status.Code != codes.Unset {
		t.Errorf("the successful retry's status: %v", retried.Status)
	}
	if panicked.Status.Code != codes.Error || panicked.Status.Description != "panic: template missing" {
		t.Errorf("panicked attempt's status: %v", panicked.Status)
	}
	var stack string
	for _, e := range panicked.Events {
		for _, a := range e.Attributes {
			if a.Key == "exception.stacktrace" {
				stack = a.Value.AsString()
			}
		}
	}
	if !strings.Contains(stack, "otel_test.go") {
		t.Errorf("the panic's stack is not recorded: %q", stack)
	}
}

// TestInsertSpan: one span for a batch; a job whose metadata cannot take
// the trace context is inserted untraced; a refused insert's span is an
// error.
func TestInsertSpan(t *testing.T) {
	ctx := context.Background()
	exp, tp := tracing(t)
	mw := lockstepotel.New(lockstepotel.Config{TracerProvider: tp})
	drv := openDB(t, 1)[0]
	errRefused := errors.New("no tenant")
	refuse := lockstep.InsertMiddlewareFunc(func(ctx context.Context, jobs []*lockstep.InsertJob, next func(context.Context) ([]lockstep.InsertResult, error)) ([]lockstep.InsertResult, error) {
		if jobs[0].Queue() == "refused" {
			return nil, errRefused
		}
		return next(ctx)
	})
	c := newClient(t, drv, lockstep.Config{InsertMiddleware: []lockstep.InsertMiddleware{mw, refuse}})

	res, err := c.InsertMany(ctx, []lockstep.InsertManyParams{
		{Args: welcomeArgs{User: "a"}},
		{Args: welcomeArgs{User: "b"}, Opts: &lockstep.InsertOpts{Metadata: "not an object"}},
		{Args: welcomeArgs{User: "c"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Insert(ctx, welcomeArgs{}, &lockstep.InsertOpts{Queue: "refused"})
	if !errors.Is(err, errRefused) {
		t.Fatalf("insert: %v, want the refusal", err)
	}

	inserts := spanNamed(t, exp.GetSpans(), lockstepotel.InsertSpanName)
	if len(inserts) != 2 {
		t.Fatalf("%d insert spans, want 2", len(inserts))
	}
	batch, refused := inserts[0], inserts[1]
	if got := attr(batch, "messaging.batch.message_count").AsInt64(); got != 3 {
		t.Errorf("batch count %d, want 3", got)
	}
	if len(batch.Events) != 1 || !strings.Contains(attr(tracetest.SpanStub{Attributes: batch.Events[0].Attributes}, "exception.message").Emit(), "not a JSON object") {
		t.Errorf("the untraced job is not reported: %v", batch.Events)
	}
	for i, r := range res {
		job, err := c.Job(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		sc := lockstepotel.Enqueued(job)
		if i == 1 {
			if string(job.Metadata) != `"not an object"` || sc.IsValid() {
				t.Errorf("job %d: metadata %s changed", i, job.Metadata)
			}
			continue
		}
		if sc.SpanID() != batch.SpanContext.SpanID() {
			t.Errorf("job %d carries %s, want the batch's span", i, sc.SpanID())
		}
	}
	if refused.Status.Code != codes.Error || refused.Status.Description != "no tenant" {
		t.Errorf("refused insert's status: %v", refused.Status)
	}
}
