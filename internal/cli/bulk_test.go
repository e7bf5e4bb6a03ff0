package cli

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// TestCLIJobsBulk: 'jobs retry|cancel|delete' print the preview and change
// nothing without --yes, then do it; ids and filters select the jobs; bad
// flags are refused in the user's words.
func TestCLIJobsBulk(t *testing.T) {
	forEachDialect(t, func(t *testing.T, l *lockstepCLI) {
		var ids []int64
		for range 6 {
			ids = append(ids, l.enqueue("send", "--queue", "mail"))
		}
		keep := l.enqueue("other", "--queue", "mail")
		// The six send jobs FAILED; the other stays PENDING.
		ex := openCLIDatabase(t, l).Executor()
		ctx := context.Background()
		claimed, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "mail", Max: 6})
		require.NoError(t, err)
		require.Len(t, claimed, 6)
		for _, j := range claimed {
			_, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: j.ID, Attempt: j.Attempts, Status: rowtype.StatusFailed, Error: "smtp down"})
			require.NoError(t, err)
		}

		require.Equal(t, "6 jobs match: retry would apply to those that are FAILED.\nnothing changed: run again with --yes to retry them\n",
			l.OK("jobs", "retry", "--kind", "send", "--since", "1h"))
		// The failed (dead) view is the FAILED jobs: retry and delete take
		// it, cancel does not apply to them.
		var preview bulkOut
		for _, action := range []string{"retry", "delete"} {
			l.json(&preview, "jobs", action, "--view", "dead", "--queue", "mail")
			require.Equal(t, bulkOut{Action: action, Preview: true, Selected: 6}, preview, action)
		}
		require.Equal(t, "lockstep: jobs cancel applies to WAITING, PENDING, BLOCKED or RUNNING jobs, not FAILED", l.Fail("jobs", "cancel", "--view", "failed"))
		require.Equal(t, "FAILED", string(l.job(ids[0]).Status))
		require.Equal(t, "6 jobs retried in 3 batches; 0 skipped (no longer FAILED)\n",
			l.OK("jobs", "retry", "--kind", "send", "--since", "1h", "--batch", "2", "--yes"))
		for _, id := range ids {
			require.Equal(t, "PENDING", string(l.job(id).Status))
		}

		var out bulkOut
		l.json(&out, "jobs", "cancel", "--id", itoa(ids[0])+","+itoa(ids[1]), "--id", itoa(keep), "--yes")
		require.Equal(t, bulkOut{Action: "cancel", Selected: 3, Matched: 3, Changed: 3, Batches: 1}, out)
		require.Equal(t, "CANCELLED", string(l.job(keep).Status))

		l.json(&out, "jobs", "delete", "--status", "cancelled", "--queue", "mail")
		require.Equal(t, bulkOut{Action: "delete", Preview: true, Selected: 3}, out)
		require.Equal(t, "3 jobs deleted in 1 batches; 0 skipped (no longer DONE, FAILED or CANCELLED)\n",
			l.OK("jobs", "delete", "--status", "cancelled", "--queue", "mail", "--yes"))
		require.Equal(t, "lockstep: job "+itoa(keep)+" not found", l.Fail("jobs", "show", itoa(keep)))

		require.Equal(t, "lockstep: jobs retry applies to FAILED jobs, not PENDING", l.Fail("jobs", "retry", "--status", "pending"))
		require.Equal(t, "lockstep: --batch must be 1 to 5000, got 0", l.Fail("jobs", "cancel", "--batch", "0"))
		require.Equal(t, `lockstep: invalid job id "x": want a positive integer`, l.Fail("jobs", "delete", "--id", "x"))
		require.Equal(t, `lockstep: unknown --view "later": use scheduled, retrying or failed (also dead)`, l.Fail("jobs", "cancel", "--view", "later"))
		require.Equal(t, "lockstep: --since selects jobs by when they finished; jobs cancel applies to live jobs, which have not", l.Fail("jobs", "cancel", "--since", "1h"))
	})
}
