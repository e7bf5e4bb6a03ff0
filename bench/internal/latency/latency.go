// Package latency measures lockstep's enqueue→start latency: how long after
// an Enqueue call returns its job starts in a worker, at a fixed rate.
//
// The enqueuer and the worker live in one process (so both read one clock)
// but, in the cross-process mode, in two clients on two drivers — two
// connection pools — exactly as two processes would: the in-process wake-up
// of the enqueuing client cannot reach the worker, and only the database can
// (PostgreSQL's LISTEN/NOTIFY) or the worker's poll. In the same-process
// mode one client enqueues and works, and its in-process wake-up applies.
package latency

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/migrate"
)

// Mode says where the enqueuer is relative to the workers.
type Mode string

// The modes.
const (
	// CrossProcess: the enqueuer is another client on another pool.
	CrossProcess Mode = "cross-process"
	// SameProcess: the worker's own client enqueues.
	SameProcess Mode = "same-process"
)

// Database opens drivers on one fresh database. Each call of Open opens
// another driver with a pool of its own on the same database.
type Database struct {
	Open  func(ctx context.Context) (driver.Driver, error)
	Close func() error // drops the database
}

// Target is one database system under test.
type Target struct {
	// Name is "postgres", "mariadb" or "sqlite".
	Name string
	// NewDatabase creates a fresh, empty database.
	NewDatabase func(ctx context.Context) (*Database, error)
}

// Variant is one configuration of the worker.
type Variant struct {
	Mode Mode
	// Settings names the configuration in the report ("defaults").
	Settings string
	// PollInterval and MinPollInterval of the worker; 0 keeps lockstep's
	// defaults.
	PollInterval, MinPollInterval time.Duration
	// DisableNotify turns the worker's wake-up listener off.
	DisableNotify bool
}

// Phase is one measurement: a target, a variant, a rate.
type Phase struct {
	Target  Target
	Variant Variant
	Rate    int // jobs per second
}

// Options apply to every phase.
type Options struct {
	// Duration of the measured enqueueing at the phase's rate.
	Duration time.Duration
	// Workers is the worker client's MaxWorkers.
	Workers int
	// Enqueuers bounds the Enqueue calls in flight; the schedule falls
	// behind (and Achieved shows it) when they are all busy.
	Enqueuers int
	// Poisson spaces the enqueues by exponentially distributed gaps (a
	// Poisson process of the same mean rate) instead of evenly: even
	// spacing can fall into step with a worker's poll cycle and flatter or
	// penalise it by the phase it happens to keep.
	Poisson bool
	// Logger receives the clients' logs; nil discards them.
	Logger *slog.Logger
	// Logf reports progress.
	Logf func(format string, args ...any)
}

// Result is one phase's numbers. Durations are in milliseconds.
type Result struct {
	Database      string  `json:"database"`
	ServerVersion string  `json:"server_version"`
	Mode          Mode    `json:"mode"`
	Settings      string  `json:"settings"`
	Wake          string  `json:"wake"`
	PollMS        float64 `json:"poll_interval_ms"`
	MinPollMS     float64 `json:"min_poll_interval_ms"`
	Listening     bool    `json:"listening"`
	Rate          int     `json:"rate"`
	Achieved      float64 `json:"achieved_rate"`
	Jobs          int     `json:"jobs"`
	Missing       int     `json:"missing"`
	EnqueueErrors int     `json:"enqueue_errors"`
	// Early counts jobs that started before their Enqueue call returned
	// (possible in the same process); their latency counts as 0.
	Early      int     `json:"early"`
	P50MS      float64 `json:"p50_ms"`
	P90MS      float64 `json:"p90_ms"`
	P99MS      float64 `json:"p99_ms"`
	MaxMS      float64 `json:"max_ms"`
	MeanMS     float64 `json:"mean_ms"`
	EnqP50MS   float64 `json:"enqueue_call_p50_ms"`
	EnqP99MS   float64 `json:"enqueue_call_p99_ms"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	// RSSScope is "phase" when the peak was reset before the phase, else
	// "process" (the peak since the process started).
	RSSScope string `json:"peak_rss_scope"`
}

// Run measures every phase, one after another.
func Run(ctx context.Context, phases []Phase, o Options) ([]Result, error) {
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Workers <= 0 {
		o.Workers = 100
	}
	if o.Enqueuers <= 0 {
		o.Enqueuers = 16
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	var out []Result
	for _, ph := range phases {
		if ph.Rate <= 0 {
			return out, fmt.Errorf("latency: rate must be positive, got %d", ph.Rate)
		}
		o.Logf("latency: %s %s (%s) at %d jobs/s for %s", ph.Target.Name, ph.Variant.Mode, ph.Variant.Settings, ph.Rate, o.Duration)
		res, err := runPhase(ctx, ph, o)
		if err != nil {
			return out, fmt.Errorf("latency: %s %s (%s) at %d/s: %w", ph.Target.Name, ph.Variant.Mode, ph.Variant.Settings, ph.Rate, err)
		}
		o.Logf("latency: p50 %.2f ms, p99 %.2f ms, max %.2f ms over %d jobs", res.P50MS, res.P99MS, res.MaxMS, res.Jobs)
		out = append(out, *res)
	}
	return out, nil
}

// Args is the benchmark's job: a no-op.
type Args struct {
	Seq  int  `json:"seq"`
	Warm bool `json:"warm,omitempty"`
}

// Kind implements lockstep.JobArgs.
func (Args) Kind() string { return "latency" }

const queue = "latency"

// recorder keeps, per job id, when its Enqueue call returned and when its
// worker started it.
type recorder struct {
	mu       sync.Mutex
	enqueued map[int64]time.Time
	started  map[int64]time.Time
	calls    []time.Duration
	errs     int
	warm     atomic.Int64
}

func newRecorder() *recorder {
	return &recorder{enqueued: map[int64]time.Time{}, started: map[int64]time.Time{}}
}

func (r *recorder) start(id int64, at time.Time) {
	r.mu.Lock()
	if _, ok := r.started[id]; !ok {
		r.started[id] = at
	}
	r.mu.Unlock()
}

func (r *recorder) enqueue(id int64, began, done time.Time) {
	r.mu.Lock()
	r.enqueued[id] = done
	r.calls = append(r.calls, done.Sub(began))
	r.mu.Unlock()
}

func (r *recorder) fail() {
	r.mu.Lock()
	r.errs++
	r.mu.Unlock()
}

// pending is how many enqueued jobs have not started.
func (r *recorder) pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for id := range r.enqueued {
		if _, ok := r.started[id]; !ok {
			n++
		}
	}
	return n
}

func runPhase(ctx context.Context, ph Phase, o Options) (res *Result, err error) {
	db, err := ph.Target.NewDatabase(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	workDrv, err := db.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, workDrv.Close()) }()
	m, err := migrate.New(workDrv)
	if err != nil {
		return nil, err
	}
	if _, err := m.Up(ctx); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	version, err := workDrv.Version(ctx)
	if err != nil {
		return nil, err
	}

	rec := newRecorder()
	ws := lockstep.NewWorkers()
	lockstep.AddWorker(ws, lockstep.WorkFunc(func(_ context.Context, j *lockstep.Job[Args]) error {
		now := time.Now()
		if j.Args.Warm {
			rec.warm.Add(1)
			return nil
		}
		rec.start(j.ID, now)
		return nil
	}))
	cfg := lockstep.Config{
		Workers:         ws,
		Queues:          map[string]lockstep.QueueConfig{queue: {MaxWorkers: o.Workers}},
		Logger:          o.Logger,
		PollInterval:    ph.Variant.PollInterval,
		MinPollInterval: ph.Variant.MinPollInterval,
		DisableNotify:   ph.Variant.DisableNotify,
	}
	worker, err := lockstep.NewClient(workDrv, cfg)
	if err != nil {
		return nil, err
	}
	if err := worker.Start(ctx); err != nil {
		return nil, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = errors.Join(err, worker.Stop(sctx))
	}()

	enq := worker
	if ph.Variant.Mode == CrossProcess {
		enqDrv, err := db.Open(ctx)
		if err != nil {
			return nil, err
		}
		defer func() { err = errors.Join(err, enqDrv.Close()) }()
		if enq, err = lockstep.NewClient(enqDrv, lockstep.Config{Logger: o.Logger}); err != nil {
			return nil, err
		}
	}
	_, listening := workDrv.(driver.Notifier)
	listening = listening && !ph.Variant.DisableNotify

	// Warm up: connections opened, statements prepared, the worker past its
	// first claims. Not measured.
	const warmJobs = 20
	for i := range warmJobs {
		if _, err := enq.Insert(ctx, Args{Seq: -i - 1, Warm: true}, &lockstep.InsertOpts{Queue: queue}); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
		if !sleep(ctx, 10*time.Millisecond) {
			return nil, ctx.Err()
		}
	}
	poll := effective(ph.Variant.PollInterval, time.Second)
	if err := waitUntil(ctx, 10*time.Second+3*poll, func() bool { return rec.warm.Load() >= warmJobs }); err != nil {
		return nil, fmt.Errorf("warm-up jobs did not all start: %w", err)
	}

	scope := "process"
	if ResetPeakRSS() == nil {
		scope = "phase"
	}
	began, enqueued := enqueueAtRate(ctx, enq, rec, ph.Rate, o)
	// The last job is due 1/rate before the end of the schedule.
	elapsed := max(time.Since(began), o.Duration)
	// Every job should start within a poll interval or so; allow more.
	_ = waitUntil(ctx, 5*time.Second+3*poll, func() bool { return rec.pending() == 0 })
	rss, _ := PeakRSS()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	res = &Result{
		Database: ph.Target.Name, ServerVersion: version, Mode: ph.Variant.Mode, Settings: ph.Variant.Settings,
		PollMS:    ms(poll),
		MinPollMS: ms(min(effective(ph.Variant.MinPollInterval, 25*time.Millisecond), poll)),
		Listening: listening, Rate: ph.Rate, Achieved: float64(enqueued) / elapsed.Seconds(),
		PeakRSSMiB: float64(rss) / (1 << 20), RSSScope: scope,
	}
	switch {
	case ph.Variant.Mode == SameProcess && listening:
		res.Wake = "in-process + NOTIFY"
	case ph.Variant.Mode == SameProcess:
		res.Wake = "in-process"
	case listening:
		res.Wake = "LISTEN/NOTIFY"
	default:
		res.Wake = "poll"
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	res.EnqueueErrors = rec.errs
	lat := make([]time.Duration, 0, len(rec.enqueued))
	for id, done := range rec.enqueued {
		st, ok := rec.started[id]
		if !ok {
			res.Missing++
			continue
		}
		d := st.Sub(done)
		if d < 0 {
			res.Early++
			d = 0
		}
		lat = append(lat, d)
	}
	res.Jobs = len(lat)
	slices.Sort(lat)
	res.P50MS, res.P90MS, res.P99MS = ms(rank(lat, 0.50)), ms(rank(lat, 0.90)), ms(rank(lat, 0.99))
	if len(lat) > 0 {
		res.MaxMS = ms(lat[len(lat)-1])
		var sum time.Duration
		for _, d := range lat {
			sum += d
		}
		res.MeanMS = ms(sum / time.Duration(len(lat)))
	}
	calls := slices.Clone(rec.calls)
	slices.Sort(calls)
	res.EnqP50MS, res.EnqP99MS = ms(rank(calls, 0.50)), ms(rank(calls, 0.99))
	return res, nil
}

// enqueueAtRate enqueues rate jobs per second for o.Duration, each with one
// Enqueue call, from at most o.Enqueuers goroutines; it returns when the
// schedule began and how many calls were made.
func enqueueAtRate(ctx context.Context, c *lockstep.Client, rec *recorder, rate int, o Options) (time.Time, int) {
	total := int(math.Round(float64(rate) * o.Duration.Seconds()))
	slots := make(chan int)
	var wg sync.WaitGroup
	var failures atomic.Int64
	for range o.Enqueuers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := range slots {
				began := time.Now()
				res, err := c.Insert(ctx, Args{Seq: seq}, &lockstep.InsertOpts{Queue: queue})
				done := time.Now()
				if err != nil {
					rec.fail()
					if failures.Add(1) <= 3 && ctx.Err() == nil {
						o.Logf("latency: enqueue failed: %v", err)
					}
					continue
				}
				rec.enqueue(res.ID, began, done)
			}
		}()
	}
	rng := rand.New(rand.NewPCG(1, uint64(rate)))
	start := time.Now()
	sent := 0
	var at float64 // seconds after start
	for ; sent < total; sent++ {
		if o.Poisson {
			if sent > 0 {
				at += rng.ExpFloat64() / float64(rate)
			}
		} else {
			at = float64(sent) / float64(rate)
		}
		due := start.Add(time.Duration(at * float64(time.Second)))
		if !sleep(ctx, time.Until(due)) {
			break
		}
		select {
		case slots <- sent:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(slots)
	wg.Wait()
	return start, sent
}

// rank is the nearest-rank percentile of sorted durations.
func rank(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

func effective(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func waitUntil(ctx context.Context, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s", timeout)
		}
		if !sleep(ctx, 2*time.Millisecond) {
			return ctx.Err()
		}
	}
	return nil
}
