package lockstep_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/catalog"
)

type steppedArgs struct{ N int }

func (steppedArgs) Kind() string { return "stepped" }

// claimStatements records, in order, which claim statement the client's
// producers issued: from the queue's head, or after a key.
type claimStatements struct {
	mu    sync.Mutex
	names []catalog.Name
}

func (c *claimStatements) trace() *driver.StatementTrace {
	return &driver.StatementTrace{Before: func(_ context.Context, name string) error {
		switch n := catalog.Name(name); n {
		case catalog.JobClaim, catalog.JobClaimSelect, catalog.JobClaimAfter, catalog.JobClaimSelectAfter:
			c.mu.Lock()
			c.names = append(c.names, n)
			c.mu.Unlock()
		}
		return nil
	}}
}

func (c *claimStatements) count(after bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, name := range c.names {
		if (name == catalog.JobClaimAfter || name == catalog.JobClaimSelectAfter) == after {
			n++
		}
	}
	return n
}

// startSaturated enqueues jobs steppedArgs N = 1…jobs at priority 2 and
// starts a client of cfg serving the default queue with maxWorkers, its
// producers' claim statements recorded; the client is stopped at the end
// of the test.
func startSaturated(ctx context.Context, t *testing.T, drv driver.Driver, cfg lockstep.Config, maxWorkers, jobs int) (*lockstep.Client, *claimStatements) {
	t.Helper()
	if cfg.Queues == nil {
		cfg.Queues = map[string]lockstep.QueueConfig{lockstep.DefaultQueue: {MaxWorkers: maxWorkers}}
	}
	c := quietClient(t, drv, cfg)
	claims := &claimStatements{}
	c.SetClaimTrace(claims.trace())
	params := make([]lockstep.InsertManyParams, jobs)
	for i := range params {
		params[i] = lockstep.InsertManyParams{Args: steppedArgs{N: i + 1}, Opts: &lockstep.InsertOpts{Priority: 2}}
	}
	_, err := c.InsertMany(ctx, params)
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return c, claims
}

// TestSaturatedQueueClaimsAfterItsLastKey: while every claim takes all it
// asks for, the next starts after the last job the previous one took, so a
// job inserted meanwhile that sorts before that key (a higher priority) is
// passed over; once a claim after the key comes back short, the next
// claims from the head and takes it. PollInterval is an hour here, so no
// claim from the head is due on time: the job runs last, after every job
// of the lower priority, and each job runs once. With StrictPriority every
// claim is from the head: the job runs next.
func TestSaturatedQueueClaimsAfterItsLastKey(t *testing.T) {
	t.Run("after the key", func(t *testing.T) { testSaturatedPriority(t, false) })
	t.Run("strict priority", func(t *testing.T) { testSaturatedPriority(t, true) })
}

func testSaturatedPriority(t *testing.T, strict bool) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		drv = openMigrated(t, drv)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		const jobs = 20
		started := make(chan int, jobs+1)
		step := make(chan struct{})
		ws := lockstep.NewWorkers()
		lockstep.AddWorker(ws, lockstep.WorkFunc(func(ctx context.Context, j *lockstep.Job[steppedArgs]) error {
			started <- j.Args.N
			select {
			case <-step:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}))
		cfg := lockstep.Config{Workers: ws, PollInterval: time.Hour,
			Queues: map[string]lockstep.QueueConfig{lockstep.DefaultQueue: {MaxWorkers: 1, StrictPriority: strict}}}
		c, claims := startSaturated(ctx, t, drv, cfg, 1, jobs)
		var order []int
		order = append(order, <-started)
		// Job 0 sorts before every job of priority 2.
		_, err := c.Insert(ctx, steppedArgs{N: 0}, &lockstep.InsertOpts{Priority: 1})
		require.NoError(t, err)
		for len(order) < jobs+1 {
			step <- struct{}{}
			select {
			case n := <-started:
				order = append(order, n)
			case <-ctx.Done():
				t.Fatalf("ran %v, then nothing more", order)
			}
		}
		step <- struct{}{}
		require.NoError(t, c.Stop(ctx))
		want := make([]int, 0, jobs+1)
		for n := 1; n <= jobs; n++ {
			want = append(want, n)
		}
		if strict {
			require.Equal(t, append([]int{1, 0}, want[1:]...), order, "the job sorting first runs next")
			require.Zero(t, claims.count(true), "a claim after a key ran")
		} else {
			require.Equal(t, append(want, 0), order, "the job sorting before the claims' key runs once they run dry")
			require.Positive(t, claims.count(true), "no claim after a key ran")
		}
		require.Equal(t, jobs+1, countJobs(t, drv, "status", "DONE"))
	})
}

// TestSaturatedQueueClaimsFromTheHeadEveryPollInterval: a job sorting
// before the key of a queue that stays saturated is claimed by the claim
// from the head that runs at least every PollInterval, long before the
// claims after the key run dry.
func TestSaturatedQueueClaimsFromTheHeadEveryPollInterval(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		drv = openMigrated(t, drv)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		const jobs = 5000
		var done atomic.Int64
		doneWhenUrgent := make(chan int64, 1)
		first := make(chan struct{})
		var once sync.Once
		ws := lockstep.NewWorkers()
		lockstep.AddWorker(ws, lockstep.WorkFunc(func(_ context.Context, j *lockstep.Job[steppedArgs]) error {
			once.Do(func() { close(first) })
			if j.Args.N == 0 {
				doneWhenUrgent <- done.Load()
			}
			done.Add(1)
			return nil
		}))
		c, claims := startSaturated(ctx, t, drv, lockstep.Config{Workers: ws, PollInterval: 50 * time.Millisecond, MinPollInterval: 10 * time.Millisecond}, 2, jobs)
		<-first
		_, err := c.Insert(ctx, steppedArgs{N: 0}, &lockstep.InsertOpts{Priority: 1})
		require.NoError(t, err)
		var before int64
		select {
		case before = <-doneWhenUrgent:
		case <-ctx.Done():
			t.Fatal("the job sorting before the claims' key never ran")
		}
		eventually(t, time.Minute, "every job DONE", func() bool { return done.Load() == jobs+1 })
		require.NoError(t, c.Stop(ctx))
		require.Less(t, before, int64(jobs), "the job ran only once the claims after the key ran dry")
		require.Positive(t, claims.count(true), "no claim after a key ran")
		require.Greater(t, claims.count(false), 1, "no claim from the head ran while the queue was saturated")
		t.Logf("the job ran after %d of %d; claims from the head %d, after a key %d", before, jobs, claims.count(false), claims.count(true))
	})
}
