package lockstep_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/faultproxy"
	"github.com/lockstep-queue/lockstep/lab/chaos"
)

// TestLostLimitedClaimHoldsItsSlots: under a global limit of 2, a claim
// commits and the connection is cut before its client hears, so two jobs
// are RUNNING that no one runs. They keep their slots — another client
// claims nothing from the queue, however often it tries — until the
// reaper returns them; then every job runs once. The limit never admits
// a third: the slots are counted from the jobs, which the lost commit
// wrote like any other.
func TestLostLimitedClaimHoldsItsSlots(t *testing.T) {
	// The limited claim is a transaction on every server: its COMMIT
	// travels as a statement of its own (pgx sends it in lower case).
	match := map[string]string{"mysql": "COMMIT", "postgres": "commit"}
	for _, d := range faultDialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			const n, limit = 10, 2
			dsn := d.dsn(t)
			direct, _ := faultSetup(t, ctx, d, dsn, 1)
			admin, err := lockstep.NewClient(direct, lockstep.Config{Logger: quietBadInputLogger()})
			require.NoError(t, err)
			require.NoError(t, admin.SetQueueLimits(ctx, lockstep.DefaultQueue, lockstep.QueueLimits{Concurrency: limit}))
			p, proxied := behindProxy(t, ctx, d, dsn)

			ws := lockstep.NewWorkers()
			require.NoError(t, chaos.NewLedgerWorker(direct).Register(ws))
			claims := make(chan int, 100)
			a, err := lockstep.NewClient(proxied, lockstep.Config{
				Workers: ws, Logger: slog.New(&logRecorder{}), DisableReaper: true, DisableNotify: true,
				PollInterval: time.Hour, MinPollInterval: time.Hour,
				HeartbeatInterval: 100 * time.Millisecond, ReapAfter: time.Second,
				OnEvent: func(e lockstep.Event) {
					if e.Kind == lockstep.EventClaimed {
						select {
						case claims <- e.Count:
						default:
						}
					}
				},
			})
			require.NoError(t, err)
			require.NoError(t, a.Start(ctx))
			defer func() { _ = a.Stop(ctx) }()
			// As in TestLostClaimCommitIsReaped: the setup's job runs, one
			// empty claim follows, and A is idle until it is woken.
			waitClaims(t, claims, 1, 0)
			eventually(t, 30*time.Second, "the first job to be DONE", func() bool { return openJobs(t, direct) == 0 })

			fault := p.DropOn(faultproxy.Rule{Match: []byte(match[d.dialect]), After: true, Times: 1})
			params := make([]lockstep.InsertManyParams, n)
			for i := range params {
				params[i] = lockstep.InsertManyParams{Args: chaos.LedgerArgs{Millis: 5}}
			}
			// Inserted directly (the proxy cuts the first COMMIT it sees,
			// and PostgreSQL's insert has one), then A is woken to claim.
			idsRes, err := admin.InsertMany(ctx, params)
			require.NoError(t, err)
			a.WaitProducerTurn(t, lockstep.DefaultQueue)
			select {
			case <-fault.Fired():
			case <-time.After(30 * time.Second):
				t.Fatal("the claim was never cut")
			}
			running := func() int {
				var r int
				require.NoError(t, direct.DB().QueryRow("SELECT COUNT(*) FROM lockstep_jobs WHERE status = 'RUNNING'").Scan(&r))
				return r
			}
			require.Equal(t, limit, running(), "the cut claim committed: its jobs hold both slots")

			// B, on a direct connection, finds the queue full: the lost
			// claim's jobs are running as far as the database knows.
			ws2 := lockstep.NewWorkers()
			require.NoError(t, chaos.NewLedgerWorker(direct).Register(ws2))
			b, err := lockstep.NewClient(direct, lockstep.Config{
				Workers: ws2, Logger: slog.New(&logRecorder{}), DisableReaper: true,
				PollInterval: 50 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond, ReapAfter: time.Second,
			})
			require.NoError(t, err)
			require.NoError(t, b.Start(ctx))
			defer func() { _ = b.Stop(ctx) }()
			for range 3 {
				b.WaitProducerTurn(t, lockstep.DefaultQueue)
			}
			require.Equal(t, limit, running())
			require.Equal(t, n, openJobs(t, direct), "no job started beyond the limit")

			// Reaped, their slots come back, and every job runs once.
			eventually(t, 30*time.Second, "the lost claim's jobs to be reaped", func() bool {
				r, err := b.Reap(ctx)
				require.NoError(t, err)
				return len(r) > 0
			})
			eventually(t, 60*time.Second, "every job to be final", func() bool { return openJobs(t, direct) == 0 })
			require.NoError(t, b.Stop(ctx))
			require.NoError(t, a.Stop(ctx))
			all := map[int64]int64{}
			for _, id := range insertedIDs(idsRes) {
				all[id] = 0
			}
			var first int64
			require.NoError(t, direct.DB().QueryRow("SELECT MIN(id) FROM lockstep_jobs").Scan(&first))
			all[first] = 0
			res, err := chaos.Check(ctx, direct, chaos.Known{Jobs: all, Killed: map[int]bool{}})
			require.NoError(t, err)
			require.Empty(t, res.Problems, "%d problems", res.ProblemCount)
			require.Equal(t, n+1, res.Done)
			require.Equal(t, limit, res.Reaps)
			require.Zero(t, res.ReExecuted)
		})
	}
}
