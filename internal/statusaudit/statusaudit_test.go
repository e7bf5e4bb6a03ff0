package statusaudit_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/drivertest"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/internal/statusaudit"
	"github.com/lockstep-queue/lockstep/rowtype"
)

type keyed struct{}

func (keyed) Kind() string { return "audit_keyed" }

// TestAuditRecordsBlockedAndTimes runs a limited queue's changes through
// the trigger on SQLite: a claim that blocks the second job of a key at
// limit 1, a cancel of the RUNNING one (finished_at left NULL: its slot is
// held until its worker returns), the release that makes the BLOCKED job
// PENDING, and the cancel of a BLOCKED job. Every change is allowed, adds
// the attempts Attempts says, and has the times TimesProblem expects.
func TestAuditRecordsBlockedAndTimes(t *testing.T) {
	ctx := context.Background()
	drv, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "audit.db"))
	require.NoError(t, err)
	defer drv.Close()
	drivertest.Migrate(t, drv)
	require.NoError(t, statusaudit.Install(ctx, drv))
	c, err := lockstep.NewClient(drv, lockstep.Config{})
	require.NoError(t, err)
	lim := lockstep.QueueLimits{KeyConcurrency: 1}
	require.NoError(t, c.SetQueueLimits(ctx, "q", lim))
	var ids []int64
	for range 3 {
		res, err := c.Insert(ctx, keyed{}, &lockstep.InsertOpts{Queue: "q", LimitKey: "k"})
		require.NoError(t, err)
		ids = append(ids, res.ID)
	}
	claim := func() *driver.LimitedClaim {
		got, err := drv.Executor().JobClaimLimited(ctx, &driver.JobClaimParams{Queue: "q", Max: 3, Limits: lim, Grace: time.Minute})
		require.NoError(t, err)
		return got
	}
	// The first claim meets a key without its row: it takes nothing of
	// the key's and creates the row after its commit.
	require.Empty(t, claim().Jobs)
	got := claim()
	require.Len(t, got.Jobs, 1)
	require.Equal(t, ids[0], got.Jobs[0].ID)
	require.Equal(t, 2, got.Blocked)

	ok, err := c.CancelJob(ctx, ids[2]) // BLOCKED → CANCELLED
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = c.CancelJob(ctx, ids[0]) // RUNNING → CANCELLED; releases ids[1]
	require.NoError(t, err)
	require.True(t, ok)
	j, err := c.Job(ctx, ids[1])
	require.NoError(t, err)
	require.Equal(t, lockstep.StatusPending, j.Status, "released by the cancel of the job that held its key")

	audit, n, err := statusaudit.Read(ctx, drv)
	require.NoError(t, err)
	require.Equal(t, 6, n)
	type change struct{ from, to rowtype.JobStatus }
	want := map[int64][]change{
		ids[0]: {{"PENDING", "RUNNING"}, {"RUNNING", "CANCELLED"}},
		ids[1]: {{"PENDING", "BLOCKED"}, {"BLOCKED", "PENDING"}},
		ids[2]: {{"PENDING", "BLOCKED"}, {"BLOCKED", "CANCELLED"}},
	}
	for id, changes := range want {
		require.Len(t, audit[id], len(changes), "job %d", id)
		attempts := 0
		for i, tr := range audit[id] {
			require.Equal(t, changes[i], change{tr.From, tr.To}, "job %d change %d", id, i)
			require.True(t, statusaudit.Allowed(tr.From, tr.To))
			attempts += statusaudit.Attempts(tr.From, tr.To)
			require.Equal(t, attempts, tr.Attempts, "job %d change %d", id, i)
			require.Empty(t, statusaudit.TimesProblem(tr), "job %d change %d", id, i)
			require.False(t, tr.ChangedAt.IsZero())
		}
	}
	require.True(t, audit[ids[0]][1].FinishedAt.IsZero(), "cancelled while RUNNING: finished_at waits for the worker")
	require.Equal(t, got.Jobs[0].StartedAt, audit[ids[0]][0].StartedAt, "the claim's clock")

	// The worker returns: job.release sets finished_at, no status changes.
	require.NoError(t, drv.Executor().JobRelease(ctx, driver.JobRef{ID: ids[0], Attempt: 1, Queue: "q", LimitKey: "k"}))
	j, err = c.Job(ctx, ids[0])
	require.NoError(t, err)
	require.False(t, j.FinishedAt.IsZero())
	_, n, err = statusaudit.Read(ctx, drv)
	require.NoError(t, err)
	require.Equal(t, 6, n, "a release is no change of status")
}

// TestTimesProblemCatchesEachFault: each rule of TimesProblem, broken.
func TestTimesProblemCatchesEachFault(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		tr   statusaudit.Transition
		want string
	}{
		{statusaudit.Transition{From: "RUNNING", To: "PENDING", FinishedAt: at}, "not final"},
		{statusaudit.Transition{From: "RUNNING", To: "DONE"}, "did not set finished_at"},
		{statusaudit.Transition{From: "RUNNING", To: "CANCELLED", FinishedAt: at}, "slot must stay held"},
		{statusaudit.Transition{From: "BLOCKED", To: "CANCELLED"}, "did not set finished_at"},
		{statusaudit.Transition{From: "PENDING", To: "RUNNING"}, "started_at"},
	} {
		require.Contains(t, statusaudit.TimesProblem(tc.tr), tc.want, "%s→%s", tc.tr.From, tc.tr.To)
	}
	for _, bad := range [][2]rowtype.JobStatus{{"BLOCKED", "RUNNING"}, {"RUNNING", "BLOCKED"}, {"DONE", "PENDING"}, {"BLOCKED", "DONE"}, {"CANCELLED", "BLOCKED"}} {
		require.False(t, statusaudit.Allowed(bad[0], bad[1]), "%s→%s", bad[0], bad[1])
	}
}
