package lockstep_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/lockdiag/locktest"
	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
	"github.com/lockstep-queue/lockstep/rowtype"
)

type uniqArgs struct {
	Account int    `json:"account"`
	Month   string `json:"month"`
}

func (uniqArgs) Kind() string { return "uniq" }

// TestUniqueJobs: on each database, a unique enqueue inserts once and then
// returns the holder as a duplicate — by args (whatever their JSON
// formatting), by a caller's key, by queue, by period — until the holder
// leaves its unique statuses; then the key is free again.
func TestUniqueJobs(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		c := quietClient(t, drv, lockstep.Config{})
		ex := drv.Executor()
		uniq := &lockstep.InsertOpts{Unique: &lockstep.UniqueOpts{}}

		first, err := c.Insert(ctx, uniqArgs{Account: 1, Month: "2026-11"}, uniq)
		require.NoError(t, err)
		require.False(t, first.Duplicate)
		again, err := c.Insert(ctx, uniqArgs{Account: 1, Month: "2026-11"}, uniq)
		require.NoError(t, err)
		require.Equal(t, lockstep.InsertResult{ID: first.ID, Duplicate: true}, *again)
		// The same args as other JSON: keys sorted differently, spaces.
		raw, err := c.Insert(ctx, lockstep.RawArgs{KindName: "uniq", JSON: json.RawMessage(`{ "month": "2026-11", "account": 1 }`)}, uniq)
		require.NoError(t, err)
		require.Equal(t, lockstep.InsertResult{ID: first.ID, Duplicate: true}, *raw)
		// Insert returns the holder's id too.
		idRes, err := c.Insert(ctx, uniqArgs{Account: 1, Month: "2026-11"}, uniq)
		require.NoError(t, err)
		id := idRes.ID
		require.Equal(t, first.ID, id)
		other, err := c.Insert(ctx, uniqArgs{Account: 2, Month: "2026-11"}, uniq)
		require.NoError(t, err)
		require.False(t, other.Duplicate)
		// Without UniqueOpts nothing is checked.
		_, err = c.Insert(ctx, uniqArgs{Account: 1, Month: "2026-11"}, nil)
		require.NoError(t, err)

		// A caller's key replaces the args.
		byKey := &lockstep.InsertOpts{Unique: &lockstep.UniqueOpts{Key: "acct-7"}}
		k1, err := c.Insert(ctx, uniqArgs{Account: 7, Month: "a"}, byKey)
		require.NoError(t, err)
		k2, err := c.Insert(ctx, uniqArgs{Account: 7, Month: "b"}, byKey)
		require.NoError(t, err)
		require.Equal(t, lockstep.InsertResult{ID: k1.ID, Duplicate: true}, *k2)

		// ByQueue: the same args on another queue are another job.
		q1, err := c.Insert(ctx, uniqArgs{Account: 3}, &lockstep.InsertOpts{Queue: "a", Unique: &lockstep.UniqueOpts{ByQueue: true}})
		require.NoError(t, err)
		q2, err := c.Insert(ctx, uniqArgs{Account: 3}, &lockstep.InsertOpts{Queue: "b", Unique: &lockstep.UniqueOpts{ByQueue: true}})
		require.NoError(t, err)
		require.False(t, q2.Duplicate)
		require.NotEqual(t, q1.ID, q2.ID)

		// ByPeriod: the scheduled time's hour is part of the key.
		hour := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
		per := func(at time.Time) *lockstep.InsertOpts {
			return &lockstep.InsertOpts{ScheduledAt: at, Unique: &lockstep.UniqueOpts{ByPeriod: time.Hour}}
		}
		p1, err := c.Insert(ctx, uniqArgs{Account: 4}, per(hour.Add(5*time.Minute)))
		require.NoError(t, err)
		p2, err := c.Insert(ctx, uniqArgs{Account: 4}, per(hour.Add(55*time.Minute)))
		require.NoError(t, err)
		require.Equal(t, lockstep.InsertResult{ID: p1.ID, Duplicate: true}, *p2)
		p3, err := c.Insert(ctx, uniqArgs{Account: 4}, per(hour.Add(65*time.Minute)))
		require.NoError(t, err)
		require.False(t, p3.Duplicate)

		// The holder finishes: by default (PENDING, RUNNING) the key is
		// free again; with DONE among the statuses it is not.
		finish := func(id int64) {
			claimed, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: lockstep.DefaultQueue, Max: 100})
			require.NoError(t, err)
			for _, j := range claimed {
				if j.ID == id {
					ok, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: j.ID, Attempt: j.Attempts, Status: rowtype.StatusDone})
					require.NoError(t, err)
					require.True(t, ok)
				}
			}
		}
		finish(first.ID)
		next, err := c.Insert(ctx, uniqArgs{Account: 1, Month: "2026-11"}, uniq)
		require.NoError(t, err)
		require.False(t, next.Duplicate)
		require.Greater(t, next.ID, first.ID)

		once := &lockstep.InsertOpts{Unique: &lockstep.UniqueOpts{Key: "once", ByStatus: []lockstep.JobStatus{lockstep.StatusPending, lockstep.StatusRunning, lockstep.StatusDone}}}
		o1, err := c.Insert(ctx, uniqArgs{}, once)
		require.NoError(t, err)
		finish(o1.ID)
		o2, err := c.Insert(ctx, uniqArgs{}, once)
		require.NoError(t, err)
		require.Equal(t, lockstep.InsertResult{ID: o1.ID, Duplicate: true}, *o2)
		got, err := c.Job(ctx, o1.ID)
		require.NoError(t, err)
		require.Equal(t, lockstep.StatusDone, got.Status)
		require.Len(t, got.UniqueKey, 64)

		// InsertMany mixes plain and unique jobs and keeps input order.
		idsRes, err := c.InsertMany(ctx, []lockstep.InsertManyParams{
			{Args: uniqArgs{Account: 20}},
			{Args: uniqArgs{Account: 2, Month: "2026-11"}, Opts: uniq}, // a duplicate of other
			{Args: uniqArgs{Account: 21}, Opts: uniq},
		})
		require.NoError(t, err)
		ids := insertedIDs(idsRes)
		require.Len(t, ids, 3)
		require.Equal(t, other.ID, ids[1])
		require.Less(t, ids[0], ids[2])

		// Bad options are refused before the database.
		_, err = c.Insert(ctx, uniqArgs{}, &lockstep.InsertOpts{Unique: &lockstep.UniqueOpts{ByStatus: []lockstep.JobStatus{lockstep.StatusPending}}})
		requireInvalid(t, err, "must include PENDING and RUNNING")
		_, err = c.Insert(ctx, uniqArgs{}, &lockstep.InsertOpts{Unique: &lockstep.UniqueOpts{ByStatus: []lockstep.JobStatus{"LATER"}}})
		requireInvalid(t, err, `"LATER" is not a job status`)
	})
}

// TestUniqueRetryConflict: retrying a FAILED unique job whose key another
// job took meanwhile is refused by the unique index, as ErrorDuplicate,
// and changes nothing.
func TestUniqueRetryConflict(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		c := quietClient(t, drv, lockstep.Config{})
		ex := drv.Executor()
		uniq := &lockstep.InsertOpts{Unique: &lockstep.UniqueOpts{Key: "k"}}
		a, err := c.Insert(ctx, uniqArgs{}, uniq)
		require.NoError(t, err)
		claimed, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: lockstep.DefaultQueue, Max: 1})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		_, err = ex.JobFinish(ctx, &driver.JobFinishParams{ID: a.ID, Attempt: 1, Status: rowtype.StatusFailed, Error: "boom"})
		require.NoError(t, err)
		b, err := c.Insert(ctx, uniqArgs{}, uniq)
		require.NoError(t, err)
		require.False(t, b.Duplicate)

		_, err = c.RetryJob(ctx, a.ID)
		require.Error(t, err)
		var dbErr *lockstep.DBError
		require.True(t, errors.As(err, &dbErr), "%v", err)
		require.Equal(t, lockstep.ErrorDuplicate, dbErr.Kind)
		got, err := c.Job(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, lockstep.StatusFailed, got.Status)
	})
}

// TestUniqueConcurrentInserts: three clients (three pools, as three
// processes would have), eight goroutines each, insert the same keys at
// once: each key ends with exactly one job, and every caller got its id.
// TestUniqueInsertWaitsForHolder is the deterministic half.
func TestUniqueConcurrentInserts(t *testing.T) {
	forEachDialectN(t, 3, func(t *testing.T, drvs []driver.Driver) {
		ctx := context.Background()
		first := drvs[0]
		var clients []*lockstep.Client
		for _, drv := range drvs {
			clients = append(clients, quietClient(t, drv, lockstep.Config{}))
		}
		const keys, perClient = 20, 8
		for k := range keys {
			start := make(chan struct{})
			var wg sync.WaitGroup
			results := make(chan lockstep.InsertResult, len(clients)*perClient)
			errs := make(chan error, len(clients)*perClient)
			for _, c := range clients {
				for range perClient {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						r, err := c.Insert(ctx, uniqArgs{Account: k}, &lockstep.InsertOpts{Unique: &lockstep.UniqueOpts{}})
						if err != nil {
							errs <- err
							return
						}
						results <- *r
					}()
				}
			}
			close(start)
			wg.Wait()
			close(results)
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			var winners int
			var ids = map[int64]bool{}
			for r := range results {
				if !r.Duplicate {
					winners++
				}
				ids[r.ID] = true
			}
			require.Equal(t, 1, winners, "key %d", k)
			require.Len(t, ids, 1, "key %d: every caller gets the one job", k)
		}
		require.Equal(t, keys, countJobs(t, first, "kind", "uniq"))
	})
}

// TestUniqueInsertWaitsForHolder: a unique insert that meets an
// uncommitted holder waits for it (the wait is visible in the server's
// lock tables), then returns the holder as the duplicate once it commits —
// or inserts, once it rolls back.
func TestUniqueInsertWaitsForHolder(t *testing.T) {
	for _, d := range testDialects {
		if d.name == "sqlite" {
			continue // one writer: the second insert waits for the lock, not the row
		}
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			drv := d.open(t)
			c := quietClient(t, drv, lockstep.Config{})
			flavor, err := lockview.Detect(ctx, drv.DB())
			require.NoError(t, err)
			for _, commit := range []bool{true, false} {
				opts := &lockstep.InsertOpts{Unique: &lockstep.UniqueOpts{Key: fmt.Sprintf("hold-%v", commit)}}
				tx, err := drv.BeginSQL(ctx)
				require.NoError(t, err)
				held, err := c.InsertTx(ctx, tx, uniqArgs{}, opts)
				require.NoError(t, err)
				require.False(t, held.Duplicate)

				done := make(chan *lockstep.InsertResult, 1)
				go func() {
					r, err := c.Insert(ctx, uniqArgs{}, opts)
					if err != nil {
						t.Error(err)
					}
					done <- r
				}()
				locktest.WaitForLockWait(t, drv.DB(), flavor, 30*time.Second)
				if commit {
					require.NoError(t, tx.Commit())
				} else {
					require.NoError(t, tx.Rollback())
				}
				r := <-done
				require.NotNil(t, r)
				if commit {
					require.Equal(t, lockstep.InsertResult{ID: held.ID, Duplicate: true}, *r)
				} else {
					require.False(t, r.Duplicate)
					require.NotEqual(t, held.ID, r.ID)
				}
			}
		})
	}
}

// TestUniqueKeysInKeyOrder: two transactions enqueue the same two unique
// jobs, given in opposite orders. A pauses between its two inserts; B is
// seen waiting for A's first key — not holding the second, as it would if
// each took the keys in its own input order, which deadlocks when A goes
// on. Then A finishes and both commit: two jobs, B's are duplicates.
func TestUniqueKeysInKeyOrder(t *testing.T) {
	for _, d := range testDialects {
		if d.name == "sqlite" {
			continue // one writer at a time: no interleaving
		}
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			drv := d.open(t)
			c := quietClient(t, drv, lockstep.Config{})
			flavor, err := lockview.Detect(ctx, drv.DB())
			require.NoError(t, err)
			uniq := &lockstep.InsertOpts{Unique: &lockstep.UniqueOpts{}}
			j1 := lockstep.InsertManyParams{Args: uniqArgs{Account: 1}, Opts: uniq}
			j2 := lockstep.InsertManyParams{Args: uniqArgs{Account: 2}, Opts: uniq}

			paused, resume := make(chan struct{}), make(chan struct{})
			inserts := 0
			ctxA := driver.WithStatementTrace(ctx, &driver.StatementTrace{Before: func(_ context.Context, name string) error {
				if name == "job.insert_unique" {
					if inserts++; inserts == 2 {
						close(paused)
						<-resume
					}
				}
				return nil
			}})
			type result struct {
				ids []int64
				err error
			}
			run := func(ctx context.Context, jobs ...lockstep.InsertManyParams) <-chan result {
				out := make(chan result, 1)
				go func() {
					tx, err := drv.BeginSQL(ctx)
					if err != nil {
						out <- result{err: err}
						return
					}
					res, err := c.InsertManyTx(ctx, tx, jobs)
					if err != nil {
						_ = tx.Rollback()
						out <- result{err: err}
						return
					}
					out <- result{ids: insertedIDs(res), err: tx.Commit()}
				}()
				return out
			}
			doneA := run(ctxA, j1, j2)
			<-paused
			doneB := run(ctx, j2, j1)
			locktest.WaitForLockWait(t, drv.DB(), flavor, 30*time.Second)
			close(resume)
			a, b := <-doneA, <-doneB
			require.NoError(t, a.err)
			require.NoError(t, b.err)
			require.Equal(t, []int64{a.ids[1], a.ids[0]}, b.ids)
			require.Equal(t, 2, countJobs(t, drv, "kind", "uniq"))
		})
	}
}

// TestUniqueDuplicateInTxLeavesEnqueuesFree: a transaction that met a
// duplicate (and on MariaDB keeps a shared lock on the holder's index
// record and the gap before it until it ends) does not hold up plain
// enqueues: their index entries go nowhere near that gap.
func TestUniqueDuplicateInTxLeavesEnqueuesFree(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		c := quietClient(t, drv, lockstep.Config{})
		opts := &lockstep.InsertOpts{Unique: &lockstep.UniqueOpts{Key: "holder"}}
		holder, err := c.Insert(ctx, uniqArgs{}, opts)
		require.NoError(t, err)
		if drv.Dialect() == "sqlite" {
			return // one writer: an open transaction holds every enqueue up
		}
		tx, err := drv.BeginSQL(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback() }()
		dup, err := c.InsertTx(ctx, tx, uniqArgs{}, opts)
		require.NoError(t, err)
		require.Equal(t, lockstep.InsertResult{ID: holder.ID, Duplicate: true}, *dup)
		// Waiting here would end in a lock wait timeout or the deadline.
		bounded, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		for range 3 {
			_, err := c.Insert(bounded, uniqArgs{Account: 9}, nil)
			require.NoError(t, err)
		}
	})
}

// TestEnqueueManyMixedIsAtomic: a batch of plain and unique jobs on the
// client's own pool is one transaction: when a unique insert fails, the
// plain jobs inserted before it are gone too.
func TestEnqueueManyMixedIsAtomic(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		c := quietClient(t, drv, lockstep.Config{})
		failUnique := driver.WithStatementTrace(ctx, &driver.StatementTrace{Before: func(_ context.Context, name string) error {
			if name == "job.insert_unique" {
				return errors.New("injected failure")
			}
			return nil
		}})
		_, err := c.InsertMany(failUnique, []lockstep.InsertManyParams{
			{Args: uniqArgs{Account: 1}},
			{Args: uniqArgs{Account: 2}, Opts: &lockstep.InsertOpts{Unique: &lockstep.UniqueOpts{}}},
		})
		require.ErrorContains(t, err, "injected failure")
		require.Zero(t, countJobs(t, drv, "kind", "uniq"))
	})
}

// TestUniqueJobsIntoARun: plain and unique jobs enqueued into a run in one
// call all belong to it (the run is locked once, by the first insert of
// the call's transaction); a cancelled run refuses them all.
func TestUniqueJobsIntoARun(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		c := quietClient(t, drv, lockstep.Config{})
		run, _, err := c.InsertRun(ctx, "r", nil)
		require.NoError(t, err)
		into := func(o *lockstep.UniqueOpts) *lockstep.InsertOpts {
			return &lockstep.InsertOpts{RunID: run.ID, Unique: o}
		}
		idsRes, err := c.InsertMany(ctx, []lockstep.InsertManyParams{
			{Args: uniqArgs{Account: 1}, Opts: into(nil)},
			{Args: uniqArgs{Account: 2}, Opts: into(&lockstep.UniqueOpts{})},
			{Args: uniqArgs{Account: 3}, Opts: into(&lockstep.UniqueOpts{})},
		})
		require.NoError(t, err)
		ids := insertedIDs(idsRes)
		for _, id := range ids {
			j, err := c.Job(ctx, id)
			require.NoError(t, err)
			require.Equal(t, run.ID, j.RunID, "job %d", id)
		}
		_, err = c.CancelRun(ctx, run.ID)
		require.NoError(t, err)
		_, err = c.InsertMany(ctx, []lockstep.InsertManyParams{
			{Args: uniqArgs{Account: 4}, Opts: into(&lockstep.UniqueOpts{})},
			{Args: uniqArgs{Account: 5}, Opts: into(&lockstep.UniqueOpts{})},
		})
		require.ErrorIs(t, err, lockstep.ErrRunCancelled)
		require.Equal(t, 3, countJobs(t, drv, "kind", "uniq"))
	})
}
