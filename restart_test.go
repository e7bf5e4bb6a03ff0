package lockstep_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"

	"github.com/lockstep-queue/lockstep/internal/statusaudit"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/migrate"
	"github.com/lockstep-queue/lockstep/rowtype"
)

type restartArgs struct{}

func (restartArgs) Kind() string { return "restart" }

// executions counts, in memory, each job's executions by attempt: the
// workers of the restart test touch no database, so an outage cannot
// fail them, only the queue around them.
type executions struct {
	mu sync.Mutex
	by map[int64][]int
}

func (e *executions) Work(ctx context.Context, job *lockstep.Job[restartArgs]) error {
	e.mu.Lock()
	e.by[job.ID] = append(e.by[job.ID], job.Attempts)
	e.mu.Unlock()
	t := time.NewTimer(10 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// TestDatabaseRestart stops the database server under a working client
// (cleanly, and with SIGKILL as a crash would) and starts it again once
// the client has noticed: the client must log the outage, back off, come
// back on its own when the server does, and finish every job — each run
// once, each final state written once.
func TestDatabaseRestart(t *testing.T) {
	for _, d := range faultDialects {
		for _, how := range []string{"stop", "kill"} {
			t.Run(d.name+"/"+how, func(t *testing.T) {
				ctx := context.Background()
				srv, err := d.start(ctx, testdb.ServerOptions{Logf: t.Logf})
				require.NoError(t, err)
				t.Cleanup(func() { _ = srv.Close() })
				require.True(t, srv.Started(), "the restart test needs a server of its own to stop: unset LOCKSTEP_TEST_*_DSN")
				dsn, err := srv.NewDatabase(ctx)
				require.NoError(t, err)
				drv, err := d.open(ctx, dsn)
				require.NoError(t, err)
				t.Cleanup(func() { _ = drv.Close() })
				m, err := migrate.New(drv)
				require.NoError(t, err)
				_, err = m.Up(ctx)
				require.NoError(t, err)
				require.NoError(t, statusaudit.Install(ctx, drv))

				ex := &executions{by: map[int64][]int{}}
				ws := lockstep.NewWorkers()
				lockstep.AddWorker[restartArgs](ws, ex)
				logs := &logRecorder{}
				client, err := lockstep.NewClient(drv, lockstep.Config{
					Workers: ws, Logger: slog.New(logs),
					PollInterval: 100 * time.Millisecond, HeartbeatInterval: 200 * time.Millisecond,
					// Longer than the outage: no live job is reaped.
					ReapAfter: 30 * time.Second,
				})
				require.NoError(t, err)
				const n = 600
				params := make([]lockstep.InsertManyParams, n)
				for i := range params {
					params[i] = lockstep.InsertManyParams{Args: restartArgs{}}
				}
				idsRes, err := client.InsertMany(ctx, params)
				require.NoError(t, err)
				ids := insertedIDs(idsRes)
				require.NoError(t, client.Start(ctx))
				defer func() { _ = client.Stop(ctx) }()

				done := func() int {
					var k int
					if err := drv.DB().QueryRow("SELECT COUNT(*) FROM lockstep_jobs WHERE status = 'DONE'").Scan(&k); err != nil {
						return -1 // the server is down
					}
					return k
				}
				eventually(t, 30*time.Second, "a sixth of the jobs to be DONE", func() bool { return done() >= n/6 })
				began := time.Now()
				if how == "stop" {
					require.NoError(t, srv.Stop(ctx))
				} else {
					require.NoError(t, srv.Kill())
				}
				eventually(t, 30*time.Second, "the client to log the outage", func() bool { return logs.count("lockstep: claim failed") > 0 })
				// The server stays down a few seconds: the fault's length,
				// not a synchronisation (the client's backoff grows to
				// 8 × PollInterval meanwhile).
				time.Sleep(3 * time.Second)
				require.NoError(t, srv.Start(ctx))
				outage := time.Since(began)
				eventually(t, 90*time.Second, "every job to be DONE", func() bool { return done() == n })
				require.NoError(t, client.Stop(ctx))
				eventually(t, 30*time.Second, "the client to log its recovery", func() bool { return logs.count("lockstep: claims work again") > 0 })

				audit, _, err := statusaudit.Read(ctx, drv)
				require.NoError(t, err)
				ex.mu.Lock()
				defer ex.mu.Unlock()
				for _, id := range ids {
					require.Len(t, ex.by[id], 1, "job %d ran %v", id, ex.by[id])
					finals := 0
					for _, tr := range audit[id] {
						require.NotEqual(t, rowtype.StatusDone, tr.From, "job %d changed after DONE", id)
						if tr.To == rowtype.StatusDone {
							finals++
						}
					}
					require.Equal(t, 1, finals, "job %d: DONE written %d times", id, finals)
				}
				t.Logf("%s %s: outage %s (server down and up again); %d claim failures logged, %d retries logged",
					d.name, how, outage.Round(time.Millisecond), logs.count("lockstep: claim failed"), logs.count("lockstep: retrying after database error"))
			})
		}
	}
}
