// Package floor measures the write floor: how many jobs per second a
// database can carry when all it does is the row writes a job needs, with
// no queue machinery around them. A job is one inserted row, one claim
// (SELECT … FOR UPDATE SKIP LOCKED then UPDATE to RUNNING, committed) and
// one finish (UPDATE to DONE, committed), all on lockstep's own
// lockstep_jobs table so that the index maintenance is the queue's.
//
// Each of Concurrency loops repeats: insert Batch rows, claim up to Batch
// rows, finish the rows it claimed, each step its own short transaction.
// A job counts when its finish has committed. The search runs every batch
// size at every concurrency and reports the best.
package floor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options shape the search.
type Options struct {
	// Batches are the batch sizes tried: rows per insert, claim and finish.
	Batches []int
	// Concurrency are the numbers of loops tried.
	Concurrency []int
	// Duration is the measured window of each point, after Warmup.
	Duration, Warmup time.Duration
	// Logf, when set, is told about each point as it is measured.
	Logf func(format string, args ...any)
}

// DefaultOptions is the full search.
func DefaultOptions() Options {
	return Options{
		Batches:     []int{10, 50, 100, 500, 1000},
		Concurrency: []int{1, 2, 4, 8},
		Duration:    5 * time.Second,
		Warmup:      time.Second,
	}
}

func (o Options) check() error {
	if len(o.Batches) == 0 || len(o.Concurrency) == 0 {
		return errors.New("floor: need at least one batch size and one concurrency")
	}
	for _, b := range o.Batches {
		if b < 1 || b > 10_000 {
			return fmt.Errorf("floor: batch size %d out of 1..10000", b)
		}
	}
	for _, c := range o.Concurrency {
		if c < 1 || c > 256 {
			return fmt.Errorf("floor: concurrency %d out of 1..256", c)
		}
	}
	if o.Duration <= 0 || o.Warmup < 0 {
		return errors.New("floor: duration must be positive and warmup not negative")
	}
	return nil
}

func (o Options) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// Point is one batch size at one concurrency.
type Point struct {
	Batch       int `json:"batch"`
	Concurrency int `json:"concurrency"`
	// Jobs finished (DONE committed) in the measured window of Seconds.
	Jobs    int64   `json:"jobs"`
	Seconds float64 `json:"seconds"`
	// JobsPerSec is Jobs / Seconds.
	JobsPerSec float64 `json:"jobs_per_sec"`
	// Inserted and Claimed count the other two writes in the same window.
	Inserted int64 `json:"inserted"`
	Claimed  int64 `json:"claimed"`
}

// Result is one database's search.
type Result struct {
	// Database is "postgres" or "mariadb" (or "mysql").
	Database string  `json:"database"`
	Version  string  `json:"version"`
	Points   []Point `json:"points"`
	// Best is the point with the most jobs per second.
	Best Point `json:"best"`
}

// store is one database's three writes on lockstep_jobs.
type store interface {
	// reset empties the table so that every point starts alike.
	reset(ctx context.Context) error
	insert(ctx context.Context, n int) error
	// claim moves up to n PENDING rows to RUNNING and returns their ids.
	claim(ctx context.Context, n int) ([]int64, error)
	// finish moves the rows to DONE and returns how many it moved.
	finish(ctx context.Context, ids []int64) (int64, error)
}

// search measures every point on s.
func search(ctx context.Context, s store, o Options) ([]Point, Point, error) {
	var points []Point
	var best Point
	for _, c := range o.Concurrency {
		for _, b := range o.Batches {
			p, err := measure(ctx, s, b, c, o)
			if err != nil {
				return points, best, err
			}
			o.logf("floor: batch %d × %d loops: %.0f jobs/s", b, c, p.JobsPerSec)
			points = append(points, p)
			if p.JobsPerSec > best.JobsPerSec {
				best = p
			}
		}
	}
	return points, best, nil
}

// measure runs c loops of batch b for o.Warmup + o.Duration.
func measure(ctx context.Context, s store, b, c int, o Options) (Point, error) {
	if err := s.reset(ctx); err != nil {
		return Point{}, err
	}
	var inserted, claimed, finished atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make([]error, c)
	for i := range c {
		wg.Go(func() {
			for !stop.Load() && ctx.Err() == nil {
				if err := s.insert(ctx, b); err != nil {
					errs[i] = fmt.Errorf("floor: insert: %w", err)
					return
				}
				inserted.Add(int64(b))
				ids, err := s.claim(ctx, b)
				if err != nil {
					errs[i] = fmt.Errorf("floor: claim: %w", err)
					return
				}
				claimed.Add(int64(len(ids)))
				if len(ids) == 0 {
					continue
				}
				n, err := s.finish(ctx, ids)
				if err != nil {
					errs[i] = fmt.Errorf("floor: finish: %w", err)
					return
				}
				if n != int64(len(ids)) {
					errs[i] = fmt.Errorf("floor: finish moved %d of %d claimed rows", n, len(ids))
					return
				}
				finished.Add(n)
			}
		})
	}
	failed := func() error {
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}
	// done ends the loops and reports the first error, if any.
	done := func() error {
		stop.Store(true)
		wg.Wait()
		return errors.Join(failed(), ctx.Err())
	}
	if err := sleep(ctx, o.Warmup); err != nil {
		return Point{}, done()
	}
	i0, c0, f0, t0 := inserted.Load(), claimed.Load(), finished.Load(), time.Now()
	if err := sleep(ctx, o.Duration); err != nil {
		return Point{}, done()
	}
	i1, c1, f1, t1 := inserted.Load(), claimed.Load(), finished.Load(), time.Now()
	if err := done(); err != nil {
		return Point{}, err
	}
	secs := t1.Sub(t0).Seconds()
	return Point{
		Batch: b, Concurrency: c,
		Jobs: f1 - f0, Seconds: secs, JobsPerSec: float64(f1-f0) / secs,
		Inserted: i1 - i0, Claimed: c1 - c0,
	}, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// WriteText prints each database's grid (jobs/s, batch size by
// concurrency) as Markdown tables, then the best point of each.
func WriteText(w io.Writer, results []*Result) error {
	var b strings.Builder
	for _, r := range results {
		batches, concs := axes(r.Points)
		fmt.Fprintf(&b, "%s %s — write floor, jobs/s (insert + claim + finish, committed)\n\n", r.Database, r.Version)
		b.WriteString("| batch \\ loops |")
		for _, c := range concs {
			fmt.Fprintf(&b, " %d |", c)
		}
		b.WriteString("\n|---|")
		b.WriteString(strings.Repeat("---|", len(concs)))
		b.WriteString("\n")
		for _, bs := range batches {
			fmt.Fprintf(&b, "| %d |", bs)
			for _, c := range concs {
				cell := " – |"
				for _, p := range r.Points {
					if p.Batch == bs && p.Concurrency == c {
						cell = fmt.Sprintf(" %s |", thousands(p.JobsPerSec))
					}
				}
				b.WriteString(cell)
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	b.WriteString("| database | floor jobs/s | batch | loops |\n|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s %s | %s | %d | %d |\n", r.Database, r.Version, thousands(r.Best.JobsPerSec), r.Best.Batch, r.Best.Concurrency)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func axes(points []Point) (batches, concs []int) {
	for _, p := range points {
		if !slices.Contains(batches, p.Batch) {
			batches = append(batches, p.Batch)
		}
		if !slices.Contains(concs, p.Concurrency) {
			concs = append(concs, p.Concurrency)
		}
	}
	slices.Sort(batches)
	slices.Sort(concs)
	return batches, concs
}

// thousands formats a rate as a whole number with thin separators.
func thousands(f float64) string {
	s := fmt.Sprintf("%.0f", f)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// idList is ids as a literal SQL list (they are integers, so nothing to
// quote).
func idList(ids []int64) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d", id)
	}
	return b.String()
}
