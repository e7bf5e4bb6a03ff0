package lockstepotel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// expect reports a failed check and goes on; must stops the test.
func expect(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Errorf(format, args...)
	}
}

func must(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Fatalf(format, args...)
	}
}

// TestClaimSpanJoinsInsertAndWork: client A enqueues three jobs in one
// insert, inside a request's span; client B — another pool on the same
// SQLite file, as another process, its driver wrapped by its Middleware's
// Driver — claims the three in one claim and works them. The claim span
// carries the queue and the number of jobs it took and links to the insert
// span; each work span is the claim span's child, in the claim's trace,
// and links to the insert span too: insert → claim → work. A job that
// fails once is claimed twice, and each attempt is the child of its own
// claim.
func TestClaimSpanJoinsInsertAndWork(t *testing.T) {
	ctx := context.Background()
	exp, tp := tracing(t)
	drvs := openDB(t, 2)
	a := newClient(t, drvs[0], lockstep.Config{InsertMiddleware: []lockstep.InsertMiddleware{lockstepotel.New(lockstepotel.Config{TracerProvider: tp})}})

	reqCtx, req := tp.Tracer("app").Start(ctx, "POST /signup")
	res, err := a.InsertMany(reqCtx, []lockstep.InsertManyParams{
		{Args: welcomeArgs{User: "ada"}}, {Args: welcomeArgs{User: "bob"}}, {Args: welcomeArgs{User: "eve"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	req.End()
	// B starts once the jobs are in: its first claim takes the three.
	mw := lockstepotel.New(lockstepotel.Config{TracerProvider: tp})
	b, finished := worker(t, mw.Driver(drvs[1]), mw, tp)
	for range 3 {
		if e := <-finished; e.Status != lockstep.StatusDone {
			t.Fatalf("a job finished %s, want DONE", e.Status)
		}
	}

	spans := exp.GetSpans()
	insert := spanNamed(t, spans, lockstepotel.InsertSpanName)[0]
	claims := spanNamed(t, spans, lockstepotel.ClaimSpanName+" default")
	works := spanNamed(t, spans, lockstepotel.WorkSpanName+" welcome_email")
	must(t, len(claims) == 1 && len(works) == 3, "%d claim and %d work spans, want one claim of the three jobs and 3", len(claims), len(works))
	claim := claims[0]

	expect(t, claim.SpanKind == trace.SpanKindClient, "claim span kind %s, want client", claim.SpanKind)
	expect(t, !claim.Parent.IsValid(), "the claim span has a parent; it is the root of its trace")
	expect(t, claim.SpanContext.TraceID() != insert.SpanContext.TraceID(), "the claim is in the insert's trace")
	for key, want := range map[attribute.Key]string{
		"messaging.system":              "lockstep",
		"messaging.operation.type":      "receive",
		"messaging.operation.name":      "claim",
		"messaging.destination.name":    "default",
		"messaging.batch.message_count": "3",
		"messaging.client.id":           b.ProcessID(),
		lockstepotel.AttrClaimMax:       "10",
	} {
		if got := attr(claim, key).Emit(); got != want {
			t.Errorf("claim span %s = %q, want %q", key, got, want)
		}
	}
	expect(t, b.ProcessID() != "", "the worker has no process id")
	expect(t, !attr(claim, lockstepotel.AttrClaimLimited).AsBool(), "an unlimited queue's claim is marked limited")
	must(t, len(claim.Links) == 3, "claim span has %d links, want one per job", len(claim.Links))
	want := map[string]bool{}
	for _, r := range res {
		want[strconv.FormatInt(r.ID, 10)] = true
	}
	linked := map[string]bool{}
	for _, l := range claim.Links {
		expect(t, l.SpanContext.TraceID() == insert.SpanContext.TraceID() && l.SpanContext.SpanID() == insert.SpanContext.SpanID(),
			"the claim links to %s, want the insert span", l.SpanContext.SpanID())
		linked[attr(tracetest.SpanStub{Attributes: l.Attributes}, "messaging.message.id").Emit()] = true
	}
	expect(t, fmt.Sprint(linked) == fmt.Sprint(want), "the claim's links name jobs %v, want %v", linked, want)
	expect(t, !claim.EndTime.Before(claim.StartTime), "the claim span ends before it starts")

	worked := map[string]bool{}
	for _, w := range works {
		expect(t, w.SpanContext.TraceID() == claim.SpanContext.TraceID(), "a work span is not in the claim's trace")
		expect(t, w.Parent.SpanID() == claim.SpanContext.SpanID(), "a work span's parent is %s, want the claim span", w.Parent.SpanID())
		expect(t, len(w.Links) == 1 && w.Links[0].SpanContext.SpanID() == insert.SpanContext.SpanID(), "a work span does not link to the insert span: %v", w.Links)
		expect(t, !w.StartTime.Before(claim.EndTime), "a work span starts before its claim ended")
		worked[attr(w, "messaging.message.id").Emit()] = true
	}
	expect(t, fmt.Sprint(worked) == fmt.Sprint(want), "worked jobs %v, want %v", worked, want)
	for _, render := range spanNamed(t, spans, "render template") {
		expect(t, render.SpanContext.TraceID() == claim.SpanContext.TraceID(), "the worker's span is not in the claim's trace")
	}

	// A job that fails its first attempt: two claims, each the parent of
	// its attempt, both linked to the one insert.
	exp.Reset()
	res2, err := a.Insert(ctx, welcomeArgs{User: "zed", Fail: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for e := range finished {
		if e.Status == lockstep.StatusDone {
			break
		}
	}
	spans = exp.GetSpans()
	insert = spanNamed(t, spans, lockstepotel.InsertSpanName)[0]
	claims = spanNamed(t, spans, lockstepotel.ClaimSpanName+" default")
	works = spanNamed(t, spans, lockstepotel.WorkSpanName+" welcome_email")
	must(t, len(claims) == 2 && len(works) == 2, "%d claim and %d work spans, want 2 and 2", len(claims), len(works))
	for i, w := range works {
		c := claims[i]
		expect(t, attr(c, "messaging.batch.message_count").Emit() == "1", "claim %d took %s jobs, want 1", i+1, attr(c, "messaging.batch.message_count").Emit())
		expect(t, len(c.Links) == 1 && c.Links[0].SpanContext.SpanID() == insert.SpanContext.SpanID(), "claim %d does not link to the insert", i+1)
		expect(t, w.Parent.SpanID() == c.SpanContext.SpanID(), "attempt %d is not the child of its own claim", i+1)
		expect(t, attr(w, lockstepotel.AttrJobAttempt).AsInt64() == int64(i+1), "work span %d is attempt %d", i+1, attr(w, lockstepotel.AttrJobAttempt).AsInt64())
		expect(t, attr(w, "messaging.message.id").Emit() == strconv.FormatInt(res2.ID, 10), "work span %d is of job %s", i+1, attr(w, "messaging.message.id").Emit())
	}
	expect(t, claims[0].SpanContext.TraceID() != claims[1].SpanContext.TraceID(), "the two attempts share a trace")
	expect(t, works[0].Status.Code == codes.Error, "the failed attempt's status is %v", works[0].Status)
}

// TestClaimSpanOfALimitedQueue: a queue with limits is claimed through
// the limited claim, traced the same way and marked so; a span a
// middleware outside this one started stays the work span's parent, and
// the claim is then a link.
func TestClaimSpanOfALimitedQueue(t *testing.T) {
	ctx := context.Background()
	exp, tp := tracing(t)
	drv := openDB(t, 1)[0]
	mw := lockstepotel.New(lockstepotel.Config{TracerProvider: tp})
	outer := lockstep.WorkerMiddlewareFunc(func(ctx context.Context, job *lockstep.JobRow, next func(context.Context) error) error {
		ctx, span := tp.Tracer("app").Start(ctx, "outer")
		defer span.End()
		return next(ctx)
	})
	ws := lockstep.NewWorkers()
	lockstep.AddWorker(ws, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[welcomeArgs]) error { return nil }))
	finished := make(chan lockstep.Event, 10)
	c := newClient(t, mw.Driver(drv), lockstep.Config{
		Workers:          ws,
		Queues:           map[string]lockstep.QueueConfig{"mail": {MaxWorkers: 4, Limits: &lockstep.QueueLimits{Concurrency: 2}}},
		InsertMiddleware: []lockstep.InsertMiddleware{mw},
		WorkerMiddleware: []lockstep.WorkerMiddleware{outer, mw},
		PollInterval:     20 * time.Millisecond,
		OnEvent: func(e lockstep.Event) {
			if e.Kind == lockstep.EventJobFinished {
				finished <- e
			}
		},
	})
	if _, err := c.Insert(ctx, welcomeArgs{User: "ada"}, &lockstep.InsertOpts{Queue: "mail"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.StopAndCancel(context.Background()) })
	if e := <-finished; e.Status != lockstep.StatusDone {
		t.Fatalf("the job finished %s, want DONE", e.Status)
	}

	spans := exp.GetSpans()
	insert := spanNamed(t, spans, lockstepotel.InsertSpanName)[0]
	claim := spanNamed(t, spans, lockstepotel.ClaimSpanName+" mail")[0]
	work := spanNamed(t, spans, lockstepotel.WorkSpanName+" welcome_email")[0]
	outerSpan := spanNamed(t, spans, "outer")[0]
	expect(t, attr(claim, lockstepotel.AttrClaimLimited).AsBool(), "the limited claim is not marked")
	expect(t, attr(claim, "messaging.batch.message_count").Emit() == "1", "the claim took %s jobs, want 1", attr(claim, "messaging.batch.message_count").Emit())
	expect(t, attr(claim, "messaging.destination.name").Emit() == "mail", "the claim's queue is %q", attr(claim, "messaging.destination.name").Emit())
	must(t, len(claim.Links) == 1 && claim.Links[0].SpanContext.SpanID() == insert.SpanContext.SpanID(), "the claim does not link to the insert: %v", claim.Links)
	expect(t, work.Parent.SpanID() == outerSpan.SpanContext.SpanID(), "the work span's parent is %s, want the outer middleware's span", work.Parent.SpanID())
	must(t, len(work.Links) == 2, "the work span has %d links, want the insert and the claim", len(work.Links))
	expect(t, work.Links[0].SpanContext.SpanID() == insert.SpanContext.SpanID(), "the work span's first link is not the insert")
	expect(t, work.Links[1].SpanContext.SpanID() == claim.SpanContext.SpanID(), "the work span's second link is not the claim")
}
