package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/statusaudit"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// TestCheckerFindsEachBrokenPromise feeds the checker one job's records,
// first sound and then broken one way at a time, and requires it to name
// each breakage (the database-backed half is cmd/lockstep's
// TestKill9MidJob).
func TestCheckerFindsEachBrokenPromise(t *testing.T) {
	const (
		pending   = rowtype.StatusPending
		running   = rowtype.StatusRunning
		done      = rowtype.StatusDone
		cancelled = rowtype.StatusCancelled
		blocked   = rowtype.StatusBlocked
	)
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	sound := func() (jobState, []statusaudit.Transition, []execution) {
		return jobState{status: done, attempts: 2},
			[]statusaudit.Transition{
				{Seq: 1, From: pending, To: running, Attempts: 1, StartedAt: at},
				{Seq: 2, From: running, To: pending, Attempts: 1, Errored: true, StartedAt: at},
				{Seq: 3, From: pending, To: running, Attempts: 2, StartedAt: at},
				{Seq: 4, From: running, To: done, Attempts: 2, StartedAt: at, FinishedAt: at},
			},
			[]execution{{attempt: 1, pid: 10}, {attempt: 2, pid: 20, complete: true}}
	}
	killed := map[int]bool{10: true}
	run := func(j jobState, trs []statusaudit.Transition, ex []execution, runCancelled bool) *Result {
		c := &checker{res: &Result{}}
		c.job(1, j, runCancelled, trs, ex, killed)
		return c.res
	}

	j, trs, ex := sound()
	res := run(j, trs, ex, false)
	require.Empty(t, res.Problems)
	require.Equal(t, 1, res.Reaps)
	require.Equal(t, 1, res.ReExecuted)

	for name, tc := range map[string]struct {
		breakIt func(j *jobState, trs *[]statusaudit.Transition, ex *[]execution)
		want    string
	}{
		"re-executed though its process lived": {func(_ *jobState, _ *[]statusaudit.Transition, ex *[]execution) { (*ex)[0].pid = 11 }, "never killed"},
		"final state written twice": {func(_ *jobState, trs *[]statusaudit.Transition, _ *[]execution) {
			*trs = append(*trs, statusaudit.Transition{Seq: 5, From: done, To: done, Attempts: 2})
		}, "written 2 times"},
		"changed after it was final": {func(_ *jobState, trs *[]statusaudit.Transition, _ *[]execution) {
			*trs = append(*trs, statusaudit.Transition{Seq: 5, From: done, To: pending, Attempts: 2})
		}, "a final state"},
		"one attempt executed twice": {func(_ *jobState, _ *[]statusaudit.Transition, ex *[]execution) {
			*ex = append(*ex, execution{attempt: 2, pid: 30, complete: true})
		}, "executed twice"},
		"DONE but the work never completed": {func(_ *jobState, _ *[]statusaudit.Transition, ex *[]execution) { (*ex)[1].complete = false }, "never completed"},
		"DONE but never started":            {func(_ *jobState, _ *[]statusaudit.Transition, ex *[]execution) { *ex = (*ex)[:1] }, "never saw start"},
		"left RUNNING":                      {func(j *jobState, _ *[]statusaudit.Transition, _ *[]execution) { j.status = running }, "ended RUNNING"},
		"CANCELLED outside a cancelled run": {func(j *jobState, trs *[]statusaudit.Transition, _ *[]execution) {
			j.status = cancelled
			(*trs)[3].To = cancelled
		}, "its run was not cancelled"},
		"a BLOCKED job claimed": {func(_ *jobState, trs *[]statusaudit.Transition, _ *[]execution) {
			(*trs)[2].From = blocked
		}, "a change BLOCKED→RUNNING the queue never makes"},
		"a change out of sequence": {func(_ *jobState, trs *[]statusaudit.Transition, _ *[]execution) {
			*trs = append((*trs)[:1], (*trs)[2:]...)
		}, "but it was RUNNING"},
		"a block that takes an attempt": {func(_ *jobState, trs *[]statusaudit.Transition, _ *[]execution) {
			*trs = append([]statusaudit.Transition{{Seq: 0, From: pending, To: blocked, Attempts: 1}, {Seq: 0, From: blocked, To: pending, Attempts: 1}}, *trs...)
		}, "leaves it at attempt 1, after attempt 0"},
		"DONE without finished_at": {func(_ *jobState, trs *[]statusaudit.Transition, _ *[]execution) {
			(*trs)[3].FinishedAt = time.Time{}
		}, "did not set finished_at"},
	} {
		t.Run(name, func(t *testing.T) {
			j, trs, ex := sound()
			tc.breakIt(&j, &trs, &ex)
			res := run(j, trs, ex, false)
			require.NotEmpty(t, res.Problems)
			require.Contains(t, strings.Join(res.Problems, "\n"), tc.want)
		})
	}
}
