package soak

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-queue/lockstep/rowtype"

	"github.com/stretchr/testify/require"
)

// fixture is a tiny soak outcome that passes every check: job 1 ran once
// and is DONE; job 2 was abandoned by the dead worker, reaped, and then
// done at attempt 2; job 3 was cancelled while pending by CancelJob.
type fixture struct {
	s      *soak
	jobs   []*rowtype.JobRow
	audit  map[int64][]transition
	before deadlockReading
	after  deadlockReading
}

const (
	pending   = rowtype.StatusPending
	running   = rowtype.StatusRunning
	done      = rowtype.StatusDone
	failed    = rowtype.StatusFailed
	cancelled = rowtype.StatusCancelled
)

// at is every time the fixture's rows and changes carry.
var at = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func newFixture() *fixture {
	s := newSoak(Config{Logger: slog.New(slog.DiscardHandler)})
	l := s.ledger
	l.enqueued([]int64{1, 2, 3}, []Mode{ModeOK, ModeOK, ModeSlow}, 0)
	l.beginExec(1, 1, 0)
	l.endExec(1, 1, outcomeOK)
	l.deadClaimed([]*rowtype.JobRow{{ID: 2, Attempts: 1}})
	l.beginExec(2, 2, 1)
	l.endExec(2, 2, outcomeOK)
	l.staleFinish(ref{2, 1}, done, false)
	l.cancelJobTried(3)
	l.cancelJobApplied(3)
	reap := transition{Seq: 4, From: running, To: pending, Attempts: 1, Errored: true, LastError: reapMarker + ": no heartbeat for over 3s"}
	claim := func(seq int64, attempt int) transition {
		return transition{Seq: seq, From: pending, To: running, Attempts: attempt, StartedAt: at, ChangedAt: at}
	}
	return &fixture{
		s: s,
		jobs: []*rowtype.JobRow{
			{ID: 1, Status: done, Attempts: 1, FinishedAt: at},
			{ID: 2, Status: done, Attempts: 2, FinishedAt: at},
			{ID: 3, Status: cancelled, Attempts: 0, FinishedAt: at},
		},
		audit: map[int64][]transition{
			1: {claim(1, 1), {Seq: 2, From: running, To: done, Attempts: 1, StartedAt: at, FinishedAt: at}},
			2: {claim(3, 1), reap, claim(5, 2), {Seq: 6, From: running, To: done, Attempts: 2, StartedAt: at, FinishedAt: at}},
			3: {{Seq: 7, From: pending, To: cancelled, FinishedAt: at}},
		},
		before: deadlockReading{counted: true, value: 5},
		after:  deadlockReading{counted: true, value: 5},
	}
}

func (f *fixture) check() *Result {
	res := &Result{}
	f.s.check(res, f.jobs, f.audit, f.before, f.after)
	return res
}

func TestCheckPassesAConsistentOutcome(t *testing.T) {
	res := newFixture().check()
	require.Zero(t, res.ProblemCount, "%v", res.Problems)
	require.Equal(t, 2, res.Done)
	require.Equal(t, 1, res.Cancelled)
	require.Equal(t, 1, res.Reaps)
	require.Zero(t, res.LiveReaps)
	require.Equal(t, 3, res.Claims)
	require.Equal(t, 1, res.StaleFinishesRefused)
	require.NotNil(t, res.Deadlocks)
	require.Zero(t, *res.Deadlocks)
}

// TestCheckCatchesFaults breaks the consistent outcome one way at a time:
// each fault must be reported, or the soak could pass a broken queue.
func TestCheckCatchesFaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(f *fixture)
		want  string
		check func(t *testing.T, res *Result)
	}{
		{"finished twice", func(f *fixture) {
			f.audit[1] = append(f.audit[1], transition{From: done, To: cancelled, Attempts: 1})
			f.jobs[0].Status = cancelled
		}, "entered a terminal status 2 times", func(t *testing.T, res *Result) { require.Equal(t, 1, res.DoubleFinished) }},
		{"lost", func(f *fixture) { f.jobs = f.jobs[:2] }, "job 3 was enqueued and is gone",
			func(t *testing.T, res *Result) { require.Equal(t, 1, res.Lost) }},
		{"left open", func(f *fixture) {
			f.jobs[2].Status = pending
			f.audit[3] = nil
		}, "still PENDING after the drain", func(t *testing.T, res *Result) { require.Equal(t, 1, res.Lost) }},
		{"done without a successful execution", func(f *fixture) { f.s.ledger.endExec(1, 1, outcomeError) },
			"no worker succeeded at that attempt", nil},
		{"attempt executed twice", func(f *fixture) { f.s.ledger.beginExec(1, 1, 2) }, "executed twice", nil},
		{"stale finish written", func(f *fixture) { f.s.ledger.staleFinish(ref{2, 1}, done, true) }, "was written after", nil},
		{"abandoned claim finished", func(f *fixture) {
			f.audit[2] = []transition{{From: pending, To: running, Attempts: 1}, {From: running, To: done, Attempts: 1}}
			f.jobs[1].Attempts = 1
		}, "abandoned by the dead worker, ended by done", nil},
		{"claim skipped an attempt", func(f *fixture) { f.audit[1][0].Attempts, f.audit[1][1].Attempts, f.jobs[0].Attempts = 2, 2, 2 },
			"claimed at attempt 2 after attempt 0", nil},
		{"cancelled by no one", func(f *fixture) { delete(f.s.ledger.jobCancelTried, 3) }, "cancelled neither it nor its run", nil},
		{"audit disagrees with the row", func(f *fixture) { f.jobs[0].Status = failed }, "but its audit ends at DONE", nil},
		{"unexplained failure", func(f *fixture) {
			f.audit[1][1] = transition{From: running, To: failed, Attempts: 1, Errored: true, LastError: "boom"}
			f.jobs[0].Status = failed
		}, "(ok) FAILED at attempt 1", nil},
		{"deadlock counted", func(f *fixture) { f.after.value = 7 }, "counted 2 deadlocks", nil},
		{"client error logged", func(f *fixture) { f.s.logger.Error("lockstep: claim failed", "err", "1213") }, "claim failed", nil},
		{"claim nobody had", func(f *fixture) { delete(f.s.ledger.execs, ref{1, 1}) }, "no worker ran it", nil},
		{"phantom job", func(f *fixture) { f.jobs = append(f.jobs, &rowtype.JobRow{ID: 9, Status: done}) }, "never enqueued it", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			tc.fault(f)
			res := f.check()
			require.Positive(t, res.ProblemCount)
			require.True(t, containsProblem(res.Problems, tc.want), "want a problem with %q, got %v", tc.want, res.Problems)
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
}

func containsProblem(problems []string, want string) bool {
	for _, p := range problems {
		if strings.Contains(p, want) {
			return true
		}
	}
	return false
}
