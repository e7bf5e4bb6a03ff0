package throughput

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// A long transaction elsewhere is what every database queue meets in
// production: a report, a migration, a forgotten session. On PostgreSQL
// it holds back vacuum's horizon, so the claim's index range fills with
// entries of dead rows that every claim steps over; on InnoDB it holds
// back purge, so the history list grows and old row versions stay. A
// continuous run with HoldSnapshot measures a baseline, then holds such a
// transaction open on the same database for HoldSnapshot, then lets it go
// and measures the recovery, sampling as it goes.

// HoldResult is one continuous run with a snapshot held in its middle.
type HoldResult struct {
	// Hold is how long the snapshot was held; Before and After the
	// measured phases around it (each Config.Duration).
	HoldSeconds   float64 `json:"hold_seconds"`
	BeforeSeconds float64 `json:"before_seconds"`
	AfterSeconds  float64 `json:"after_seconds"`
	// Jobs per second in each phase, and over the hold's last minute
	// (its last sixth, if it is shorter than six minutes).
	BeforeJobs   int64   `json:"before_jobs"`
	Before       float64 `json:"before_jobs_per_sec"`
	Held         float64 `json:"held_jobs_per_sec"`
	HeldLast     float64 `json:"held_last_jobs_per_sec"`
	HeldLastSecs float64 `json:"held_last_seconds"`
	After        float64 `json:"after_jobs_per_sec"`
	// RecoveredSeconds is the time from the release to the end of the
	// first sample at 90 % of Before or more; -1 if none was.
	RecoveredSeconds float64 `json:"recovered_seconds"`
	// Garbage names what Dead counts in Samples: "dead tuples" of the
	// job table (PostgreSQL) or InnoDB's "history list length".
	Garbage string `json:"garbage"`
	// Claim says where the claim latency comes from.
	Claim   string       `json:"claim_latency_source"`
	Samples []HoldSample `json:"samples"`
}

// HoldSample is one sampling interval.
type HoldSample struct {
	// At is the end of the interval, in seconds since the Before phase
	// began.
	At    float64 `json:"at_seconds"`
	Phase string  `json:"phase"` // before, held, after
	// JobsPerSec completed in the interval.
	JobsPerSec float64 `json:"jobs_per_sec"`
	// ClaimMillis is the mean latency of the claims made in the
	// interval; 0 when none was measured.
	ClaimMillis float64 `json:"claim_ms"`
	// Dead is the garbage at the end of the interval (see Garbage); -1
	// when it could not be read.
	Dead int64 `json:"dead"`
}

// holdTarget is what a held-snapshot run needs of the system under test.
type holdTarget struct {
	dialect string // "postgres" or "mysql"
	dsn     string
	table   string  // the system's job table
	db      *sql.DB // for sampling
	// clientClaims, when set, is the system's own count and total time
	// of its claims (lockstep's EventClaimed), used where the server
	// keeps no statement statistics.
	clientClaims func() (int64, time.Duration)
	// claimPattern matches the claim statement in pg_stat_statements.
	claimPattern string
}

// claimCounter adds up claims from EventClaimed.
type claimCounter struct {
	n     atomic.Int64
	nanos atomic.Int64
}

func (c *claimCounter) add(took time.Duration) {
	c.n.Add(1)
	c.nanos.Add(int64(took))
}

func (c *claimCounter) read() (int64, time.Duration) {
	return c.n.Load(), time.Duration(c.nanos.Load())
}

// holdSampleInterval is the default sampling interval.
const holdSampleInterval = 5 * time.Second

// measureHold runs the before, held and after phases; count reads the
// completions so far, wait waits (and fails with the run).
func measureHold(ctx context.Context, cfg *Config, h holdTarget, count func() int64, wait func(time.Duration) error) (*HoldResult, error) {
	res := &HoldResult{HoldSeconds: cfg.HoldSnapshot.Seconds(), RecoveredSeconds: -1}
	sampler, err := newHoldSampler(ctx, h)
	if err != nil {
		return nil, err
	}
	res.Garbage, res.Claim = sampler.garbage, sampler.claimSource
	every := cfg.HoldSample
	if every <= 0 {
		every = holdSampleInterval
	}

	begin := time.Now()
	var mu sync.Mutex
	phase := "before"
	sampleCtx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(every)
		defer tick.Stop()
		prevN, prevT := count(), time.Now()
		prevClaims, prevTook, _ := sampler.claims(sampleCtx)
		for {
			select {
			case <-sampleCtx.Done():
				return
			case <-tick.C:
			}
			n, now := count(), time.Now()
			claims, took, ok := sampler.claims(sampleCtx)
			s := HoldSample{At: now.Sub(begin).Seconds(), JobsPerSec: float64(n-prevN) / now.Sub(prevT).Seconds(),
				Dead: sampler.dead(sampleCtx)}
			if ok && claims > prevClaims {
				s.ClaimMillis = float64(took-prevTook) / float64(claims-prevClaims) / float64(time.Millisecond)
			}
			prevN, prevT = n, now
			if ok {
				// A failed read leaves the last good totals: the next
				// interval's mean is then over two intervals, not over
				// everything since the start.
				prevClaims, prevTook = claims, took
			}
			mu.Lock()
			s.Phase = phase
			res.Samples = append(res.Samples, s)
			mu.Unlock()
		}
	}()
	defer func() {
		stopSampling()
		<-sampled
	}()
	setPhase := func(p string) {
		mu.Lock()
		phase = p
		mu.Unlock()
	}

	n0, t0 := count(), time.Now()
	if err := wait(cfg.Duration); err != nil {
		return nil, err
	}
	n1, t1 := count(), time.Now()
	release, err := holdSnapshot(ctx, h)
	if err != nil {
		return nil, err
	}
	setPhase("held")
	last := min(time.Minute, cfg.HoldSnapshot/6)
	err = wait(cfg.HoldSnapshot - last)
	nl, tl := count(), time.Now()
	if err == nil {
		err = wait(last)
	}
	n2, t2 := count(), time.Now()
	if rerr := release(); err == nil && rerr != nil {
		err = fmt.Errorf("release the held snapshot: %w", rerr)
	}
	if err != nil {
		return nil, err
	}
	setPhase("after")
	if err := wait(cfg.Duration); err != nil {
		return nil, err
	}
	n3, t3 := count(), time.Now()
	stopSampling()
	<-sampled

	rate := func(a, b int64, ta, tb time.Time) float64 { return float64(b-a) / tb.Sub(ta).Seconds() }
	res.BeforeJobs = n1 - n0
	res.BeforeSeconds, res.AfterSeconds = t1.Sub(t0).Seconds(), t3.Sub(t2).Seconds()
	res.Before, res.Held, res.HeldLast, res.After = rate(n0, n1, t0, t1), rate(n1, n2, t1, t2), rate(nl, n2, tl, t2), rate(n2, n3, t2, t3)
	res.HeldLastSecs = t2.Sub(tl).Seconds()
	released := t2.Sub(begin).Seconds()
	for _, s := range res.Samples {
		if s.Phase == "after" && s.JobsPerSec >= 0.9*res.Before {
			res.RecoveredSeconds = s.At - released
			break
		}
	}
	return res, nil
}

// holdSnapshot opens a connection of its own to the system's database and
// leaves a REPEATABLE READ transaction open on it, with its snapshot (on
// InnoDB, its read view) taken by a read of the job table. The returned
// function ends it.
func holdSnapshot(ctx context.Context, h holdTarget) (release func() error, err error) {
	driverName := map[string]string{"postgres": "pgx", "mysql": "mysql"}[h.dialect]
	if driverName == "" {
		return nil, fmt.Errorf("--hold-snapshot: no snapshot to hold on %s", h.dialect)
	}
	db, err := sql.Open(driverName, h.dsn)
	if err != nil {
		return nil, fmt.Errorf("--hold-snapshot: %w", err)
	}
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("--hold-snapshot: begin: %w", err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM (SELECT 1 FROM "+h.table+" LIMIT 1) t /* "+SampleMarker+" */").Scan(&n); err != nil {
		_ = tx.Rollback()
		_ = db.Close()
		return nil, fmt.Errorf("--hold-snapshot: take the snapshot: %w", err)
	}
	return func() error { return errors.Join(tx.Rollback(), db.Close()) }, nil
}

// holdSampler reads the garbage and the claim latency.
type holdSampler struct {
	h           holdTarget
	garbage     string
	claimSource string
	deadSQL     string
	pgss        bool // pg_stat_statements is there
}

func newHoldSampler(ctx context.Context, h holdTarget) (*holdSampler, error) {
	s := &holdSampler{h: h}
	switch h.dialect {
	case "postgres":
		s.garbage = "dead tuples of " + h.table + " (pg_stat_user_tables.n_dead_tup)"
		s.deadSQL = "SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = '" + h.table + "' /* " + SampleMarker + " */"
		// The extension can be created without the library loaded
		// (shared_preload_libraries); only a read that works counts.
		_, err := h.db.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
		s.pgss = err == nil
		if s.pgss {
			// The very read the samples make (PostgreSQL 12 names the
			// column total_time: the claim's latency then comes from
			// the client, where it can).
			_, _, s.pgss = s.claims(ctx)
		}
		if s.pgss {
			s.claimSource = "the claim statement's mean execution time in pg_stat_statements"
		}
	case "mysql":
		s.garbage = "InnoDB history list length (INNODB_METRICS trx_rseg_history_len)"
		s.deadSQL = "SELECT `count` FROM information_schema.INNODB_METRICS WHERE name = 'trx_rseg_history_len' /* " + SampleMarker + " */"
	default:
		return nil, fmt.Errorf("--hold-snapshot: no snapshot to hold on %s", h.dialect)
	}
	if !s.pgss && h.clientClaims != nil {
		s.claimSource = "the client's claims, as lockstep's EventClaimed times them (round trips included)"
	}
	return s, nil
}

func (s *holdSampler) dead(ctx context.Context) int64 {
	var n int64
	if err := s.h.db.QueryRowContext(ctx, s.deadSQL).Scan(&n); err != nil {
		return -1
	}
	return n
}

// claims is the number of claims so far and their total time; ok is false
// when they could not be read.
func (s *holdSampler) claims(ctx context.Context) (n int64, total time.Duration, ok bool) {
	if s.pgss {
		var calls int64
		var ms float64
		err := s.h.db.QueryRowContext(ctx, "SELECT coalesce(sum(calls), 0)::bigint, coalesce(sum(total_exec_time), 0)::float8 "+
			"FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "+
			"AND query LIKE $1 /* "+SampleMarker+" */", s.h.claimPattern).Scan(&calls, &ms)
		if err != nil {
			return 0, 0, false
		}
		return calls, time.Duration(ms * float64(time.Millisecond)), true
	}
	if s.h.clientClaims != nil {
		n, total := s.h.clientClaims()
		return n, total, true
	}
	return 0, 0, false
}
