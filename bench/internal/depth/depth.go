// Package depth measures what a claim costs as the queue grows: the
// latency of one claim (median, p99) and the number of rows it locks, with
// 1k, 100k and 1M PENDING jobs, for lockstep's own claim and for the
// literal claim of a one-table job queue (ORDER BY id over a (status,
// available_at) index).
//
// lockstep's claim is the driver's JobClaim on lockstep_jobs, run inside a
// transaction that is rolled back, so the depth stays what was loaded. The
// literal claim is SELECT … WHERE status = 'PENDING' AND available_at <=
// NOW() ORDER BY id LIMIT n FOR UPDATE SKIP LOCKED, then the UPDATE to
// RUNNING of the ids it returned, on its own `jobs` table with its
// (status, available_at) index, in a scratch database, also rolled back.
//
// Rows locked are read from the server's lock tables while a claim's
// transaction is held open: MariaDB's INNODB_TRX.trx_rows_locked for the
// holding connection, PostgreSQL's pgrowlocks (or, where the extension
// cannot be created, the rows of the LockRows node of EXPLAIN ANALYZE).
package depth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Options shape a measurement.
type Options struct {
	// Depths are the numbers of PENDING jobs measured at, ascending.
	Depths []int
	// Done is a history of DONE jobs loaded first, with lower ids than
	// every PENDING one (as a queue that keeps its finished jobs has).
	Done int
	// Claims is how many claims are timed at each depth, per system.
	Claims int
	// Limit is the claim's batch: lockstep's Max and the literal claim's LIMIT.
	Limit int
	// LockSamples is how many claims are held open to read their locks.
	LockSamples int
	// Budget bounds the time spent timing claims of one system at one
	// depth: past it, sampling stops (after at least MinClaims claims).
	Budget time.Duration
	// LiteralReadCommitted runs the literal claim's transactions at READ
	// COMMITTED instead of the server's default (REPEATABLE READ on
	// MariaDB).
	LiteralReadCommitted bool
	// Logf, when set, is told about progress.
	Logf func(format string, args ...any)
}

// MinClaims is the fewest claims timed at a point whatever the budget.
const MinClaims = 10

// warmups are claims run, untimed, before a point's timed ones.
const warmups = 3

// DefaultOptions are the full measurement.
func DefaultOptions() Options {
	return Options{
		Depths:      []int{1_000, 100_000, 1_000_000},
		Claims:      200,
		Limit:       10,
		LockSamples: 3,
		Budget:      time.Minute,
	}
}

func (o Options) check() error {
	if len(o.Depths) == 0 {
		return errors.New("depth: need at least one depth")
	}
	if !slices.IsSorted(o.Depths) || o.Depths[0] < 1 || o.Depths[len(o.Depths)-1] > 10_000_000 {
		return fmt.Errorf("depth: depths %v must ascend within 1..10000000", o.Depths)
	}
	if o.Done < 0 || o.Done > 10_000_000 {
		return fmt.Errorf("depth: %d DONE jobs out of 0..10000000", o.Done)
	}
	if o.Claims < 1 || o.Limit < 1 || o.Limit > 1000 || o.LockSamples < 0 {
		return errors.New("depth: need claims >= 1, 1 <= limit <= 1000 and lock samples >= 0")
	}
	return nil
}

func (o Options) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// Point is one system's claim at one depth.
type Point struct {
	// System is "lockstep"; "literal", the literal claim planned as the
	// server likes; or "literal-index", the same query made to find its rows
	// through its (status, available_at) index, the plan the
	// servers pick when PENDING rows are a small part of the table.
	System string `json:"system"`
	// Depth is the PENDING jobs, Done the DONE ones before them.
	Depth int `json:"depth"`
	Done  int `json:"done"`
	Limit int `json:"limit"`
	// Claims is how many claims were timed (fewer than asked when the
	// budget ran out); Claimed the rows the last one returned.
	Claims  int `json:"claims"`
	Claimed int `json:"claimed"`
	// Latencies of one claim, in milliseconds: from its first statement
	// to its last result, the transaction's BEGIN and ROLLBACK excluded.
	MedianMS float64 `json:"median_ms"`
	P99MS    float64 `json:"p99_ms"`
	MaxMS    float64 `json:"max_ms"`
	// RowsLocked is the median over the lock samples of the rows the
	// holding transaction had locked (-1: not measured). On MariaDB it is
	// trx_rows_locked, which counts a row once per index record locked
	// (a row found through a secondary index counts twice); LockStructs
	// is trx_lock_structs there and 0 on PostgreSQL.
	RowsLocked  int64 `json:"rows_locked"`
	LockStructs int64 `json:"lock_structs"`
	// LockMethod is how RowsLocked was read.
	LockMethod string `json:"lock_method"`
	// Plan is the server's plan for the claim's row-finding statement.
	Plan string `json:"plan"`
	// Isolation is the claim transaction's isolation level.
	Isolation string `json:"isolation"`
}

// Result is one database's measurement.
type Result struct {
	// Database is "postgres", "mariadb" or "mysql".
	Database string  `json:"database"`
	Version  string  `json:"version"`
	Points   []Point `json:"points"`
}

// sample is one claim.
type sample struct {
	took    time.Duration
	claimed int
	// rowsLocked and lockStructs are -1 when locks were not read.
	rowsLocked, lockStructs int64
}

// table is a table the claims read.
type table interface {
	// insert adds rows with ids after+1..after+count, PENDING or DONE,
	// available in id order.
	insert(ctx context.Context, after, count int, done bool) error
	// analyze refreshes the statistics the planner uses.
	analyze(ctx context.Context) error
}

// claimer is one claim statement (or pair of statements).
type claimer interface {
	name() string
	isolation() string
	lockMethod() string
	plan(ctx context.Context, limit int) (string, error)
	// claim runs one claim in a transaction it rolls back, reading the
	// locks held before the rollback when locks is set.
	claim(ctx context.Context, limit int, locks bool) (sample, error)
}

// run loads the tables and measures every claimer at every depth.
func run(ctx context.Context, tables []table, claimers []claimer, o Options) ([]Point, error) {
	load := func(after, count int, done bool) error {
		begin := time.Now()
		for _, t := range tables {
			if err := t.insert(ctx, after, count, done); err != nil {
				return fmt.Errorf("depth: load: %w", err)
			}
			if err := t.analyze(ctx); err != nil {
				return fmt.Errorf("depth: analyze: %w", err)
			}
		}
		o.logf("depth: %d %s rows loaded in %v", count, map[bool]string{false: "PENDING", true: "DONE"}[done], time.Since(begin).Round(time.Millisecond))
		return nil
	}
	if o.Done > 0 {
		if err := load(0, o.Done, true); err != nil {
			return nil, err
		}
	}
	var points []Point
	have := 0
	for _, d := range o.Depths {
		if err := load(o.Done+have, d-have, false); err != nil {
			return points, err
		}
		have = d
		for _, c := range claimers {
			p, err := measure(ctx, c, d, o)
			if err != nil {
				return points, fmt.Errorf("depth: %s at %d: %w", c.name(), d, err)
			}
			o.logf("depth: %s at %d: median %.2f ms, p99 %.2f ms over %d claims, %d rows locked", c.name(), d, p.MedianMS, p.P99MS, p.Claims, p.RowsLocked)
			points = append(points, p)
		}
	}
	return points, nil
}

func measure(ctx context.Context, s claimer, depth int, o Options) (Point, error) {
	p := Point{System: s.name(), Depth: depth, Done: o.Done, Limit: o.Limit, RowsLocked: -1, LockMethod: s.lockMethod(), Isolation: s.isolation()}
	var err error
	if p.Plan, err = s.plan(ctx, o.Limit); err != nil {
		return p, fmt.Errorf("plan: %w", err)
	}
	for range warmups {
		if _, err := s.claim(ctx, o.Limit, false); err != nil {
			return p, err
		}
	}
	var took []time.Duration
	begin := time.Now()
	for len(took) < o.Claims && (len(took) < MinClaims || o.Budget <= 0 || time.Since(begin) < o.Budget) {
		smp, err := s.claim(ctx, o.Limit, false)
		if err != nil {
			return p, err
		}
		if smp.claimed == 0 {
			return p, fmt.Errorf("a claim found nothing with %d PENDING rows", depth)
		}
		took = append(took, smp.took)
		p.Claimed = smp.claimed
	}
	p.Claims = len(took)
	slices.Sort(took)
	p.MedianMS, p.P99MS, p.MaxMS = ms(quantile(took, 0.5)), ms(quantile(took, 0.99)), ms(took[len(took)-1])
	var locked, structs []int64
	for range o.LockSamples {
		smp, err := s.claim(ctx, o.Limit, true)
		if err != nil {
			return p, fmt.Errorf("read locks: %w", err)
		}
		locked, structs = append(locked, smp.rowsLocked), append(structs, smp.lockStructs)
	}
	if len(locked) > 0 {
		p.RowsLocked, p.LockStructs = median(locked), median(structs)
	}
	return p, nil
}

// quantile is the nearest-rank q-quantile of sorted ds.
func quantile(ds []time.Duration, q float64) time.Duration {
	i := int(float64(len(ds))*q+0.999999) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

func median(xs []int64) int64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// WriteText prints one Markdown table per database: for each depth, each
// system's latency and rows locked, and the ratio of each system's median
// to its median at the smallest depth.
func WriteText(w io.Writer, results []*Result) error {
	var b strings.Builder
	for _, r := range results {
		fmt.Fprintf(&b, "%s %s — claim cost vs depth\n\n", r.Database, r.Version)
		b.WriteString("| claim | PENDING | limit | median ms | p99 ms | vs smallest depth | rows locked | claims | isolation |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
		base := map[string]float64{}
		for _, p := range r.Points {
			if _, ok := base[p.System]; !ok {
				base[p.System] = p.MedianMS
			}
			ratio := "–"
			if base[p.System] > 0 {
				ratio = fmt.Sprintf("%.2f×", p.MedianMS/base[p.System])
			}
			locked := "–"
			if p.RowsLocked >= 0 {
				locked = fmt.Sprint(p.RowsLocked)
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %.2f | %.2f | %s | %s | %d | %s |\n",
				p.System, count(p.Depth), p.Limit, p.MedianMS, p.P99MS, ratio, locked, p.Claims, p.Isolation)
		}
		b.WriteString("\nRows locked: ")
		var methods []string
		for _, p := range r.Points {
			if !slices.Contains(methods, p.LockMethod) {
				methods = append(methods, p.LockMethod)
			}
		}
		b.WriteString(strings.Join(methods, "; "))
		b.WriteString(".\n\nPlans:\n\n")
		seen := map[string]bool{}
		for _, p := range r.Points {
			k := p.System + "\x00" + p.Plan
			if seen[k] {
				continue
			}
			seen[k] = true
			fmt.Fprintf(&b, "- %s at %s: %s\n", p.System, count(p.Depth), p.Plan)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// count writes 1000 as 1k and 1000000 as 1M.
func count(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// idList is ids as a literal SQL list (integers: nothing to quote).
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

// pause waits d unless ctx ends first.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
