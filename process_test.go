package lockstep_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/internal/clienttest"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// procArgs are jobs that block until the test releases them, of the plain
// queue or of a limited one.
type procArgs struct {
	Limited bool `json:"limited,omitempty"`
}

func (procArgs) Kind() string { return "process_test" }

func (a procArgs) InsertOpts() lockstep.InsertOpts {
	if a.Limited {
		return lockstep.InsertOpts{Queue: "limited"}
	}
	return lockstep.InsertOpts{}
}

// processOf finds a process by id among a listing.
func processOf(ps []lockstep.Process, id string) *lockstep.Process {
	for i := range ps {
		if ps[i].ID == id {
			return &ps[i]
		}
	}
	return nil
}

// TestProcessRegistration: a started client registers its row (host, pid,
// version, queues, workers), refreshes its heartbeat on its heartbeat
// cadence, writes its id to claimed_by through the plain claim and the
// limited claim, is listed LIVE with its RUNNING jobs, and deletes its row
// at a clean Stop.
func TestProcessRegistration(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		release := make(chan struct{})
		ws := lockstep.NewWorkers()
		lockstep.AddWorker(ws, lockstep.WorkFunc(func(ctx context.Context, _ *lockstep.Job[procArgs]) error {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		}))
		cfg := clienttest.FastConfig(ws)
		cfg.Queues = map[string]lockstep.QueueConfig{
			lockstep.DefaultQueue: {MaxWorkers: 3},
			"limited":             {MaxWorkers: 2, Limits: &lockstep.QueueLimits{Concurrency: 5}},
		}
		c, err := lockstep.NewClient(drv, cfg)
		require.NoError(t, err)
		require.Empty(t, c.ProcessID(), "no id before Start")
		require.NoError(t, c.Start(ctx))
		stopped := false
		t.Cleanup(func() {
			close(release)
			if !stopped {
				_ = c.StopAndCancel(context.Background())
			}
		})
		id := c.ProcessID()
		host, _ := os.Hostname()
		require.True(t, strings.HasPrefix(id, host+"-"), id)

		ps, now, err := c.Processes(ctx)
		require.NoError(t, err)
		require.Len(t, ps, 1)
		p := ps[0]
		require.Equal(t, id, p.ID)
		require.Equal(t, host, p.Host)
		require.Equal(t, os.Getpid(), p.PID)
		require.NotEmpty(t, p.Version)
		require.Equal(t, "default=3,limited=2", p.Queues)
		require.Equal(t, 5, p.Workers)
		require.Equal(t, lockstep.ProcessLive, p.State)
		require.False(t, now.IsZero())
		require.False(t, p.StartedAt.After(p.HeartbeatAt))
		first := p.HeartbeatAt

		// The heartbeat moves on (every 50ms here).
		eventually(t, 5*time.Second, "the process heartbeat refreshed", func() bool {
			ps, _, err := c.Processes(ctx)
			require.NoError(t, err)
			return len(ps) == 1 && ps[0].HeartbeatAt.After(first)
		})

		// Both claims write the process: the plain queue's and the
		// limited queue's.
		plain, err := c.Insert(ctx, procArgs{}, nil)
		require.NoError(t, err)
		limited, err := c.Insert(ctx, procArgs{Limited: true}, nil)
		require.NoError(t, err)
		for _, jid := range []int64{plain.ID, limited.ID} {
			j := clienttest.WaitStatus(t, c, jid, lockstep.StatusRunning)
			require.Equal(t, id, j.ClaimedBy, "job %d", jid)
		}
		ps, _, err = c.Processes(ctx)
		require.NoError(t, err)
		require.Len(t, ps, 1)
		require.Len(t, ps[0].Running, 2)
		require.ElementsMatch(t, []int64{plain.ID, limited.ID}, []int64{ps[0].Running[0].ID, ps[0].Running[1].ID})

		// A clean stop deletes the row.
		release <- struct{}{}
		release <- struct{}{}
		stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		require.NoError(t, c.Stop(stopCtx))
		stopped = true
		ps, _, err = c.Processes(ctx)
		require.NoError(t, err)
		require.Empty(t, ps, "a clean Stop deregisters")
		require.Empty(t, c.ProcessID())
	})
}

// TestProcessDeadAndPruned: a process that stops heartbeating (its row
// written as a killed process left it) is DEAD once its heartbeat is older
// than the reap limit, listed with the RUNNING jobs it claimed — the jobs
// the reaper is about to return — and its row is pruned once older than
// ProcessRetention. A claim by no registered process leaves claimed_by
// NULL.
func TestProcessDeadAndPruned(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		c := quietClient(t, drv, lockstep.Config{
			HeartbeatInterval: 50 * time.Millisecond, ReapAfter: 400 * time.Millisecond,
			ProcessRetention: 1500 * time.Millisecond, DisableReaper: true, DisableRetention: true,
		})
		ex := drv.Executor()
		gone := &rowtype.ProcessRow{ID: "gone-host-4242-deadbeef", Host: "gone-host", PID: 4242, Version: "v0.0.0-test", Queues: "default=1", Workers: 1}
		require.NoError(t, ex.ProcessInsert(ctx, gone))

		_, err := c.Insert(ctx, procArgs{}, nil)
		require.NoError(t, err)
		_, err = c.Insert(ctx, procArgs{}, nil)
		require.NoError(t, err)
		claimed, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: lockstep.DefaultQueue, Max: 1, ProcessID: gone.ID})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.Equal(t, gone.ID, claimed[0].ClaimedBy)
		anon := claimOneFrom(t, ex, lockstep.DefaultQueue)
		j, err := c.Job(ctx, anon.ID)
		require.NoError(t, err)
		require.Empty(t, j.ClaimedBy, "a claim by no registered process")

		ps, _, err := c.Processes(ctx)
		require.NoError(t, err)
		require.Len(t, ps, 1)
		require.Equal(t, lockstep.ProcessLive, ps[0].State)

		// No heartbeat: DEAD once older than ReapAfter, its job to be reaped.
		eventually(t, 10*time.Second, "the silent process DEAD", func() bool {
			ps, _, err := c.Processes(ctx)
			require.NoError(t, err)
			return len(ps) == 1 && ps[0].State == lockstep.ProcessDead
		})
		ps, _, err = c.Processes(ctx)
		require.NoError(t, err)
		require.Greater(t, ps[0].HeartbeatAge, 400*time.Millisecond)
		require.Len(t, ps[0].Running, 1)
		require.Equal(t, claimed[0].ID, ps[0].Running[0].ID)

		// Not pruned while younger than ProcessRetention (a heartbeat
		// just now); then pruned.
		found, err := ex.ProcessHeartbeat(ctx, gone.ID)
		require.NoError(t, err)
		require.True(t, found)
		n, err := c.PruneProcesses(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
		eventually(t, 10*time.Second, "the dead process's row pruned", func() bool {
			n, err := c.PruneProcesses(ctx)
			require.NoError(t, err)
			return n == 1
		})
		ps, _, err = c.Processes(ctx)
		require.NoError(t, err)
		require.Empty(t, ps)

		// A heartbeat of a pruned row reports it missing.
		found, err = ex.ProcessHeartbeat(ctx, gone.ID)
		require.NoError(t, err)
		require.False(t, found)
	})
}
