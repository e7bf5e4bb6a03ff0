package lockstep_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

type failoverArgs struct{ N int }

func (failoverArgs) Kind() string { return "failover" }

// doneIDs reads the DONE jobs' ids through db.
func doneIDs(t *testing.T, db *sql.DB) map[int64]bool {
	t.Helper()
	rows, err := db.Query("SELECT id FROM lockstep_jobs WHERE status = 'DONE'")
	require.NoError(t, err)
	defer rows.Close()
	out := map[int64]bool{}
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		out[id] = true
	}
	require.NoError(t, rows.Err())
	return out
}

// TestPostgresFailover runs a client on a DSN naming a primary and its
// streaming standby while it works through jobs; the primary is killed
// with SIGKILL mid-run and the standby promoted; the client's connections
// move to it (target_session_attrs=read-write) and it finishes the work.
// With synchronous replication, every job whose DONE the primary had
// committed before the kill is DONE on the promoted standby and never runs
// again. With asynchronous replication a DONE the standby had not received
// reverts (the job runs again: at least once): the test counts those, and
// in both modes no job is lost.
func TestPostgresFailover(t *testing.T) {
	for _, c := range []struct {
		name string
		sync bool
	}{{"synchronous", true}, {"asynchronous", false}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			pair, err := testdb.StartPostgresPair(ctx, testdb.ServerOptions{Logf: t.Logf}, c.sync)
			require.NoError(t, err)
			t.Cleanup(func() { _ = pair.Close() })
			primaryURL, standbyURL, err := pair.NewDatabase(ctx)
			require.NoError(t, err)
			url, err := pair.MultiHostURL(primaryURL)
			require.NoError(t, err)

			drv, err := postgres.Open(ctx, url)
			require.NoError(t, err)
			openMigrated(t, drv)

			var mu sync.Mutex
			runs := map[int64]int{}
			ws := lockstep.NewWorkers()
			lockstep.AddWorker(ws, lockstep.WorkFunc(func(ctx context.Context, j *lockstep.Job[failoverArgs]) error {
				mu.Lock()
				runs[j.ID]++
				mu.Unlock()
				select {
				case <-time.After(2 * time.Millisecond):
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}))
			const jobs = 600
			client, err := lockstep.NewClient(drv, lockstep.Config{
				Workers: ws, Logger: quietBadInputLogger(),
				Queues:            map[string]lockstep.QueueConfig{lockstep.DefaultQueue: {MaxWorkers: 4}},
				PollInterval:      50 * time.Millisecond,
				HeartbeatInterval: 200 * time.Millisecond, ReapAfter: 2 * time.Second, ReapInterval: 200 * time.Millisecond,
			})
			require.NoError(t, err)
			params := make([]lockstep.InsertManyParams, jobs)
			for i := range params {
				params[i] = lockstep.InsertManyParams{Args: failoverArgs{N: i}}
			}
			_, err = client.InsertMany(ctx, params)
			require.NoError(t, err)

			primary, err := sql.Open("pgx", primaryURL)
			require.NoError(t, err)
			t.Cleanup(func() { _ = primary.Close() })
			require.NoError(t, client.Start(ctx))
			defer func() { _ = client.Stop(context.Background()) }()
			eventually(t, time.Minute, "a third of the jobs DONE", func() bool { return len(doneIDs(t, primary)) >= jobs/3 })

			// What the primary has committed, read just before it dies.
			committed := doneIDs(t, primary)
			require.NoError(t, pair.Primary.Kill())
			killed := time.Now()
			require.NoError(t, pair.Promote(ctx))
			promoted := time.Since(killed)

			standby, err := sql.Open("pgx", standbyURL)
			require.NoError(t, err)
			t.Cleanup(func() { _ = standby.Close() })
			after := doneIDs(t, standby)
			reverted := 0
			for id := range committed {
				if !after[id] {
					reverted++
				}
			}
			eventually(t, 2*time.Minute, "every job DONE on the promoted standby", func() bool { return len(doneIDs(t, standby)) == jobs })
			resumed := time.Since(killed)
			require.NoError(t, client.Stop(ctx))

			mu.Lock()
			defer mu.Unlock()
			require.Len(t, runs, jobs, "every job ran: none lost")
			rerun := 0
			for id := range committed {
				if runs[id] > 1 {
					rerun++
				}
			}
			t.Logf("%s replication: %d of %d DONE committed before the kill; %d reverted on the promoted standby, %d of them ran again; "+
				"promoted %v after the kill, every job DONE %v after it",
				c.name, len(committed), jobs, reverted, rerun, promoted.Round(time.Millisecond), resumed.Round(time.Millisecond))
			if c.sync {
				require.Zero(t, reverted, "synchronous replication loses no committed DONE")
				require.Zero(t, rerun, "a job whose DONE was committed never runs again")
			}
		})
	}
}
