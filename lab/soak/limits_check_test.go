package soak

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/rowtype"
)

const blocked = rowtype.StatusBlocked

// limitFixture adds to the consistent fixture jobs of the limited queues
// that pass every check: in the keyed queue, job 10 (key a) ran, job 11
// (key a) was blocked meanwhile, released and ran after it, job 12 (key
// b) ran alongside; in the sequence queue, job 20 then job 21 (key s),
// one after the other; in the rate-limited queue, jobs 30–34 of key r
// started within a second, job 35 a second after the first; job 40, in
// the global queue, was cancelled while it ran, and its worker's return
// set its finished_at.
func limitFixture() *fixture {
	f := newFixture()
	l := f.s.ledger
	t0 := at
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	exec := func(id int64, start, end int) {
		l.execs[ref{id, 1}] = execNote{pool: 0, outcome: outcomeOK, start: ms(start), end: ms(end)}
		l.execCount++
	}
	seq := int64(100)
	next := func() int64 { seq++; return seq }
	claim := func(id int64, start int) transition {
		return transition{Seq: next(), JobID: id, From: pending, To: running, Attempts: 1, StartedAt: ms(start), ChangedAt: ms(start)}
	}
	doneAt := func(id int64, end int) transition {
		return transition{Seq: next(), JobID: id, From: running, To: done, Attempts: 1, StartedAt: ms(0), FinishedAt: ms(end), ChangedAt: ms(end)}
	}
	add := func(j *rowtype.JobRow, trs ...transition) {
		if j.Status != cancelled {
			j.FinishedAt = at
		}
		f.jobs = append(f.jobs, j)
		f.audit[j.ID] = trs
		l.jobs[j.ID] = jobNote{mode: ModeOK}
	}
	add(&rowtype.JobRow{ID: 10, Queue: queueKeyed, LimitKey: "a", Status: done, Attempts: 1}, claim(10, 0), doneAt(10, 100))
	exec(10, 1, 99)
	add(&rowtype.JobRow{ID: 11, Queue: queueKeyed, LimitKey: "a", Status: done, Attempts: 1},
		transition{Seq: next(), From: pending, To: blocked}, transition{Seq: next(), From: blocked, To: pending}, claim(11, 110), doneAt(11, 200))
	exec(11, 111, 199)
	add(&rowtype.JobRow{ID: 12, Queue: queueKeyed, LimitKey: "b", Status: done, Attempts: 1}, claim(12, 0), doneAt(12, 100))
	exec(12, 2, 98)
	add(&rowtype.JobRow{ID: 20, Queue: queueSeq, LimitKey: "s", Status: done, Attempts: 1}, claim(20, 0), doneAt(20, 100))
	exec(20, 1, 99)
	add(&rowtype.JobRow{ID: 21, Queue: queueSeq, LimitKey: "s", Status: done, Attempts: 1}, claim(21, 120), doneAt(21, 200))
	exec(21, 121, 199)
	for i, start := range []int{0, 100, 200, 300, 999, 1000} {
		id := int64(30 + i)
		add(&rowtype.JobRow{ID: id, Queue: queueRate, LimitKey: "r", Status: done, Attempts: 1}, claim(id, start), doneAt(id, start+10))
		exec(id, start+1, start+9)
	}
	add(&rowtype.JobRow{ID: 40, Queue: queueGlobal, Status: cancelled, Attempts: 1, FinishedAt: ms(60)},
		claim(40, 0), transition{Seq: next(), From: running, To: cancelled, Attempts: 1, StartedAt: ms(0), ChangedAt: ms(50)})
	exec(40, 1, 55)
	l.cancelJobTried(40)
	return f
}

func TestLimitChecksPassAConsistentOutcome(t *testing.T) {
	res := limitFixture().check()
	require.Zero(t, res.ProblemCount, "%v", res.Problems)
	require.Equal(t, 1, res.Blocks)
	require.Equal(t, 1, res.Unblocks)
	byName := map[string]LimitedQueue{}
	for _, q := range res.Limited {
		byName[q.Queue] = q
	}
	require.Equal(t, 3, byName[queueKeyed].Jobs)
	require.Equal(t, 1, byName[queueKeyed].MaxOverlap, "one execution of a key at a time")
	require.Equal(t, 5, byName[queueRate].MaxStartsPerPeriod, "starts at 0, 100, 200, 300, 999 ms; the one at 1000 ms is a period after the first")
	require.Equal(t, 1, byName[queueGlobal].CancelledRunning)
}

// TestLimitChecksCatchFaults breaks the limited fixture one way at a time.
func TestLimitChecksCatchFaults(t *testing.T) {
	ms := func(n int) time.Time { return at.Add(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		name  string
		fault func(f *fixture)
		want  string
	}{
		{"two executions of a key at limit 1", func(f *fixture) {
			f.s.ledger.execs[ref{11, 1}] = execNote{outcome: outcomeOK, start: ms(50), end: ms(150)}
		}, `key "a" of queue soak_limit_key (limit 1) had 2 executions at once`},
		{"a sequence out of order (ledger)", func(f *fixture) {
			f.s.ledger.execs[ref{21, 1}] = execNote{outcome: outcomeOK, start: ms(90), end: ms(150)}
		}, "before job 20's execution ended"},
		{"a sequence out of order (audit)", func(f *fixture) { f.audit[21][0].ChangedAt = ms(90) }, "was first claimed at"},
		{"a rate exceeded", func(f *fixture) { f.audit[35][0].StartedAt = ms(998) }, `key "r" of queue soak_limit_rate started 6 jobs`},
		{"a BLOCKED job claimed", func(f *fixture) {
			f.audit[11] = append(f.audit[11][:1], f.audit[11][2:]...)
			f.audit[11][1].From = blocked
		}, "illegal change BLOCKED→RUNNING"},
		{"a block that takes an attempt", func(f *fixture) { f.audit[11][0].Attempts = 1 }, "block changed attempts from 0 to 1"},
		{"a cancelled job's slot never released", func(f *fixture) { f.jobs[len(f.jobs)-1].FinishedAt = time.Time{} }, "its slot was never released"},
		{"a DONE job without finished_at", func(f *fixture) { f.jobs[0].FinishedAt = time.Time{} }, "finished_at is not set"},
		{"a cancel of a RUNNING job that set finished_at", func(f *fixture) {
			trs := f.audit[40]
			trs[len(trs)-1].FinishedAt = ms(50)
		}, "slot must stay held"},
		{"a job left BLOCKED", func(f *fixture) {
			f.jobs[4].Status, f.jobs[4].Attempts = blocked, 0 // job 11
			f.audit[11] = f.audit[11][:1]
			delete(f.s.ledger.execs, ref{11, 1})
		}, "still BLOCKED after the drain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := limitFixture()
			tc.fault(f)
			res := f.check()
			require.True(t, containsProblem(res.Problems, tc.want), "want a problem with %q, got %v", tc.want, res.Problems)
		})
	}
}

// TestSamplerJudgesLimits feeds the sampler's judge readings at and above
// the limits: RUNNING alone above, and RUNNING with cancelled jobs still
// holding their slots above, are both violations; at the limit is not.
func TestSamplerJudgesLimits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		counts map[sampleRow]int
		want   string
	}{
		{"at the limits", map[sampleRow]int{
			{queueGlobal, "", running}: globalLimit, {queueKeyed, "a", running}: 1, {queueKeyed, "b", "CANCELLING"}: 1,
			{queueSeq, "s", running}: 1, {queueSeq, "s", blocked}: 4, {queueRate, "r", running}: 9,
		}, ""},
		{"global above", map[sampleRow]int{{queueGlobal, "", running}: globalLimit + 1}, "has 4 jobs RUNNING, above its limit of 3"},
		{"global with cancelling above", map[sampleRow]int{{queueGlobal, "", running}: globalLimit, {queueGlobal, "", "CANCELLING"}: 1},
			"and 1 cancelled ones still holding slots, above its limit of 3"},
		{"key above", map[sampleRow]int{{queueKeyed, "a", running}: 2}, `key "a" of queue soak_limit_key has 2 jobs RUNNING`},
		{"sequence above", map[sampleRow]int{{queueSeq, "s", running}: 2}, `key "s" of queue soak_limit_seq has 2 jobs RUNNING`},
		{"key with cancelling above", map[sampleRow]int{{queueKeyed, "a", running}: 1, {queueKeyed, "a", "CANCELLING"}: 1}, "cancelled ones still holding slots"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newFixture().s
			s.judgeSample(tc.counts)
			if tc.want == "" {
				require.Zero(t, s.ledger.problemCount, "%v", s.ledger.problems)
				require.Equal(t, 1, s.limitStats.atLimit[queueGlobal])
				require.Equal(t, 1, s.limitStats.atLimit[queueKeyed])
				require.Equal(t, int64(4), s.limitedQueue(queueSeq).open.Load(), "backlog: PENDING and BLOCKED")
				return
			}
			require.Equal(t, 1, s.limitStats.violations)
			require.True(t, containsProblem(s.ledger.problems, tc.want), "want %q, got %v", tc.want, s.ledger.problems)
		})
	}
}

func TestMaxStartsAndOverlap(t *testing.T) {
	ms := func(n int) time.Time { return at.Add(time.Duration(n) * time.Millisecond) }
	n, _ := maxStarts([]time.Time{ms(0), ms(500), ms(1000), ms(1000), ms(1499), ms(1500)}, time.Second)
	require.Equal(t, 4, n, "(500, 1500]: 1000, 1000, 1499, 1500")
	got, refs := maxOverlap([]interval{{ref{1, 1}, ms(0), ms(10)}, {ref{2, 1}, ms(10), ms(20)}, {ref{3, 1}, ms(5), ms(15)}})
	require.Equal(t, 2, got, "touching is not overlapping")
	require.Len(t, refs, 2)
}
