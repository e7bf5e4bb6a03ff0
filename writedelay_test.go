package lockstep_test

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/rowtype"
)

type heldArgs struct{}

func (heldArgs) Kind() string { return "held" }

// TestReaperWaitsOutAHeldWriter holds SQLite's single write lock, from a
// connection of its own, for several times the reap limit while a live
// job runs in client A and client B reaps every 100 ms; a job whose
// worker is gone (claimed and abandoned before the hold) waits beside it.
// Every heartbeat waits for the lock, so both jobs' heartbeats go stale;
// B, whose own heartbeat writes are waiting too, passes its turns (and
// says so) instead of reaping. Once the lock is free, the live job's
// heartbeat is written again and B reaps only the abandoned job: the live
// one ends DONE at its first attempt. Synchronised on the database's rows
// and B's log, not on time.
func TestReaperWaitsOutAHeldWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "held.db")
	open := func() driver.Driver {
		drv, err := sqlite.Open(ctx, path)
		require.NoError(t, err)
		t.Cleanup(func() { _ = drv.Close() })
		return drv
	}
	drvA := openMigrated(t, open())
	drvB := open()

	started := make(chan int64, 1)
	release := make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	ws := lockstep.NewWorkers()
	lockstep.AddWorker(ws, lockstep.WorkFunc(func(ctx context.Context, j *lockstep.Job[heldArgs]) error {
		started <- j.ID
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}))
	timing := lockstep.Config{HeartbeatInterval: 100 * time.Millisecond, ReapAfter: time.Second, ReapInterval: 100 * time.Millisecond,
		PollInterval: 50 * time.Millisecond}

	// The abandoned job: claimed as a worker about to die would, never
	// heartbeated.
	ins, err := drvA.Executor().JobInsertMany(ctx, []driver.JobInsertParams{{Queue: "abandoned", Kind: "held", Args: []byte("{}")}})
	require.NoError(t, err)
	claimed, err := drvA.Executor().JobClaim(ctx, &driver.JobClaimParams{Queue: "abandoned", Max: 1})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	abandoned := ins[0]

	cfgA := timing
	cfgA.Workers, cfgA.DisableReaper, cfgA.Logger = ws, true, quietBadInputLogger()
	a, err := lockstep.NewClient(drvA, cfgA)
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx))
	defer func() { _ = a.Stop(ctx) }()
	res, err := a.Insert(ctx, heldArgs{}, nil)
	require.NoError(t, err)
	live := res.ID
	require.Equal(t, live, <-started)

	logs := &logRecorder{}
	cfgB := timing
	cfgB.Logger = slog.New(logs)
	b, err := lockstep.NewClient(drvB, cfgB)
	require.NoError(t, err)
	require.NoError(t, b.Start(ctx))
	defer func() { _ = b.Stop(ctx) }()
	defer free() // before the clients' Stop, which waits for the job

	// The hold: a write transaction of another connection, open.
	holder, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = holder.Close() })
	conn, err := holder.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
	require.NoError(t, err)
	held := true
	defer func() {
		if held {
			_, _ = conn.ExecContext(ctx, "ROLLBACK")
		}
	}()

	// Reads go on under the hold (WAL): wait until the live job's
	// heartbeat is older than the reap limit, and B has passed its turn
	// several times since.
	reader := drvA.DB()
	age := func(id int64) time.Duration {
		var ms float64
		require.NoError(t, reader.QueryRowContext(ctx,
			"SELECT (julianday('now') - julianday(heartbeat_at)) * 86400000.0 FROM lockstep_jobs WHERE id = ?", id).Scan(&ms))
		return time.Duration(ms * float64(time.Millisecond))
	}
	const deferred = "lockstep: reap deferred: this process's heartbeat writes are waiting on the database"
	eventually(t, time.Minute, "the live job's heartbeat to pass the reap limit", func() bool { return age(live) > 2*timing.ReapAfter })
	before := logs.count(deferred)
	eventually(t, time.Minute, "B to pass its turn five more times", func() bool { return logs.count(deferred) >= before+5 })
	require.Greater(t, age(live), 2*timing.ReapAfter, "the hold lasted past the reap limit")

	_, err = conn.ExecContext(ctx, "ROLLBACK")
	require.NoError(t, err)
	held = false

	// B goes back to reaping: the abandoned job is reaped; the live one,
	// whose heartbeat is written again, is not.
	jobStatus := func(id int64) (rowtype.JobStatus, int) {
		j, err := drvA.Executor().JobGet(ctx, id)
		require.NoError(t, err)
		return j.Status, j.Attempts
	}
	eventually(t, time.Minute, "the abandoned job to be reaped", func() bool {
		st, _ := jobStatus(abandoned)
		return st != rowtype.StatusRunning
	})
	st, attempts := jobStatus(live)
	require.Equal(t, rowtype.StatusRunning, st, "the live job was not reaped")
	require.Equal(t, 1, attempts)
	require.Less(t, age(live), timing.ReapAfter, "its heartbeat is fresh again")

	free()
	eventually(t, time.Minute, "the live job to be DONE", func() bool {
		st, _ := jobStatus(live)
		return st == rowtype.StatusDone
	})
	st, attempts = jobStatus(live)
	require.Equal(t, rowtype.StatusDone, st)
	require.Equal(t, 1, attempts, "it ran once, never reaped")
}
