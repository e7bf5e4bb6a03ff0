// Package soak is the mixed soak: the proof under load that the queue does
// not deadlock and never loses or double-finishes a job.
//
// For a fixed time it runs, at once, several worker pools (each a
// lockstep.Client on its own connection pool, as separate processes would
// be) over a mix of jobs that succeed, sleep, fail once, snooze once or
// always fail; enqueuers that create runs, add jobs to them and enqueue
// loose jobs; a canceller that cancels runs and single jobs; and a dead
// worker that claims jobs and abandons them, so the reapers must return
// them, and later sends their stale finishes, which the attempt fence must
// refuse. Then it drains the queue and checks two independent records
// against the final rows: its own memory of every execution, and an audit
// of every status change written by a trigger it installs for the run. It
// reads the server's deadlock counter before and after.
//
// It needs a scratch database: it refuses to start unless the queue's
// tables are empty, and it leaves its jobs behind for inspection.
package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/lockstep-queue/lockstep/driver"
)

// Config configures a soak. Zero values take the documented defaults.
type Config struct {
	// Open opens another driver on the database, as another process would
	// (its own pool). Run calls it once per worker pool, once for itself
	// and for the deadlock readings, and closes all it opened. The caller
	// chooses the isolation level through it (see OpenMySQL).
	Open func(ctx context.Context) (driver.Driver, error)

	// Duration of the load. Default 1 minute.
	Duration time.Duration
	// Pools is the number of worker clients. Default 3.
	Pools int
	// Workers is each pool's MaxWorkers on each queue. Default 4.
	Workers int
	// Queues is the number of queues jobs are spread over. Default 3.
	Queues int
	// Seed seeds every random choice (job mix, timing of cancels and dead
	// claims), so runs are reproducible in their choices though not in
	// their interleavings.
	Seed uint64

	// Logger receives the clients' logs; default: discarded. Client log
	// records at level Error are counted as problems either way.
	Logger *slog.Logger
	// Progress, when set, receives a line every ProgressInterval.
	Progress io.Writer
	// ProgressInterval: default 5s.
	ProgressInterval time.Duration

	// Client timings, short so that reaps and retries happen often.
	// Defaults: HeartbeatInterval 250ms, ReapAfter 3s, ReapInterval
	// 500ms, PollInterval 100ms.
	HeartbeatInterval time.Duration
	ReapAfter         time.Duration
	ReapInterval      time.Duration
	PollInterval      time.Duration

	// MaxBacklog is how many PENDING jobs the enqueuers allow before
	// waiting for the workers. Default 2000.
	MaxBacklog int
	// DrainTimeout bounds the drain after the load. Default 2 minutes.
	DrainTimeout time.Duration
	// TextIndex creates the job search's optional text index before the
	// load, where the dialect has one: every insert and delete of the
	// load writes it, and the searches go on through it.
	TextIndex bool
}

func (c Config) withDefaults() (Config, error) {
	if c.Open == nil {
		return c, errors.New("soak: Config.Open is required")
	}
	for _, d := range []struct {
		v    *time.Duration
		def  time.Duration
		name string
	}{
		{&c.Duration, time.Minute, "Duration"},
		{&c.ProgressInterval, 5 * time.Second, "ProgressInterval"},
		{&c.HeartbeatInterval, 250 * time.Millisecond, "HeartbeatInterval"},
		{&c.ReapAfter, 3 * time.Second, "ReapAfter"},
		{&c.ReapInterval, 500 * time.Millisecond, "ReapInterval"},
		{&c.PollInterval, 100 * time.Millisecond, "PollInterval"},
		{&c.DrainTimeout, 2 * time.Minute, "DrainTimeout"},
	} {
		if *d.v < 0 {
			return c, fmt.Errorf("soak: %s must not be negative, got %s", d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	for _, n := range []struct {
		v        *int
		def, max int
		name     string
	}{
		{&c.Pools, 3, 64, "Pools"},
		{&c.Workers, 4, 1000, "Workers"},
		{&c.Queues, 3, 16, "Queues"},
		{&c.MaxBacklog, 2000, 1 << 20, "MaxBacklog"},
	} {
		if *n.v < 0 || *n.v > n.max {
			return c, fmt.Errorf("soak: %s must be between 1 and %d, got %d", n.name, n.max, *n.v)
		}
		if *n.v == 0 {
			*n.v = n.def
		}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// ErrChecksFailed is wrapped by Run's error when the soak ran to the end
// but a check failed; the Result then says which.
var ErrChecksFailed = errors.New("soak: checks failed")

// Run runs the soak. It returns a Result whenever the soak ran to the end,
// with an error wrapping ErrChecksFailed if any check failed; other errors
// (the database could not be set up, ctx ended) come without a Result.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := newSoak(cfg)
	defer s.teardown()
	res, err := s.run(ctx)
	if err != nil {
		return nil, err
	}
	if res.ProblemCount > 0 {
		return res, fmt.Errorf("%w: %d problems, first: %s", ErrChecksFailed, res.ProblemCount, res.Problems[0])
	}
	return res, nil
}
