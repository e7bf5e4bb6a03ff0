package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/driver/drivertest"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/internal/clienttest"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// openTwo opens two drivers (two pools, as two processes would have) on one
// fresh, migrated database.
func openTwo(t *testing.T) (worker, enqueuer *postgres.Driver) {
	t.Helper()
	dsn := testdb.Postgres(t)
	open := func() *postgres.Driver {
		d, err := postgres.Open(context.Background(), dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = d.Close() })
		return d
	}
	worker, enqueuer = open(), open()
	drivertest.Migrate(t, worker)
	return worker, enqueuer
}

// listenerPIDs are the backends of this database LISTENing for wake-ups
// that are idle, i.e. whose LISTEN has completed.
func listenerPIDs(t *testing.T, d *postgres.Driver) []int64 {
	t.Helper()
	rows, err := d.DB().Query(`SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND state = 'idle' AND query = $1 ORDER BY pid`,
		d.Catalog().Get(catalog.JobListen).SQL)
	require.NoError(t, err)
	defer rows.Close()
	var pids []int64
	for rows.Next() {
		var pid int64
		require.NoError(t, rows.Scan(&pid))
		pids = append(pids, pid)
	}
	require.NoError(t, rows.Err())
	return pids
}

// TestListenerReconnects: when the listener's connection is terminated
// (pg_terminate_backend), the client LISTENs again on a new connection, and
// a job enqueued by another client afterwards still starts at once.
func TestListenerReconnects(t *testing.T) {
	ctx := context.Background()
	wdrv, edrv := openTwo(t)
	w := clienttest.StartWakeWorker(t, wdrv, false)
	mark := w.Log.WaitClaimAfter(t, 0)

	pids := listenerPIDs(t, edrv)
	require.Len(t, pids, 1, "one listener connection, outside the pool")
	old := pids[0]
	var ok bool
	require.NoError(t, edrv.DB().QueryRow("SELECT pg_terminate_backend($1)", old).Scan(&ok))
	require.True(t, ok)

	var now []int64
	require.Eventually(t, func() bool {
		now = listenerPIDs(t, edrv)
		return len(now) == 1 && now[0] != old
	}, 20*time.Second, 10*time.Millisecond, "the listener was not re-established")
	t.Logf("listener backend %d terminated, re-established as %d", old, now[0])
	// The reconnected listener wakes the producer once (jobs may have been
	// enqueued while no one listened); after that claim the next poll is a
	// full interval away.
	w.Log.WaitClaimAfter(t, mark)

	enq, err := lockstep.NewClient(edrv, lockstep.Config{})
	require.NoError(t, err)
	began := time.Now()
	idRes, err := enq.Insert(ctx, clienttest.WakeArgs{N: 1}, nil)
	require.NoError(t, err)
	id := idRes.ID
	took := w.WaitStarted(t, id, began)
	t.Logf("after the reconnect a job enqueued elsewhere started in %s (poll interval %s)", took.Round(time.Microsecond), clienttest.NotifyPollInterval)
}

// TestWithoutNotify: an enqueuer whose driver sends no wake-ups leaves the
// job to the worker's poll, though the worker listens — the sending half of
// the conformance test's DisableNotify control.
func TestWithoutNotify(t *testing.T) {
	ctx := context.Background()
	wdrv, edrv := openTwo(t)
	w := clienttest.StartWakeWorker(t, wdrv, false)
	w.Log.WaitClaimAfter(t, 0)
	require.Len(t, listenerPIDs(t, edrv), 1)

	enq, err := lockstep.NewClient(edrv.WithoutNotify(), lockstep.Config{})
	require.NoError(t, err)
	idRes, err := enq.Insert(ctx, clienttest.WakeArgs{N: 1}, nil)
	require.NoError(t, err)
	id := idRes.ID
	time.Sleep(500 * time.Millisecond)
	require.False(t, w.Started(id), "the job started before the poll though no wake-up was sent")

	// The same enqueuer with wake-ups on: at once.
	enq, err = lockstep.NewClient(edrv, lockstep.Config{})
	require.NoError(t, err)
	began := time.Now()
	id2Res, err := enq.Insert(ctx, clienttest.WakeArgs{N: 2}, nil)
	require.NoError(t, err)
	id2 := id2Res.ID
	w.WaitStarted(t, id2, began)
	// The woken claim takes the older job too: it starts within the poll
	// interval as well (the two start on separate goroutines, in either
	// order, so it is waited for rather than checked at once).
	w.WaitStarted(t, id, began)
}

// TestNotifyCooldown: one driver wakes a queue's listeners at most once per
// cooldown, and a batch wakes each of its queues once.
func TestNotifyCooldown(t *testing.T) {
	ctx := context.Background()
	_, edrv := openTwo(t)
	l, err := edrv.Listen(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close(context.Background()) })

	slow := edrv.WithNotifyCooldown(time.Hour)
	enq, err := lockstep.NewClient(slow, lockstep.Config{})
	require.NoError(t, err)
	_, err = enq.InsertMany(ctx, []lockstep.InsertManyParams{
		{Args: clienttest.WakeArgs{N: 1}, Opts: &lockstep.InsertOpts{Queue: "a"}},
		{Args: clienttest.WakeArgs{N: 2}, Opts: &lockstep.InsertOpts{Queue: "b"}},
		{Args: clienttest.WakeArgs{N: 3}, Opts: &lockstep.InsertOpts{Queue: "a"}},
		{Args: clienttest.WakeArgs{N: 4}, Opts: &lockstep.InsertOpts{Queue: "later", Delay: time.Hour}},
	})
	require.NoError(t, err)
	_, err = enq.Insert(ctx, clienttest.WakeArgs{N: 5}, &lockstep.InsertOpts{Queue: "a"}) // within the cooldown
	require.NoError(t, err)
	_, err = enq.Insert(ctx, clienttest.WakeArgs{N: 6}, &lockstep.InsertOpts{Queue: "c"})
	require.NoError(t, err)

	var got []string
	for len(got) < 3 {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		q, err := l.Wait(wctx)
		cancel()
		require.NoError(t, err, "wake-ups so far: %v", got)
		got = append(got, q)
	}
	require.ElementsMatch(t, []string{"a", "b", "c"}, got)
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	q, err := l.Wait(wctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "an extra wake-up for %q", q)
}
