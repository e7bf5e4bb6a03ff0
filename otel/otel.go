// Package lockstepotel traces lockstep jobs with OpenTelemetry: a span for
// each insert, the W3C trace context of that span carried in each job's
// metadata, a span for each claim that takes jobs, linked to the spans that
// enqueued them, and a span for each attempt of each job, the child of its
// claim's span and linked to the span that enqueued it.
//
// It is a module of its own (github.com/lockstep-queue/lockstep/otel) so
// that lockstep itself does not depend on OpenTelemetry. One Middleware is
// both an insert and a worker middleware; give it to the clients that
// enqueue and to those that work (often the same):
//
//	mw := lockstepotel.New(lockstepotel.Config{})
//	client, err := lockstep.NewClient(mw.Driver(drv), lockstep.Config{
//		Workers:          workers,
//		InsertMiddleware: []lockstep.InsertMiddleware{mw},
//		WorkerMiddleware: []lockstep.WorkerMiddleware{mw},
//	})
//
// The claims are seen by the driver, not by a middleware: Middleware.Driver
// wraps the client's driver so that its claims are traced too (a client
// built on the bare driver traces inserts and attempts only).
//
// # Spans
//
// "lockstep.insert" (kind PRODUCER) covers one insert call (Insert,
// InsertMany, their Tx variants, InsertRun), its parent the span in the
// caller's context. Its context is written into every job's metadata under
// MetadataKey, as the W3C traceparent and tracestate headers
// (propagation.TraceContext), whatever the global propagator is, since the
// process that works the job may be configured differently.
//
// "lockstep.claim <queue>" (kind CLIENT, messaging.operation.type
// "receive") covers one claim statement that took jobs, through a driver
// wrapped by Middleware.Driver: from the statement's start to its commit
// (a claim retried after a deadlock or a busy SQLite is the try that took
// the jobs; the failed tries make no span). It is a root (the producer's loop has no span in its context),
// linked to each claimed job's insert span, and carries the queue
// (messaging.destination.name), the number of jobs it took
// (messaging.batch.message_count, set even for one: a claim asks for a
// batch) and how many it asked for (lockstep.claim.max), the claiming
// process (messaging.client.id, the id lockstep processes lists) and, for
// a queue with limits, lockstep.claim.limited with the jobs it made
// BLOCKED or deferred. A claim that takes nothing — every poll of an idle
// queue — or fails makes no span: the client's events
// (lockstep.EventClaimed, the metrics package) count those.
//
// "lockstep.work <kind>" (kind CONSUMER) covers one attempt of one job:
// its middleware inside this one, its args' decoding and its worker, whose
// context carries it, so the worker's own spans are its children. It is
// not a child of the insert span but linked to it: a job runs after the
// request that enqueued it has ended, perhaps hours later, and perhaps
// several times (retries, snoozes, a reap), and one insert of many jobs
// starts many executions — each attempt is a trace of its own, and the
// link leads back to the enqueuing trace, as OpenTelemetry's messaging
// conventions recommend for consumers. Its parent is the span already in
// the job's context, if a middleware outside this one started one (the
// claim's span is then a link); else the span of the claim that took this
// attempt, when the client's driver is wrapped by this Middleware's
// Driver, so that a trace holds a claim and the attempts it started, and
// both lead back to the insert; else it is a root.
//
// All carry the messaging attributes (messaging.system "lockstep",
// messaging.operation.type and .name, messaging.destination.name for the
// queue, messaging.message.id for the job id) and lockstep's own
// (lockstep.job.kind, lockstep.job.attempt, lockstep.run.id). A failed
// attempt's span has status Error with the job's error, recorded as an
// exception event (a panic's with its stack); a snoozed attempt is not an
// error and has lockstep.job.snoozed set.
package lockstepotel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// MetadataKey is the key of a job's metadata (a JSON object) under which
// the insert middleware writes the enqueuing span's W3C trace context: an
// object of the traceparent and, when there is one, the tracestate header,
// {"trace_context": {"traceparent": "00-…-…-01"}}. Metadata that is not a
// JSON object (or has no room left under Config.MaxArgsBytes) is left as
// it is: the job is inserted untraced, and the insert span says so.
const MetadataKey = "trace_context"

// ScopeName is the instrumentation scope of the spans.
const ScopeName = "github.com/lockstep-queue/lockstep/otel"

// Span names and the attributes lockstep adds to the messaging ones.
const (
	InsertSpanName = "lockstep.insert"
	// ClaimSpanName is followed by a space and the queue's name.
	ClaimSpanName = "lockstep.claim"
	// WorkSpanName is followed by a space and the job's kind.
	WorkSpanName = "lockstep.work"

	AttrJobKind    = attribute.Key("lockstep.job.kind")
	AttrJobAttempt = attribute.Key("lockstep.job.attempt")
	AttrRunID      = attribute.Key("lockstep.run.id")
	AttrSnoozed    = attribute.Key("lockstep.job.snoozed")
	AttrDuplicate  = attribute.Key("lockstep.job.duplicate")
	// AttrClaimMax is how many jobs a claim asked for (the free worker
	// slots); messaging.batch.message_count is how many it took.
	AttrClaimMax = attribute.Key("lockstep.claim.max")
	// AttrClaimLimited marks the claim of a queue with limits;
	// AttrClaimBlocked and AttrClaimDeferred count the jobs it made
	// BLOCKED and deferred (set when not 0).
	AttrClaimLimited  = attribute.Key("lockstep.claim.limited")
	AttrClaimBlocked  = attribute.Key("lockstep.claim.blocked")
	AttrClaimDeferred = attribute.Key("lockstep.claim.deferred")
)

// Config configures a Middleware. The zero value traces through the global
// tracer provider.
type Config struct {
	// TracerProvider makes the spans. Default: otel.GetTracerProvider(),
	// the global provider, read when New is called (it delegates to one
	// set later with otel.SetTracerProvider).
	TracerProvider trace.TracerProvider
}

// Middleware is a lockstep.InsertMiddleware and a lockstep.WorkerMiddleware
// that traces inserts and jobs, and the claims of a driver it wraps
// (Driver). It is safe for concurrent use.
type Middleware struct {
	tracer trace.Tracer

	// claims holds, from a traced claim until its attempt's Work, the
	// span of the claim that took each attempt.
	mu     sync.Mutex
	claims map[attemptKey]claimed
	swept  time.Time
}

// attemptKey is one attempt of one job, as claimed by one process.
type attemptKey struct {
	process string
	id      int64
	attempt int
}

type claimed struct {
	span trace.SpanContext
	at   time.Time
}

// claimTTL is how long a claim's span waits for its attempts' Work. A
// claimed job reaches the worker middleware at once (a claim takes no
// more jobs than there are free workers), so an entry older than this
// belongs to a client that has this Middleware's Driver without its Work
// (or another Middleware's): it is dropped.
const claimTTL = time.Minute

var (
	_ lockstep.InsertMiddleware = (*Middleware)(nil)
	_ lockstep.WorkerMiddleware = (*Middleware)(nil)
)

// New returns a Middleware.
func New(cfg Config) *Middleware {
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = otel.GetTracerProvider()
	}
	return &Middleware{tracer: cfg.TracerProvider.Tracer(ScopeName)}
}

// The context is always written and read as W3C trace context, whatever
// propagator each process sets globally: the enqueuing and the working
// process must agree on the format in the row.
var traceContext = propagation.TraceContext{}

var messagingSystem = semconv.MessagingSystemKey.String("lockstep")

// InsertMany implements lockstep.InsertMiddleware: a producer span around
// the insert, whose context goes into each job's metadata.
func (m *Middleware) InsertMany(ctx context.Context, jobs []*lockstep.InsertJob, next func(ctx context.Context) ([]lockstep.InsertResult, error)) (res []lockstep.InsertResult, err error) {
	attrs := []attribute.KeyValue{
		messagingSystem,
		semconv.MessagingOperationTypeSend,
		semconv.MessagingOperationName("insert"),
	}
	if len(jobs) > 1 {
		attrs = append(attrs, semconv.MessagingBatchMessageCount(len(jobs)))
	}
	if q, ok := same(jobs, (*lockstep.InsertJob).Queue); ok {
		attrs = append(attrs, semconv.MessagingDestinationName(q))
	}
	if k, ok := same(jobs, (*lockstep.InsertJob).Kind); ok {
		attrs = append(attrs, AttrJobKind.String(k))
	}
	ctx, span := m.tracer.Start(ctx, InsertSpanName, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	panicked := true
	defer func() {
		if panicked {
			span.SetStatus(codes.Error, "panic")
		}
		span.End()
	}()

	carrier := propagation.MapCarrier{}
	traceContext.Inject(ctx, carrier)
	if len(carrier) > 0 { // nothing to carry from a span that is not sampled nor valid
		for i, j := range jobs {
			if err := j.SetMetadata(MetadataKey, carrier); err != nil {
				// Tracing never refuses an insert: the job goes untraced.
				span.AddEvent("trace context not stored in the job's metadata", trace.WithAttributes(
					attribute.Int("lockstep.job.index", i), semconv.ExceptionMessage(err.Error())))
			}
		}
	}

	res, err = next(ctx)
	panicked = false
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return res, err
	}
	if len(res) == 1 {
		span.SetAttributes(semconv.MessagingMessageID(strconv.FormatInt(res[0].ID, 10)))
		if res[0].Duplicate {
			span.SetAttributes(AttrDuplicate.Bool(true))
		}
	}
	return res, nil
}

// Driver returns drv with its claims traced: a client built on it makes a
// "lockstep.claim <queue>" span for every claim that takes jobs, and
// this Middleware, as that client's WorkerMiddleware, makes each claimed
// attempt's work span a child of its claim's. Every other call goes to
// drv unchanged (a driver that wakes clients with notifications still
// does). Give the same Middleware to the client as its WorkerMiddleware:
// another one does not see these claims.
func (m *Middleware) Driver(drv driver.Driver) driver.Driver {
	d := &tracedDriver{Driver: drv, exec: &tracedExecutor{Executor: drv.Executor(), m: m}}
	if n, ok := drv.(driver.Notifier); ok {
		return &tracedNotifier{tracedDriver: d, Notifier: n}
	}
	return d
}

// tracedDriver is a driver whose executor traces claims.
type tracedDriver struct {
	driver.Driver
	exec *tracedExecutor
}

func (d *tracedDriver) Executor() driver.Executor { return d.exec }

// tracedNotifier is a tracedDriver of a driver that sends wake-ups.
type tracedNotifier struct {
	*tracedDriver
	driver.Notifier
}

// tracedExecutor traces the claims of an executor.
type tracedExecutor struct {
	driver.Executor
	m *Middleware
}

func (e *tracedExecutor) JobClaim(ctx context.Context, p *driver.JobClaimParams) ([]*rowtype.JobRow, error) {
	began := time.Now()
	jobs, err := e.Executor.JobClaim(ctx, p)
	if err == nil {
		e.m.claim(ctx, p, jobs, nil, began)
	}
	return jobs, err
}

func (e *tracedExecutor) JobClaimLimited(ctx context.Context, p *driver.JobClaimParams) (*driver.LimitedClaim, error) {
	began := time.Now()
	l, err := e.Executor.JobClaimLimited(ctx, p)
	// A failed release after the claim committed leaves the claim good:
	// the client runs its jobs (the sweep releases what it did not).
	var rel *driver.ReleaseError
	if l != nil && (err == nil || errors.As(err, &rel)) {
		e.m.claim(ctx, p, l.Jobs, l, began)
	}
	return l, err
}

// claim records the span of a claim that took jobs, and remembers it for
// each job's Work.
func (m *Middleware) claim(ctx context.Context, p *driver.JobClaimParams, jobs []*rowtype.JobRow, limited *driver.LimitedClaim, began time.Time) {
	if len(jobs) == 0 {
		return
	}
	ended := time.Now()
	attrs := []attribute.KeyValue{
		messagingSystem,
		semconv.MessagingOperationTypeReceive,
		semconv.MessagingOperationName("claim"),
		semconv.MessagingDestinationName(p.Queue),
		semconv.MessagingBatchMessageCount(len(jobs)),
		AttrClaimMax.Int(p.Max),
	}
	if p.ProcessID != "" {
		attrs = append(attrs, semconv.MessagingClientID(p.ProcessID))
	}
	if limited != nil {
		attrs = append(attrs, AttrClaimLimited.Bool(true))
		if limited.Blocked > 0 {
			attrs = append(attrs, AttrClaimBlocked.Int(limited.Blocked))
		}
		if limited.Deferred > 0 {
			attrs = append(attrs, AttrClaimDeferred.Int(limited.Deferred))
		}
	}
	var links []trace.Link
	for _, j := range jobs {
		if sc := Enqueued(j); sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{semconv.MessagingMessageID(strconv.FormatInt(j.ID, 10))}})
		}
	}
	_, span := m.tracer.Start(ctx, ClaimSpanName+" "+p.Queue, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(began), trace.WithAttributes(attrs...), trace.WithLinks(links...))
	span.End(trace.WithTimestamp(ended))
	sc := span.SpanContext()
	if !sc.IsValid() {
		return // no tracer behind the provider: nothing to parent
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.claims == nil {
		m.claims = map[attemptKey]claimed{}
	}
	if ended.Sub(m.swept) > claimTTL {
		for k, c := range m.claims {
			if ended.Sub(c.at) > claimTTL {
				delete(m.claims, k)
			}
		}
		m.swept = ended
	}
	for _, j := range jobs {
		m.claims[attemptKey{j.ClaimedBy, j.ID, j.Attempts}] = claimed{sc, ended}
	}
}

// claimOf takes the span of the claim that took this attempt of job, if a
// traced claim did.
func (m *Middleware) claimOf(job *lockstep.JobRow) trace.SpanContext {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := attemptKey{job.ClaimedBy, job.ID, job.Attempts}
	c, ok := m.claims[k]
	if !ok {
		return trace.SpanContext{}
	}
	delete(m.claims, k)
	return c.span
}

// same returns the value of f shared by every job, if it is shared.
func same(jobs []*lockstep.InsertJob, f func(*lockstep.InsertJob) string) (string, bool) {
	if len(jobs) == 0 {
		return "", false
	}
	v := f(jobs[0])
	for _, j := range jobs[1:] {
		if f(j) != v {
			return "", false
		}
	}
	return v, true
}

// Work implements lockstep.WorkerMiddleware: a consumer span around one
// attempt of the job, linked to the span that enqueued it.
func (m *Middleware) Work(ctx context.Context, job *lockstep.JobRow, next func(ctx context.Context) error) (err error) {
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			messagingSystem,
			semconv.MessagingOperationTypeProcess,
			semconv.MessagingOperationName("work"),
			semconv.MessagingDestinationName(job.Queue),
			semconv.MessagingMessageID(strconv.FormatInt(job.ID, 10)),
			AttrJobKind.String(job.Kind),
			AttrJobAttempt.Int(job.Attempts),
		),
	}
	if job.RunID != 0 {
		opts = append(opts, trace.WithAttributes(AttrRunID.Int64(job.RunID)))
	}
	if sc := Enqueued(job); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	// The claim that took this attempt is its parent, unless a middleware
	// outside this one started a span: that one stays the parent, and the
	// claim is linked.
	parent := ctx
	if claim := m.claimOf(job); claim.IsValid() {
		if trace.SpanContextFromContext(ctx).IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: claim}))
		} else {
			parent = trace.ContextWithSpanContext(ctx, claim)
		}
	}
	ctx, span := m.tracer.Start(parent, WorkSpanName+" "+job.Kind, opts...)
	panicked := true
	defer func() {
		if panicked {
			// A middleware inside this one panicked; the client recovers it.
			span.SetStatus(codes.Error, "panic")
		}
		span.End()
	}()

	err = next(ctx)
	panicked = false
	var snooze *lockstep.SnoozeError
	var pe *lockstep.PanicError
	switch {
	case err == nil:
	case errors.As(err, &snooze):
		span.SetAttributes(AttrSnoozed.Bool(true))
	case errors.As(err, &pe):
		// The error's text holds the stack; the status says what panicked
		// and the exception event carries the stack apart.
		msg := fmt.Sprintf("panic: %v", pe.Value)
		span.AddEvent("exception", trace.WithAttributes(
			semconv.ExceptionType("panic"), semconv.ExceptionMessage(msg), semconv.ExceptionStacktrace(pe.Stack)))
		span.SetStatus(codes.Error, msg)
	default:
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	return err
}

// Enqueued is the context of the span that enqueued job, read from its
// metadata (MetadataKey); it is not valid when the job carries none.
func Enqueued(job *lockstep.JobRow) trace.SpanContext {
	if len(job.Metadata) == 0 {
		return trace.SpanContext{}
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(job.Metadata, &meta) != nil {
		return trace.SpanContext{} // metadata that is not an object carries no context
	}
	var carrier propagation.MapCarrier
	if raw, ok := meta[MetadataKey]; !ok || json.Unmarshal(raw, &carrier) != nil {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(traceContext.Extract(context.Background(), carrier))
}
