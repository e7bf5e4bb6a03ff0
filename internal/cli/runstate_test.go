package cli

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
)

// TestRunStates: a run has one word for what it is — ACTIVE, DONE,
// FAILED or CANCELLED — in `runs`, `runs show` and their JSON alike; and
// cancelling a run whose jobs have all ended is refused and changes
// nothing (it used to turn an 18/18 DONE run into CANCELLED).
func TestRunStates(t *testing.T) {
	forEachDialect(t, func(t *testing.T, l *lockstepCLI) {
		ctx := context.Background()
		ex := openCLIDatabase(t, l).Executor()
		// finish claims the queue's one PENDING job and ends it so.
		finish := func(queue string, st lockstep.JobStatus) {
			t.Helper()
			jobs, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: queue, Max: 1})
			require.NoError(t, err)
			require.Len(t, jobs, 1)
			ok, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: jobs[0].ID, Attempt: 1, Status: st, Error: "boom"})
			require.NoError(t, err)
			require.True(t, ok)
		}
		runOf := func(id int64) int64 { return l.job(id).RunID }

		doneRun := runOf(l.enqueue("thumb", "--queue", "d", "--new-run", "all-done"))
		l.enqueue("thumb", "--queue", "d", "--run", itoa(doneRun))
		finish("d", lockstep.StatusDone)
		finish("d", lockstep.StatusDone)

		failedRun := runOf(l.enqueue("thumb", "--queue", "f", "--new-run", "one-failed", "--max-attempts", "1"))
		l.enqueue("thumb", "--queue", "f", "--run", itoa(failedRun))
		finish("f", lockstep.StatusFailed)
		finish("f", lockstep.StatusDone)

		activeRun := runOf(l.enqueue("thumb", "--queue", "a", "--new-run", "half-way"))
		l.enqueue("thumb", "--queue", "a", "--run", itoa(activeRun))
		finish("a", lockstep.StatusDone)

		cancelledRun := runOf(l.enqueue("thumb", "--queue", "c", "--new-run", "stopped"))
		require.Equal(t, fmt.Sprintf("run %d (stopped) is CANCELLED; 1 of its jobs were cancelled\n", cancelledRun),
			l.OK("cancel", "run", itoa(cancelledRun)))

		want := map[int64]lockstep.RunState{
			doneRun: lockstep.RunStateDone, failedRun: lockstep.RunStateFailed,
			activeRun: lockstep.RunStateActive, cancelledRun: lockstep.RunStateCancelled,
		}
		var runs runsListOut
		l.json(&runs, "runs")
		require.Len(t, runs.Runs, 4)
		table := l.OK("runs")
		for _, r := range runs.Runs {
			require.Equal(t, want[r.ID], r.State, "run %d (%s)", r.ID, r.Name)
			require.Regexp(t, fmt.Sprintf(`(?m)^%d\s+%s\s+%s\s`, r.ID, r.Name, want[r.ID]), table)
			require.Regexp(t, fmt.Sprintf(`(?m)^status:\s+%s$`, want[r.ID]), l.OK("runs", "show", itoa(r.ID)))
		}
		require.NotContains(t, table, "COMPLETE")

		// A finished run keeps its history: the cancel is refused, with a
		// reason, and the run is what it was.
		for _, id := range []int64{doneRun, failedRun} {
			require.Equal(t, fmt.Sprintf("lockstep: cannot cancel run %d: it has finished (every job has ended), so there is nothing to cancel; it stays as it is (see: lockstep runs show %d)", id, id),
				l.Fail("cancel", "run", itoa(id)))
			run, err := ex.RunGet(ctx, id)
			require.NoError(t, err)
			require.Equal(t, lockstep.RunStatus("ACTIVE"), run.Status)
			require.Regexp(t, fmt.Sprintf(`(?m)^status:\s+%s$`, want[id]), l.OK("runs", "show", itoa(id)))
		}
		// A run with a job left is cancelled as before; a repeat changes
		// nothing and succeeds.
		require.Equal(t, fmt.Sprintf("run %d (half-way) is CANCELLED; 1 of its jobs were cancelled\n", activeRun),
			l.OK("cancel", "run", itoa(activeRun)))
		require.Equal(t, fmt.Sprintf("run %d (stopped) is CANCELLED; 0 of its jobs were cancelled\n", cancelledRun),
			l.OK("cancel", "run", itoa(cancelledRun)))
	})
}
