package lockstep

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// aheadOf: only a full claim of an unlimited queue whose jobs run shorter
// than the claim took lets the next claim take more than the free workers.
func TestAheadOf(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, tc := range []struct {
		name           string
		full, limited  bool
		jobTime, claim time.Duration
		want           int
	}{
		{"saturated, short jobs", true, false, ms / 10, 2 * ms, 100},
		{"not full: the queue is drained", false, false, ms / 10, 2 * ms, 0},
		{"limited queue", true, true, ms / 10, 2 * ms, 0},
		{"jobs longer than a claim", true, false, 3 * ms, 2 * ms, 0},
		{"no job finished yet", true, false, 0, 2 * ms, 0},
	} {
		require.Equal(t, tc.want, aheadOf(tc.full, tc.limited, 100, tc.jobTime, tc.claim), tc.name)
	}
}

// A job claimed ahead that is cancelled while it waits reaches its worker
// with its context already cancelled, and its result is fenced out: the
// cancel stands.
func TestClaimedAheadCancelledWhileWaiting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	drv := migratedSQLite(t)
	ws := NewWorkers()
	var seen error
	AddWorker(ws, WorkFunc(func(ctx context.Context, _ *Job[aheadArgs]) error { seen = context.Cause(ctx); return nil }))
	c, err := NewClient(drv, Config{Workers: ws, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)

	_, err = c.exec.JobInsertMany(ctx, []driver.JobInsertParams{{Queue: DefaultQueue, Kind: aheadArgs{}.Kind(), Args: []byte("{}"), MaxAttempts: 3}})
	require.NoError(t, err)
	jobs, err := c.exec.JobClaim(ctx, &driver.JobClaimParams{Queue: DefaultQueue, Max: 1})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	cl := c.claim(ctx, jobs[0])
	ok, err := c.exec.JobCancel(ctx, jobs[0].ID)
	require.NoError(t, err)
	require.True(t, ok)
	c.cancelLocal(jobs[0].ID) // what the heartbeat does when it finds the job gone

	c.execute(cl)
	require.ErrorIs(t, seen, ErrJobLost, "the worker started with its context cancelled")
	j, err := c.exec.JobGet(ctx, jobs[0].ID)
	require.NoError(t, err)
	require.Equal(t, rowtype.StatusCancelled, j.Status)
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Empty(t, c.running, "untracked")
}

type aheadArgs struct{}

func (aheadArgs) Kind() string { return "ahead" }

// headEvery: a saturated queue claims from its head every PollInterval
// while that is cheap, and keeps those claims to a tenth of its claiming
// time once they have grown slow.
func TestHeadEvery(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	require.Equal(t, time.Second, headEvery(time.Second, 2*ms), "cheap: PollInterval")
	require.Equal(t, 20*ms, headEvery(20*ms, ms), "cheap: PollInterval")
	require.Equal(t, 800*ms, headEvery(20*ms, 80*ms), "slow: ten times as long as it took")
	require.Equal(t, 5*time.Second, headEvery(time.Second, 500*ms), "slow: ten times as long as it took")
	require.Equal(t, 20*ms, headEvery(20*ms, 0), "none yet")
}
