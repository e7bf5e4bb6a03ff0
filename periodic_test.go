package lockstep_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

type tickArgs struct{}

func (tickArgs) Kind() string { return "tick" }

// tickTimes are the scheduled times of every "tick" job, one entry per job.
func tickTimes(t *testing.T, c *lockstep.Client) []time.Time {
	t.Helper()
	var out []time.Time
	page, err := c.Jobs(context.Background(), rowtype.JobListParams{Limit: 10000})
	require.NoError(t, err)
	for _, j := range page {
		if j.Kind == "tick" {
			out = append(out, j.AvailableAt)
		}
	}
	return out
}

// TestPeriodicThreeProcesses: on each database, three processes with the
// same 100ms periodic job enqueue one job per tick between them: every
// tick has exactly one job, and the other processes' attempts were turned
// away as duplicates.
func TestPeriodicThreeProcesses(t *testing.T) {
	forEachDialectN(t, 3, func(t *testing.T, drvs []driver.Driver) {
		ctx := context.Background()
		var enqueued, duplicates atomic.Int64
		pj := []lockstep.PeriodicJob{{Name: "heartbeat-report", Interval: 100 * time.Millisecond, Args: tickArgs{}}}
		var clients []*lockstep.Client
		for _, drv := range drvs {
			c := quietClient(t, drv, lockstep.Config{
				PeriodicJobs: pj, DisableReaper: true, DisableRetention: true,
				OnEvent: func(e lockstep.Event) {
					switch {
					case e.Kind == lockstep.EventEnqueued && e.JobKind == "tick":
						enqueued.Add(1)
					case e.Kind == lockstep.EventPeriodicDuplicate:
						duplicates.Add(1)
					}
				},
			})
			require.NoError(t, c.Start(ctx))
			clients = append(clients, c)
		}
		eventually(t, 20*time.Second, "ten ticks", func() bool { return len(tickTimes(t, clients[0])) >= 10 })
		var wg sync.WaitGroup
		for _, c := range clients {
			wg.Go(func() { require.NoError(t, c.Stop(context.Background())) })
		}
		wg.Wait()

		ticks := tickTimes(t, clients[0])
		seen := map[time.Time]int{}
		for _, at := range ticks {
			seen[at.UTC()]++
			require.Zero(t, at.UnixNano()%int64(100*time.Millisecond), "tick %s is not on the 100ms grid", at)
		}
		for at, n := range seen {
			require.Equal(t, 1, n, "tick %s has %d jobs", at, n)
		}
		require.EqualValues(t, len(ticks), enqueued.Load(), "one enqueue per job")
		// Each tick was tried by the three processes; a process may miss
		// one only at its start or stop.
		require.Greater(t, duplicates.Load(), int64(len(ticks)), "the other processes' tries were duplicates")
	})
}

// TestPeriodicMissedTicks: ticks that passed while no process ran are not
// replayed by default; with CatchUp they are, once each, however many
// processes start.
func TestPeriodicMissedTicks(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		start := func(catchUp time.Duration) *lockstep.Client {
			c := quietClient(t, drv, lockstep.Config{
				PeriodicJobs:  []lockstep.PeriodicJob{{Name: "every-10m", Cron: "*/10 * * * *", Args: tickArgs{}, CatchUp: catchUp}},
				DisableReaper: true, DisableRetention: true,
			})
			require.NoError(t, c.Start(ctx))
			t.Cleanup(func() { _ = c.Stop(context.Background()) })
			return c
		}
		// Start returns after the catch-up; the next tick is minutes away.
		c := start(0)
		require.Empty(t, tickTimes(t, c))
		c = start(time.Hour)
		got := tickTimes(t, c)
		// The ticks at :00, :10, … of the last hour: six, or seven when
		// the hour began on a tick this very instant.
		require.GreaterOrEqual(t, len(got), 6)
		require.LessOrEqual(t, len(got), 7)
		for _, at := range got {
			require.Zero(t, at.UTC().Minute()%10)
			require.Zero(t, at.UTC().Second())
		}
		start(time.Hour)
		require.Len(t, tickTimes(t, c), len(got), "a second start replays nothing twice")
	})
}

// TestPeriodicConfig: bad schedules are refused by NewClient.
func TestPeriodicConfig(t *testing.T) {
	drv := testDialects[0].open(t)
	for _, tc := range []struct {
		pj   lockstep.PeriodicJob
		want string
	}{
		{lockstep.PeriodicJob{Name: "x", Args: tickArgs{}}, `periodic job "x": give Cron or Interval`},
		{lockstep.PeriodicJob{Name: "x", Args: tickArgs{}, Cron: "* * *"}, `periodic job "x": cron "* * *": expected exactly 5 fields, found 3: [* * *]`},
		{lockstep.PeriodicJob{Name: "x", Args: tickArgs{}, Cron: "@hourly", Interval: time.Hour}, "give Cron or Interval, not both"},
		{lockstep.PeriodicJob{Name: "x", Args: tickArgs{}, Interval: time.Microsecond}, "Interval must be at least 1ms"},
		{lockstep.PeriodicJob{Name: "", Args: tickArgs{}, Interval: time.Hour}, "periodic job name is empty"},
		{lockstep.PeriodicJob{Name: "x", Interval: time.Hour}, `periodic job "x": no Args`},
		{lockstep.PeriodicJob{Name: "x", Args: tickArgs{}, Interval: time.Hour, Opts: &lockstep.InsertOpts{Delay: time.Second}}, "Opts must not set ScheduledAt, Delay, RunID or Unique"},
	} {
		_, err := lockstep.NewClient(drv, lockstep.Config{PeriodicJobs: []lockstep.PeriodicJob{tc.pj}})
		require.ErrorContains(t, err, tc.want)
	}
	_, err := lockstep.NewClient(drv, lockstep.Config{PeriodicJobs: []lockstep.PeriodicJob{
		{Name: "x", Args: tickArgs{}, Interval: time.Hour}, {Name: "x", Args: tickArgs{}, Cron: "@daily"},
	}})
	require.ErrorContains(t, err, `periodic job "x" is declared twice`)
}

// TestPeriodicScheduleIsTheSameEverywhere: a tick does not depend on the
// process's time zone or start time — cron in UTC (unless CRON_TZ says
// otherwise), @every aligned to the epoch — or every process would have
// its own ticks, and its own jobs.
func TestPeriodicScheduleIsTheSameEverywhere(t *testing.T) {
	india := time.FixedZone("IST", 5*3600+1800)
	at := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		cron string
		want time.Time
	}{
		{"0 9 * * *", time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)},
		{"CRON_TZ=Asia/Kolkata 0 14 * * *", time.Date(2026, 11, 30, 8, 30, 0, 0, time.UTC)},
		{"@hourly", time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)},
	} {
		for _, from := range []time.Time{at, at.In(india)} {
			got, err := lockstep.NextTick(lockstep.PeriodicJob{Name: "x", Args: tickArgs{}, Cron: tc.cron}, from)
			require.NoError(t, err)
			require.True(t, tc.want.Equal(got), "%s from %s: got %s, want %s", tc.cron, from, got.UTC(), tc.want)
		}
	}
	every := lockstep.PeriodicJob{Name: "x", Args: tickArgs{}, Cron: "@every 90s"}
	for _, from := range []time.Time{at.Add(7 * time.Second), at.Add(41 * time.Second)} {
		got, err := lockstep.NextTick(every, from)
		require.NoError(t, err)
		require.Zero(t, got.UnixNano()%int64(90*time.Second), "@every 90s from %s gave %s", from, got)
		require.True(t, got.After(from) && !got.After(from.Add(90*time.Second)))
	}
	_, err := lockstep.NextTick(lockstep.PeriodicJob{Name: "x", Args: tickArgs{}, Cron: "0 0 30 2 *"}, at)
	require.ErrorContains(t, err, `cron "0 0 30 2 *" never fires`)
}
