package soak_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/drivertest"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/lab/soak"
)

// TestReviveAfterTwoFailures is the smallest form of what the soak's
// callback check found (fixed: a job a failure cancelled is reconsidered
// whichever of its dependencies is retried): two steps of a run FAILED before either was
// retried. The success callback was cancelled by the first failure (its
// blocked_by names it); retrying the first leaves it cancelled, rightly,
// since the second is still FAILED; retrying the second does not bring it
// back either, because revive only revives a job whose blocked_by is the
// job being retried. Both steps then end DONE and the success callback
// stays CANCELLED. The same holds for any step with two failed
// dependencies, and for one whose blocker was itself cancelled by a failure
// further up and is revived (the second part: x → b → j ← c).
func TestReviveAfterTwoFailures(t *testing.T) {
	ctx := context.Background()
	drv, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "revive.db"))
	require.NoError(t, err)
	defer drv.Close()
	drivertest.Migrate(t, drv)
	c, err := lockstep.NewClient(drv, lockstep.Config{})
	require.NoError(t, err)

	run, _, err := c.InsertRun(ctx, "two-failures", &lockstep.RunOpts{Callbacks: []lockstep.RunCallback{
		{On: lockstep.CallbackOnSuccess, Args: soak.CallbackData{On: lockstep.CallbackOnSuccess}, Opts: &lockstep.InsertOpts{Queue: "callbacks"}},
	}},
		lockstep.InsertManyParams{Args: soak.FlowArgs{Key: "a"}, Key: "a"},
		lockstep.InsertManyParams{Args: soak.FlowArgs{Key: "b"}, Key: "b"},
		lockstep.InsertManyParams{Args: soak.FlowArgs{Key: "c"}, Key: "c", DependsOn: []string{"a", "b"}},
	)
	require.NoError(t, err)

	exec := drv.Executor()
	finishAll := func(status lockstep.JobStatus) []int64 {
		claimed, err := exec.JobClaim(ctx, &driver.JobClaimParams{Queue: lockstep.DefaultQueue, Max: 10})
		require.NoError(t, err)
		var ids []int64
		for _, j := range claimed {
			p := &driver.JobFinishParams{ID: j.ID, Attempt: j.Attempts, Status: status, RunID: j.RunID, Dependents: j.Dependents}
			if status == lockstep.StatusFailed {
				p.Error = "failed on purpose"
			}
			ok, err := exec.JobFinish(ctx, p)
			require.NoError(t, err)
			require.True(t, ok)
			ids = append(ids, j.ID)
		}
		return ids
	}
	failed := finishAll(lockstep.StatusFailed)
	require.Len(t, failed, 2, "a and b")
	for _, id := range failed {
		ok, err := c.RetryJob(ctx, id)
		require.NoError(t, err)
		require.True(t, ok)
	}
	require.Len(t, finishAll(lockstep.StatusDone), 2, "a and b, retried")
	require.Len(t, finishAll(lockstep.StatusDone), 1, "c, which both cancelled")

	jobs, err := c.Jobs(ctx, lockstep.JobListParams{RunID: run.ID, Limit: 10})
	require.NoError(t, err)
	for _, j := range jobs {
		if j.Callback != "" {
			require.Equal(t, lockstep.StatusPending, j.Status, "every step is DONE: the success callback must have fired (%s)", j.LastError)
		}
	}

	// The cascade: x fails and cancels b, b cancels j; c fails too.
	// Retrying x revives b, j stays (c is FAILED); retrying c leaves j
	// CANCELLED, since its blocked_by is b.
	run, res, err := c.InsertRun(ctx, "cascade", nil,
		lockstep.InsertManyParams{Args: soak.FlowArgs{Key: "x"}, Key: "x"},
		lockstep.InsertManyParams{Args: soak.FlowArgs{Key: "b"}, Key: "b", DependsOn: []string{"x"}},
		lockstep.InsertManyParams{Args: soak.FlowArgs{Key: "c"}, Key: "c"},
		lockstep.InsertManyParams{Args: soak.FlowArgs{Key: "j"}, Key: "j", DependsOn: []string{"b", "c"}},
	)
	require.NoError(t, err)
	failed = finishAll(lockstep.StatusFailed)
	require.Len(t, failed, 2, "x and c")
	for _, id := range failed {
		ok, err := c.RetryJob(ctx, id)
		require.NoError(t, err)
		require.True(t, ok)
	}
	require.Len(t, finishAll(lockstep.StatusDone), 2, "x and c, retried")
	require.Len(t, finishAll(lockstep.StatusDone), 1, "b")
	j, err := c.Job(ctx, res[3].ID)
	require.NoError(t, err)
	require.Equal(t, lockstep.StatusPending, j.Status, "every dependency of j is DONE (%s; run %d)", j.LastError, run.ID)
}
