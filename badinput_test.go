package lockstep_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/migrate"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// The bad-input tests: each puts a few jobs in a fresh database (PENDING,
// scheduled, RUNNING, DONE, FAILED, in an active and a cancelled run),
// snapshots every row, feeds the bad input, requires the error, and
// requires every row to be as it was.

// existingArgs are the jobs already in the database.
type existingArgs struct {
	N    int    `json:"n"`
	Note string `json:"note"`
}

func (existingArgs) Kind() string { return "existing" }

// badInputFixture is the database's content before the bad input.
type badInputFixture struct {
	drv          driver.Driver
	c            *lockstep.Client // enqueues only; never started
	pending      int64
	running      int64
	done         int64
	failed       int64
	activeRun    int64
	cancelledRun int64
}

func newBadInputFixture(t *testing.T, drv driver.Driver) *badInputFixture {
	t.Helper()
	ctx := context.Background()
	c, err := lockstep.NewClient(drv, lockstep.Config{Logger: quietBadInputLogger()})
	require.NoError(t, err)
	f := &badInputFixture{drv: drv, c: c}
	pendingRes, err := c.Insert(ctx, existingArgs{N: 1, Note: "pending"}, nil)
	require.NoError(t, err)
	f.pending = pendingRes.ID
	_, err = c.Insert(ctx, existingArgs{N: 2, Note: "later"}, &lockstep.InsertOpts{Queue: "other", Priority: 5, Delay: time.Hour, MaxAttempts: 3})
	require.NoError(t, err)

	// RUNNING, DONE and FAILED through the driver's own claim and finish,
	// with no client running that would heartbeat or reap them.
	claim := func(queue string, note string, max int) int64 {
		idRes, err := c.Insert(ctx, existingArgs{N: 3, Note: note}, &lockstep.InsertOpts{Queue: queue, MaxAttempts: max})
		require.NoError(t, err)
		id := idRes.ID
		jobs, err := drv.Executor().JobClaim(ctx, &driver.JobClaimParams{Queue: queue, Max: 1})
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		require.Equal(t, id, jobs[0].ID)
		return id
	}
	f.running = claim("running", "running", 0)
	f.done = claim("finished", "done", 0)
	ok, err := drv.Executor().JobFinish(ctx, &driver.JobFinishParams{ID: f.done, Attempt: 1, Status: rowtype.StatusDone})
	require.NoError(t, err)
	require.True(t, ok)
	f.failed = claim("finished", "failed", 1)
	ok, err = drv.Executor().JobFinish(ctx, &driver.JobFinishParams{ID: f.failed, Attempt: 1, Status: rowtype.StatusFailed, Error: "it broke"})
	require.NoError(t, err)
	require.True(t, ok)

	run, _, err := c.InsertRun(ctx, "active", nil, lockstep.InsertManyParams{Args: existingArgs{N: 4}}, lockstep.InsertManyParams{Args: existingArgs{N: 5}})
	require.NoError(t, err)
	f.activeRun = run.ID
	gone, _, err := c.InsertRun(ctx, "cancelled", nil, lockstep.InsertManyParams{Args: existingArgs{N: 6}})
	require.NoError(t, err)
	_, err = c.CancelRun(ctx, gone.ID)
	require.NoError(t, err)
	f.cancelledRun = gone.ID

	for id, want := range map[int64]lockstep.JobStatus{f.pending: lockstep.StatusPending, f.running: lockstep.StatusRunning, f.done: lockstep.StatusDone, f.failed: lockstep.StatusFailed} {
		j, err := c.Job(ctx, id)
		require.NoError(t, err)
		require.Equal(t, want, j.Status)
	}
	return f
}

// requireInvalid checks an error from the enqueue path: present, classified
// as ErrInvalidJob, and saying what is wrong.
func requireInvalid(t *testing.T, err error, want string, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	require.ErrorIs(t, err, lockstep.ErrInvalidJob, msgAndArgs...)
	require.Contains(t, err.Error(), want, msgAndArgs...)
	require.NotContains(t, err.Error(), "\n", "one line: %q", err.Error())
}

func TestBadInputArgsNotJSON(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		f := newBadInputFixture(t, drv)
		before := testdb.TakeSnapshot(t, drv.DB())

		for _, bad := range []string{`{`, `{"a": 1,}`, ``, `nul`, `{"a":1} {"b":2}`, `NaN`, `'single'`, "{\"a\":\"\x00\"}"} {
			raw := lockstep.RawArgs{KindName: "raw", JSON: json.RawMessage(bad)}
			_, err := f.c.Insert(ctx, raw, nil)
			requireInvalid(t, err, "args are not valid JSON", "%q", bad)
			require.Contains(t, err.Error(), `encode args of kind "raw"`)
			var syn *json.SyntaxError
			require.ErrorAs(t, err, &syn, "%q: the syntax error says where", bad)

			// One bad job in a batch: none of the batch is inserted, and the
			// error names the job.
			_, err = f.c.InsertMany(ctx, []lockstep.InsertManyParams{{Args: existingArgs{N: 10}}, {Args: raw}, {Args: existingArgs{N: 11}}})
			requireInvalid(t, err, "job 1: encode args", "%q", bad)
			_, _, err = f.c.InsertRun(ctx, "never", nil, lockstep.InsertManyParams{Args: existingArgs{N: 12}}, lockstep.InsertManyParams{Args: raw})
			requireInvalid(t, err, "create run: job 1", "%q", bad)
			_, err = f.c.Insert(ctx, raw, &lockstep.InsertOpts{RunID: f.activeRun})
			requireInvalid(t, err, "not valid JSON", "%q", bad)
		}

		// Typed args that do not encode.
		_, err := f.c.Insert(ctx, lockstep.RawArgs{KindName: "nil_json"}, nil)
		requireInvalid(t, err, "args are not valid JSON")
		_, err = f.c.Insert(ctx, unencodableArgs{F: math.Inf(1)}, nil)
		requireInvalid(t, err, `encode args of kind "unencodable"`)
		var unsupported *json.UnsupportedValueError
		require.ErrorAs(t, err, &unsupported)
		_, err = f.c.Insert(ctx, nil, nil)
		requireInvalid(t, err, "nil args")
		var nilPtr *existingArgs
		_, err = f.c.Insert(ctx, nilPtr, nil)
		requireInvalid(t, err, "nil args (a nil *lockstep_test.existingArgs)")
		_, err = f.c.InsertMany(ctx, nil)
		requireInvalid(t, err, "no jobs given")

		// Inside the caller's transaction: refused before the statement, and
		// the transaction is still good to commit.
		tx, err := drv.DB().BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = f.c.InsertManyTx(ctx, tx, []lockstep.InsertManyParams{{Args: existingArgs{N: 13}}, {Args: lockstep.RawArgs{KindName: "raw", JSON: json.RawMessage(`[`)}}})
		requireInvalid(t, err, "job 1: encode args")
		require.NoError(t, tx.Commit())

		require.Equal(t, before, testdb.TakeSnapshot(t, drv.DB()), "no job or run changed")
	})
}

type unencodableArgs struct{ F float64 }

func (unencodableArgs) Kind() string { return "unencodable" }

func TestBadInputArgsTooLarge(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		f := newBadInputFixture(t, drv)
		small, err := lockstep.NewClient(drv, lockstep.Config{MaxArgsBytes: 64, Logger: quietBadInputLogger()})
		require.NoError(t, err)
		before := testdb.TakeSnapshot(t, drv.DB())

		// A JSON string of n bytes, quotes included.
		sized := func(n int) lockstep.RawArgs {
			return lockstep.RawArgs{KindName: "big", JSON: json.RawMessage(`"` + strings.Repeat("a", n-2) + `"`)}
		}
		_, err = small.Insert(ctx, sized(65), nil)
		requireInvalid(t, err, `args of kind "big" are 65 bytes; the limit is 64`)
		_, err = small.Insert(ctx, existingArgs{Note: strings.Repeat("x", 64)}, nil)
		requireInvalid(t, err, `args of kind "existing" are 81 bytes; the limit is 64`)

		// The default limit is 1 MiB.
		_, err = f.c.Insert(ctx, sized(1<<20+1), nil)
		requireInvalid(t, err, `args of kind "big" are 1048577 bytes; the limit is 1048576`)
		_, err = f.c.InsertMany(ctx, []lockstep.InsertManyParams{{Args: sized(10)}, {Args: sized(10)}, {Args: sized(2 << 20)}})
		requireInvalid(t, err, "job 2: args of kind \"big\" are 2097152 bytes; the limit is 1048576")
		_, err = f.c.Insert(ctx, sized(1<<20+1), &lockstep.InsertOpts{RunID: f.activeRun})
		requireInvalid(t, err, "the limit is 1048576")
		_, _, err = f.c.InsertRun(ctx, "too big", nil, lockstep.InsertManyParams{Args: sized(1<<20 + 1)})
		requireInvalid(t, err, "the limit is 1048576")

		// The limit cannot be negative.
		_, err = lockstep.NewClient(drv, lockstep.Config{MaxArgsBytes: -1})
		require.ErrorContains(t, err, "config: MaxArgsBytes must be positive, got -1")

		require.Equal(t, before, testdb.TakeSnapshot(t, drv.DB()), "no job or run changed")

		// At the limit, args are stored whole.
		atSmallRes, err := small.Insert(ctx, sized(64), nil)
		require.NoError(t, err)
		atSmall := atSmallRes.ID
		j, err := small.Job(ctx, atSmall)
		require.NoError(t, err)
		require.Len(t, string(j.Args), 64)
		atDefaultRes, err := f.c.Insert(ctx, sized(1<<20), nil)
		require.NoError(t, err)
		atDefault := atDefaultRes.ID
		j, err = f.c.Job(ctx, atDefault)
		require.NoError(t, err)
		require.Equal(t, 1<<20, len(j.Args))
		require.Equal(t, before, testdb.TakeSnapshot(t, drv.DB()).WithoutJobs(atSmall, atDefault), "only the new jobs were added")
	})
}

// An unknown kind is an attempt's error, retried with backoff: another
// process (or the next deploy) may have the worker. FAILED only once the
// attempts are used up.
func TestBadInputUnknownKind(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		f := newBadInputFixture(t, drv)
		nobody := lockstep.RawArgs{KindName: "nobody_here", JSON: json.RawMessage(`{"x":1}`)}
		retriedRes, err := f.c.Insert(ctx, nobody, &lockstep.InsertOpts{Queue: "unk", MaxAttempts: 5})
		require.NoError(t, err)
		retried := retriedRes.ID
		lastTryRes, err := f.c.Insert(ctx, nobody, &lockstep.InsertOpts{Queue: "unk", MaxAttempts: 1})
		require.NoError(t, err)
		lastTry := lastTryRes.ID
		// Not yet due: the client must leave it alone.
		_, err = f.c.Insert(ctx, nobody, &lockstep.InsertOpts{Queue: "unk", Delay: time.Hour})
		require.NoError(t, err)
		before := testdb.TakeSnapshot(t, drv.DB())

		ws := lockstep.NewWorkers()
		lockstep.AddWorker(ws, lockstep.WorkFunc(func(context.Context, *lockstep.Job[existingArgs]) error {
			return errors.New("the existing kind must not run: its jobs are on other queues")
		}))
		finished := make(chan lockstep.Event, 8)
		backoffs := make(chan int, 8)
		c, err := lockstep.NewClient(drv, lockstep.Config{
			Workers: ws, Logger: quietBadInputLogger(),
			Queues:       map[string]lockstep.QueueConfig{"unk": {MaxWorkers: 2}},
			PollInterval: 50 * time.Millisecond, MinPollInterval: 5 * time.Millisecond,
			DisableReaper: true,
			RetryBackoff: func(attempt int) time.Duration {
				backoffs <- attempt
				return time.Hour
			},
			OnEvent: func(e lockstep.Event) {
				if e.Kind == lockstep.EventJobFinished {
					finished <- e
				}
			},
		})
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx))
		started := time.Now()
		var events []lockstep.Event
		deadline := time.After(60 * time.Second)
		for len(events) < 2 {
			select {
			case e := <-finished:
				events = append(events, e)
			case <-deadline:
				t.Fatalf("the unknown-kind jobs were not finished after 60s: %+v", events)
			}
		}
		stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		require.NoError(t, c.Stop(stopCtx))
		require.Equal(t, 1, <-backoffs, "the default backoff path, for the first failure")

		statuses := map[lockstep.JobStatus]lockstep.Event{}
		for _, e := range events {
			require.Equal(t, "nobody_here", e.JobKind)
			require.False(t, e.Discarded)
			statuses[e.Status] = e
		}
		require.True(t, statuses[lockstep.StatusPending].Retry, "%+v", events)
		require.Contains(t, statuses, lockstep.StatusFailed)

		want := lockstep.ErrUnknownKind.Error() + ` "nobody_here"`
		j, err := c.Job(ctx, retried)
		require.NoError(t, err)
		require.Equal(t, lockstep.StatusPending, j.Status, "not failed: retried later")
		require.Equal(t, 1, j.Attempts)
		require.Contains(t, j.LastError, want)
		require.Len(t, j.Errors, 1)
		require.Equal(t, 1, j.Errors[0].Attempt)
		require.Contains(t, j.Errors[0].Error, want)
		require.True(t, j.AvailableAt.After(started.Add(50*time.Minute)), "backed off an hour: available at %s, started %s", j.AvailableAt, started)
		require.True(t, j.FinishedAt.IsZero())

		j, err = c.Job(ctx, lastTry)
		require.NoError(t, err)
		require.Equal(t, lockstep.StatusFailed, j.Status, "its only attempt is used up")
		require.Equal(t, 1, j.Attempts)
		require.Contains(t, j.LastError, want)
		require.Len(t, j.Errors, 1)

		require.Equal(t, before.WithoutJobs(retried, lastTry), testdb.TakeSnapshot(t, drv.DB()).WithoutJobs(retried, lastTry), "no other job or run changed")
	})
}

// badNames are refused as queue and as kind names; want gives the
// message for what ("queue" or "kind").
var badNames = []struct {
	name string
	want func(what string) string
}{
	{"", fixedName("%s name is empty")},
	{strings.Repeat("k", 129), fixedName("%s name is 129 bytes long; the limit is 128")},
	{strings.Repeat("é", 65), fixedName("%s name is 130 bytes long; the limit is 128")},
	{"a\x00b", controlName("a\x00b")},
	{"line\nbreak", controlName("line\nbreak")},
	{"tab\there", controlName("tab\there")},
	{"esc\x1b[31m", controlName("esc\x1b[31m")},
	{"del\x7f", controlName("del\x7f")},
	{"c1\u0085next", controlName("c1\u0085next")},
	{"csi\u009b", controlName("csi\u009b")},
	{"bad\xffutf8", controlName("bad\xffutf8")},
	{"cut\xc3", controlName("cut\xc3")},
}

func fixedName(format string) func(string) string {
	return func(what string) string { return fmt.Sprintf(format, what) }
}

func controlName(name string) func(string) string {
	return func(what string) string {
		return fmt.Sprintf("%s name %q contains a control or invalid character", what, name)
	}
}

type badKindArgs struct{}

func (badKindArgs) Kind() string { return "bad\nkind" }

func TestBadInputNames(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		f := newBadInputFixture(t, drv)
		before := testdb.TakeSnapshot(t, drv.DB())

		for _, bn := range badNames {
			_, err := f.c.Insert(ctx, lockstep.RawArgs{KindName: bn.name, JSON: json.RawMessage(`{}`)}, nil)
			requireInvalid(t, err, "enqueue: "+bn.want("kind"), "kind %q", bn.name)
			if bn.name != "" { // an empty queue is the default queue
				_, err = f.c.Insert(ctx, existingArgs{}, &lockstep.InsertOpts{Queue: bn.name})
				requireInvalid(t, err, "enqueue: "+bn.want("queue"), "queue %q", bn.name)
				_, err = f.c.InsertMany(ctx, []lockstep.InsertManyParams{{Args: existingArgs{}}, {Args: existingArgs{}, Opts: &lockstep.InsertOpts{Queue: bn.name}}})
				requireInvalid(t, err, "enqueue: job 1: "+bn.want("queue"), "queue %q", bn.name)
				_, _, err = f.c.InsertRun(ctx, "r", nil, lockstep.InsertManyParams{Args: existingArgs{}, Opts: &lockstep.InsertOpts{Queue: bn.name}})
				requireInvalid(t, err, "create run: "+bn.want("queue"), "queue %q", bn.name)
			}
			_, err = lockstep.NewClient(drv, lockstep.Config{Workers: lockstep.NewWorkers(), Queues: map[string]lockstep.QueueConfig{bn.name: {MaxWorkers: 1}}})
			require.ErrorContains(t, err, "lockstep: "+bn.want("queue"), "config queue %q", bn.name)
			err = lockstep.AddRawWorker(lockstep.NewWorkers(), bn.name, lockstep.WorkFunc(func(context.Context, *lockstep.Job[lockstep.RawArgs]) error { return nil }))
			require.ErrorContains(t, err, "add worker: "+bn.want("kind"), "worker kind %q", bn.name)
		}
		_, err := f.c.Insert(ctx, badKindArgs{}, nil)
		requireInvalid(t, err, `kind name "bad\nkind" contains a control or invalid character`)
		require.Error(t, lockstep.AddWorkerSafely(lockstep.NewWorkers(), lockstep.WorkFunc(func(context.Context, *lockstep.Job[badKindArgs]) error { return nil })))

		require.Equal(t, before, testdb.TakeSnapshot(t, drv.DB()), "no job or run changed")

		// At the limit: 128 bytes, in any script.
		long := strings.Repeat("é", 64)
		idRes, err := f.c.Insert(ctx, lockstep.RawArgs{KindName: long, JSON: json.RawMessage(`{}`)}, &lockstep.InsertOpts{Queue: long})
		require.NoError(t, err)
		id := idRes.ID
		j, err := f.c.Job(ctx, id)
		require.NoError(t, err)
		require.Equal(t, long, j.Kind)
		require.Equal(t, long, j.Queue)
	})
}

func TestBadInputOptions(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		f := newBadInputFixture(t, drv)
		before := testdb.TakeSnapshot(t, drv.DB())

		for _, tc := range []struct {
			name string
			opts lockstep.InsertOpts
			want string
		}{
			{"negative max attempts", lockstep.InsertOpts{MaxAttempts: -1}, "max attempts must be positive, got -1"},
			{"max attempts beyond the column", lockstep.InsertOpts{MaxAttempts: math.MaxInt32 + 1}, "max attempts 2147483648 is out of range [1, 2147483647]"},
			{"negative delay", lockstep.InsertOpts{Delay: -5 * time.Second}, "delay must not be negative, got -5s"},
			{"delay and time", lockstep.InsertOpts{Delay: time.Second, ScheduledAt: time.Now().Add(time.Hour)}, "give Delay or ScheduledAt, not both"},
			{"year 10000", lockstep.InsertOpts{ScheduledAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, "scheduled time 10000-01-01T00:00:00Z is outside the range the databases store, years 1000 to 9999"},
			{"year 999", lockstep.InsertOpts{ScheduledAt: time.Date(999, 12, 31, 0, 0, 0, 0, time.UTC)}, "is outside the range the databases store"},
			{"before year 0", lockstep.InsertOpts{ScheduledAt: time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC)}, "is outside the range the databases store"},
			{"priority above int16", lockstep.InsertOpts{Priority: math.MaxInt16 + 1}, "priority 32768 is out of range [-32768, 32767]"},
			{"priority below int16", lockstep.InsertOpts{Priority: math.MinInt16 - 1}, "priority -32769 is out of range [-32768, 32767]"},
			{"negative run id", lockstep.InsertOpts{RunID: -1}, "run id must be positive, got -1"},
		} {
			_, err := f.c.Insert(ctx, existingArgs{}, &tc.opts)
			requireInvalid(t, err, tc.want, tc.name)
			_, err = f.c.InsertMany(ctx, []lockstep.InsertManyParams{{Args: existingArgs{}}, {Args: existingArgs{}, Opts: &tc.opts}})
			requireInvalid(t, err, tc.want, tc.name)
			require.Contains(t, err.Error(), "enqueue: job 1: ", tc.name)
		}
		_, err := f.c.InsertMany(ctx, []lockstep.InsertManyParams{{Args: existingArgs{}, Opts: &lockstep.InsertOpts{RunID: f.activeRun}}, {Args: existingArgs{}}})
		requireInvalid(t, err, fmt.Sprintf("job 1: all jobs of one call must share one RunID (0 vs %d)", f.activeRun))
		_, _, err = f.c.InsertRun(ctx, "nested", nil, lockstep.InsertManyParams{Args: existingArgs{}, Opts: &lockstep.InsertOpts{RunID: f.activeRun}})
		requireInvalid(t, err, "jobs of a new run must not name a RunID")
		for _, name := range []string{"", strings.Repeat("r", 256), "bad\nrun", "bell\a", "c1\u0085"} {
			_, _, err = f.c.InsertRun(ctx, name, nil)
			requireInvalid(t, err, "create run: ")
		}

		// Runs that cannot take jobs: the database says so, and nothing is
		// inserted.
		_, err = f.c.Insert(ctx, existingArgs{}, &lockstep.InsertOpts{RunID: f.cancelledRun})
		require.ErrorIs(t, err, lockstep.ErrRunCancelled)
		require.NotErrorIs(t, err, lockstep.ErrInvalidJob)
		_, err = f.c.InsertMany(ctx, []lockstep.InsertManyParams{{Args: existingArgs{}, Opts: &lockstep.InsertOpts{RunID: f.cancelledRun}}, {Args: existingArgs{}, Opts: &lockstep.InsertOpts{RunID: f.cancelledRun}}})
		require.ErrorIs(t, err, lockstep.ErrRunCancelled)
		_, err = f.c.Insert(ctx, existingArgs{}, &lockstep.InsertOpts{RunID: f.cancelledRun + 1000})
		require.ErrorIs(t, err, lockstep.ErrNotFound)
		_, err = f.c.Insert(ctx, existingArgs{}, &lockstep.InsertOpts{RunID: math.MaxInt64})
		require.ErrorIs(t, err, lockstep.ErrNotFound)

		// The same limits on the client's defaults.
		for name, cfg := range map[string]lockstep.Config{
			"negative max attempts":  {MaxAttempts: -1},
			"max attempts too large": {MaxAttempts: math.MaxInt32 + 1},
			"negative job timeout":   {JobTimeout: -time.Second},
		} {
			_, err := lockstep.NewClient(drv, cfg)
			require.ErrorContains(t, err, "config: ", name)
		}

		require.Equal(t, before, testdb.TakeSnapshot(t, drv.DB()), "no job or run changed")

		// The edges that are allowed: 0 attempts is the default, the int16
		// bounds are priorities, the years 1000 and 9999 are times.
		for _, tc := range []struct {
			opts                lockstep.InsertOpts
			maxAttempts, prio   int
			availableAtYear     int
			availableAtIsFuture bool
		}{
			{lockstep.InsertOpts{MaxAttempts: 0}, 25, 0, 0, false},
			{lockstep.InsertOpts{MaxAttempts: math.MaxInt32, Priority: math.MaxInt16}, math.MaxInt32, math.MaxInt16, 0, false},
			{lockstep.InsertOpts{Priority: math.MinInt16, ScheduledAt: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)}, 25, math.MinInt16, 9999, true},
			{lockstep.InsertOpts{ScheduledAt: time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)}, 25, 0, 1000, false},
		} {
			idRes, err := f.c.Insert(ctx, existingArgs{}, &tc.opts)
			require.NoError(t, err, "%+v", tc.opts)
			id := idRes.ID
			j, err := f.c.Job(ctx, id)
			require.NoError(t, err)
			require.Equal(t, tc.maxAttempts, j.MaxAttempts)
			require.Equal(t, tc.prio, j.Priority)
			if tc.availableAtYear != 0 {
				require.Equal(t, tc.availableAtYear, j.AvailableAt.UTC().Year())
			}
			require.Equal(t, tc.availableAtIsFuture, j.AvailableAt.After(time.Now()), "%s", j.AvailableAt)
		}
	})
}

// A schema behind the binary (a migration short) or ahead of it (a
// migration it does not know) is refused by Start, and nothing changes.
func TestBadInputSchemaVersion(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		newBadInputFixture(t, drv)
		m, err := migrate.New(drv)
		require.NoError(t, err)
		latest := m.Latest()
		all := m.All()
		previous := all[len(all)-2].Version // numbers may skip one another dialect has
		ws := lockstep.NewWorkers()
		lockstep.AddWorker(ws, lockstep.WorkFunc(func(context.Context, *lockstep.Job[existingArgs]) error { return nil }))
		c, err := lockstep.NewClient(drv, lockstep.Config{Workers: ws, Logger: quietBadInputLogger(), PollInterval: 50 * time.Millisecond})
		require.NoError(t, err)

		// Behind.
		down, err := m.Down(ctx, 1)
		require.NoError(t, err)
		require.Len(t, down, 1)
		before := testdb.TakeSnapshot(t, drv.DB())
		err = c.Start(ctx)
		require.ErrorIs(t, err, lockstep.ErrSchemaVersion)
		require.ErrorContains(t, err, fmt.Sprintf("at migration %d, this binary needs %d: run `lockstep migrate up`", previous, latest))
		require.Equal(t, before, testdb.TakeSnapshot(t, drv.DB()), "a refused start changes nothing")
		_, err = m.Up(ctx)
		require.NoError(t, err)

		// Ahead: a migration from a newer binary.
		_, err = drv.DB().ExecContext(ctx, drv.Catalog().Get("migration.insert").SQL, latest+1, "from_a_newer_binary")
		require.NoError(t, err)
		before = testdb.TakeSnapshot(t, drv.DB())
		err = c.Start(ctx)
		require.ErrorIs(t, err, lockstep.ErrSchemaVersion)
		require.ErrorIs(t, err, migrate.ErrUnknownMigration)
		require.ErrorContains(t, err, fmt.Sprintf("migration %d", latest+1))
		require.ErrorContains(t, err, "run a newer lockstep")
		require.Equal(t, before, testdb.TakeSnapshot(t, drv.DB()), "a refused start changes nothing")
		// migrate up refuses it too.
		_, err = m.Up(ctx)
		require.ErrorIs(t, err, migrate.ErrUnknownMigration)
		require.ErrorContains(t, err, fmt.Sprintf("database has migration %d", latest+1))
		require.Equal(t, before, testdb.TakeSnapshot(t, drv.DB()))

		// At the right version the same client starts: the refusals left
		// nothing half-started.
		_, err = drv.DB().ExecContext(ctx, drv.Catalog().Get("migration.delete").SQL, latest+1)
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx))
		stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		require.NoError(t, c.Stop(stopCtx))
	})
}

// sqlMetaNames are queue and kind names that validName accepts and that
// would break (or exploit) SQL built by pasting them in.
var sqlMetaNames = []string{
	`'; DROP TABLE lockstep_jobs; --`,
	`" OR "1"="1`,
	"`backticked`; DELETE FROM lockstep_runs",
	`q' OR '1'='1`,
	`%`,
	`_`,
	`a%b_c`,
	`back\slash\`,
	`\'; --`,
	`-- comment`,
	`/* open`,
	`$1`,
	`?`,
	`{ids}`,
	`{rows}`,
	`;`,
	`é"'` + "`",
}

func TestBadInputSQLMetacharacters(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		f := newBadInputFixture(t, drv)
		before := testdb.TakeSnapshot(t, drv.DB())

		ids := map[string]int64{}
		var added []int64
		for _, name := range sqlMetaNames {
			args := json.RawMessage(fmt.Sprintf(`{"name":%q,"sql":"'; DROP TABLE lockstep_runs; --"}`, name))
			idRes, err := f.c.Insert(ctx, lockstep.RawArgs{KindName: name, JSON: args}, &lockstep.InsertOpts{Queue: name, Delay: time.Hour})
			require.NoError(t, err, "%q", name)
			id := idRes.ID
			ids[name] = id
			added = append(added, id)
			j, err := f.c.Job(ctx, id)
			require.NoError(t, err)
			require.Equal(t, name, j.Queue)
			require.Equal(t, name, j.Kind)
			require.JSONEq(t, string(args), string(j.Args))
		}
		require.Equal(t, before, testdb.TakeSnapshot(t, drv.DB()).WithoutJobs(added...), "nothing but the new jobs")

		// Filters match names exactly: "%" and "_" are not patterns.
		for _, name := range sqlMetaNames {
			page, err := f.c.JobPage(ctx, lockstep.JobPageParams{Queue: name, Kind: name})
			require.NoError(t, err, "%q", name)
			require.Len(t, page.Jobs, 1, "%q", name)
			require.Equal(t, ids[name], page.Jobs[0].ID, "%q", name)
			st, err := f.c.QueueStats(ctx, name, nil)
			require.NoError(t, err, "%q", name)
			require.Equal(t, name, st.Queue)
		}

		// A worker for such a queue and kind runs its job, and touches no
		// other row.
		victim := sqlMetaNames[0]
		idRes, err := f.c.Insert(ctx, lockstep.RawArgs{KindName: victim, JSON: json.RawMessage(`{}`)}, &lockstep.InsertOpts{Queue: victim})
		require.NoError(t, err)
		id := idRes.ID
		mid := testdb.TakeSnapshot(t, drv.DB())
		ran := make(chan string, 1)
		ws := lockstep.NewWorkers()
		require.NoError(t, lockstep.AddRawWorker(ws, victim, lockstep.WorkFunc(func(_ context.Context, j *lockstep.Job[lockstep.RawArgs]) error {
			ran <- j.Queue
			return nil
		})))
		finished := make(chan lockstep.Event, 4)
		c, err := lockstep.NewClient(drv, lockstep.Config{
			Workers: ws, Logger: quietBadInputLogger(), DisableReaper: true,
			Queues:       map[string]lockstep.QueueConfig{victim: {MaxWorkers: 1}},
			PollInterval: 50 * time.Millisecond, MinPollInterval: 5 * time.Millisecond,
			OnEvent: func(e lockstep.Event) {
				if e.Kind == lockstep.EventJobFinished {
					finished <- e
				}
			},
		})
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx))
		select {
		case e := <-finished:
			require.Equal(t, lockstep.StatusDone, e.Status)
		case <-time.After(60 * time.Second):
			t.Fatal("the job was not finished after 60s")
		}
		stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		require.NoError(t, c.Stop(stopCtx))
		require.Equal(t, victim, <-ran)
		j, err := c.Job(ctx, id)
		require.NoError(t, err)
		require.Equal(t, lockstep.StatusDone, j.Status)
		require.Equal(t, mid.WithoutJobs(id), testdb.TakeSnapshot(t, drv.DB()).WithoutJobs(id), "only the worker's own job changed")
	})
}

// Servers without what lockstep needs are refused with the version they
// need: MySQL 8.0.1 and MariaDB 10.6 for SKIP LOCKED, PostgreSQL 12.
func TestBadInputServerTooOld(t *testing.T) {
	for v, want := range map[string]string{
		"8.0.0":                               "MySQL 8.0.0 is too old: lockstep needs 8.0.1 or later",
		"8.0.0-dmr":                           "lockstep needs 8.0.1 or later",
		"5.7.44":                              "MySQL 5.7.44 is too old: lockstep needs 8.0.1 or later",
		"5.7.44-log":                          "lockstep needs 8.0.1 or later",
		"5.6.51":                              "lockstep needs 8.0.1 or later",
		"10.5.27-MariaDB":                     "MariaDB 10.5.27-MariaDB is too old: lockstep needs 10.6 or later",
		"10.5.8-MariaDB-1:10.5.8+maria~focal": "lockstep needs 10.6 or later",
		"5.5.5-10.4.34-MariaDB":               "lockstep needs 10.6 or later",
	} {
		_, err := mysql.CheckVersion(v)
		require.ErrorContains(t, err, want, v)
	}
	for _, v := range []string{"8.0.1", "8.4.3", "9.1.0", "10.6.0-MariaDB", "11.4.4-MariaDB-log"} {
		_, err := mysql.CheckVersion(v)
		require.NoError(t, err, v)
	}
	for v, want := range map[string]string{
		"11.22":             "PostgreSQL 11.22 is too old: lockstep needs 12 or later",
		"9.4.26":            "lockstep needs 12 or later",
		"PostgreSQL 9.4.26": "lockstep needs 12 or later",
		"90426":             "lockstep needs 12 or later",
	} {
		require.ErrorContains(t, postgres.CheckVersion(v), want, v)
	}
}
