package soak_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/driver/drivertest"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// TestRateWindowStaleClock is the smallest form of what the 10-minute
// PostgreSQL soak found (key "r1" of soak_limit_rate started 6 jobs in one
// second, its rate 5), kept as the regression test of its fix: a rate
// window is counted and written at a clock read under its locks
// (limit.clock).
//
// A claim of a queue with a per-key rate reads the database's clock first
// (queue.limits; on PostgreSQL now() is the transaction's start) and locks
// the key's row only later, SKIP LOCKED. A second claim that starts after
// it, locks the key first and commits in between records its start at its
// later clock and prunes the starts older than its window
// (rate.prune: started_at <= its now less the period). The first claim
// then counts the starts after its own, older, clock less the period: the
// pruned starts that were still inside its window are gone, and it admits
// a start the window has no room for, recorded at its old clock.
//
// Here (rate 2 per 2 s): A1 and A2 start at s0; claim F reads its clock
// just after and is paused before its candidates; once the database's
// clock has passed s0 + 2 s, claim C takes B1, records it, prunes A1 and
// A2, and commits; F resumes, sees one start in its window (C's) and takes
// B2 at its clock, before s0 + 2 s: A1, A2 and B2 are three starts within
// 2 s — as it was. The fix takes the clock a rate window is counted at
// (and its starts recorded at) after the locks that guard it are held — on
// PostgreSQL clock_timestamp(), on MySQL a statement after limit.lock_keys
// — so that a claim that committed first always has the earlier clock;
// pruning then only removes what no later claim can count.
func TestRateWindowStaleClock(t *testing.T) {
	for _, tc := range []struct {
		name, now string
		open      func(t *testing.T) driver.Driver
	}{
		{"MariaDB", "SELECT UTC_TIMESTAMP(6)", func(t *testing.T) driver.Driver {
			d, err := mysql.Open(t.Context(), testdb.MySQL(t))
			require.NoError(t, err)
			return d
		}},
		{"OracleMySQL", "SELECT UTC_TIMESTAMP(6)", func(t *testing.T) driver.Driver {
			d, err := mysql.Open(t.Context(), testdb.OracleMySQL(t))
			require.NoError(t, err)
			return d
		}},
		{"PostgreSQL", "SELECT now()", func(t *testing.T) driver.Driver {
			d, err := postgres.Open(t.Context(), testdb.Postgres(t))
			require.NoError(t, err)
			return d
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			drv := tc.open(t)
			defer drv.Close()
			drivertest.Migrate(t, drv)
			c, err := lockstep.NewClient(drv, lockstep.Config{})
			require.NoError(t, err)
			const period = 2 * time.Second
			lim := lockstep.QueueLimits{Rate: 2, RatePeriod: period, RateByKey: true}
			require.NoError(t, c.SetQueueLimits(ctx, "rate", lim))
			insert := func(name string) int64 {
				res, err := c.Insert(ctx, reproArgs{Name: name}, &lockstep.InsertOpts{Queue: "rate", LimitKey: "k"})
				require.NoError(t, err)
				return res.ID
			}
			exec := drv.Executor()
			claim := func(ctx context.Context, n int) *driver.LimitedClaim {
				got, err := exec.JobClaimLimited(ctx, &driver.JobClaimParams{Queue: "rate", Max: n, Limits: lim, Grace: time.Minute})
				require.NoError(t, err)
				return got
			}
			insert("A1")
			insert("A2")
			require.Empty(t, claim(ctx, 2).Jobs, "the first claim of a key creates its row")
			a := claim(ctx, 2)
			require.Len(t, a.Jobs, 2)
			s0 := a.Jobs[0].StartedAt
			b1, b2 := insert("B1"), insert("B2")
			insert("B3")

			paused, resume, done := make(chan struct{}), make(chan struct{}), make(chan *driver.LimitedClaim)
			trace := &driver.StatementTrace{Before: func(_ context.Context, name string) error {
				if name == string(catalog.JobClaimCandidates) {
					close(paused)
					<-resume
				}
				return nil
			}}
			go func() {
				got, err := exec.JobClaimLimited(driver.WithStatementTrace(ctx, trace), &driver.JobClaimParams{Queue: "rate", Max: 3, Limits: lim, Grace: time.Minute})
				if err != nil {
					t.Error(err)
				}
				done <- got
			}()
			<-paused
			for {
				var now time.Time
				require.NoError(t, drv.DB().QueryRowContext(ctx, tc.now).Scan(&now))
				if now.After(s0.Add(period)) {
					break
				}
				time.Sleep(20 * time.Millisecond) // the database's clock, polled
			}
			cl := claim(ctx, 1)
			require.Len(t, cl.Jobs, 1)
			require.Equal(t, b1, cl.Jobs[0].ID, "C takes B1: A1 and A2 are a period old for it")
			close(resume)
			f := <-done
			require.NotNil(t, f)

			var starts []time.Time
			for _, j := range append(append(a.Jobs, cl.Jobs...), f.Jobs...) {
				starts = append(starts, j.StartedAt)
			}
			var desc string
			for _, j := range f.Jobs {
				desc += fmt.Sprintf(" job %d at %s;", j.ID, j.StartedAt.Format("15:04:05.000000"))
			}
			t.Logf("A1, A2 at %s; C took B1 at %s; F took%s", s0.Format("15:04:05.000000"), cl.Jobs[0].StartedAt.Format("15:04:05.000000"), desc)
			for _, j := range f.Jobs {
				n := 0
				for _, s := range starts {
					if s.After(j.StartedAt.Add(-period)) && !s.After(j.StartedAt) {
						n++
					}
				}
				require.LessOrEqual(t, n, lim.Rate, "F took job %d (B2 is %d), starting it at %s: %d starts in the %s up to then",
					j.ID, b2, j.StartedAt.Format("15:04:05.000000"), n, period)
			}
		})
	}
}

type reproArgs struct {
	Name string `json:"name"`
}

func (reproArgs) Kind() string { return "soak_repro" }
