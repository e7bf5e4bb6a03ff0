package lockstep

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/migrate"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// TestCompleterGathersWhileBusy: a completer whose last batch held more
// than one DONE holds the next one until CompleteBatchWait has passed, the
// batch is full or the client stops — and an idle one writes at once. The
// wait here is an hour, so every write the test sees was made by the full
// batch or the stop, never by the clock.
func TestCompleterGathersWhileBusy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	drv := migratedSQLite(t)
	c, err := NewClient(drv, Config{CompleteBatchWait: time.Hour})
	require.NoError(t, err)

	const n = 2 + maxCompleteBatch + 1
	in := make([]driver.JobInsertParams, n)
	for i := range in {
		in[i] = driver.JobInsertParams{Queue: "q", Kind: "k", Args: []byte("{}"), MaxAttempts: 1}
	}
	_, err = c.exec.JobInsertMany(ctx, in)
	require.NoError(t, err)
	jobs, err := c.exec.JobClaim(ctx, &driver.JobClaimParams{Queue: "q", Max: n})
	require.NoError(t, err)
	require.Len(t, jobs, n)

	p := newCompleter(c)
	written := make(chan int64, n)
	enqueue := func(j *rowtype.JobRow) {
		p.enqueue(driver.JobRef{ID: j.ID, Attempt: j.Attempts}, func(wrote bool, err error) {
			if err == nil && wrote {
				written <- j.ID
			} else {
				written <- -j.ID
			}
		})
	}
	receive := func(k int) []int64 {
		t.Helper()
		var got []int64
		for range k {
			select {
			case id := <-written:
				require.Positive(t, id, "job %d was not written", -id)
				got = append(got, id)
			case <-time.After(30 * time.Second):
				t.Fatalf("%d of %d DONEs reported", len(got), k)
			}
		}
		return got
	}

	// Idle: the first batch (two DONEs queued before the completer runs)
	// is written at once.
	enqueue(jobs[0])
	enqueue(jobs[1])
	go p.run()
	receive(2)

	// Busy: the next DONEs wait for a full batch.
	for _, j := range jobs[2 : 2+maxCompleteBatch-1] {
		enqueue(j)
	}
	require.Empty(t, written, "a batch short of full was written within the hour's wait")
	for _, id := range []int64{jobs[2].ID, jobs[2+maxCompleteBatch-2].ID} {
		j, err := c.exec.JobGet(ctx, id)
		require.NoError(t, err)
		require.Equal(t, rowtype.StatusRunning, j.Status)
	}
	enqueue(jobs[2+maxCompleteBatch-1])
	require.Len(t, receive(maxCompleteBatch), maxCompleteBatch)

	// Still busy: the last DONE waits, and is written when the client
	// stops.
	enqueue(jobs[n-1])
	require.Empty(t, written)
	p.stop()
	require.Equal(t, []int64{jobs[n-1].ID}, receive(1))
	for _, j := range jobs {
		got, err := c.exec.JobGet(ctx, j.ID)
		require.NoError(t, err)
		require.Equal(t, rowtype.StatusDone, got.Status)
	}
}

// migratedSQLite opens a fresh, migrated SQLite database for the package's
// internal tests.
func migratedSQLite(t *testing.T) driver.Driver {
	t.Helper()
	drv, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "q.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	m, err := migrate.New(drv)
	require.NoError(t, err)
	_, err = m.Up(context.Background())
	require.NoError(t, err)
	return drv
}

// TestHeartbeatCoversAResultBeingWritten: a job whose worker has returned
// is heartbeated, once its result has waited a heartbeat interval, until
// the result is written — a DONE waiting in the completer's batch on a
// busy database must not let the job look dead to another process's
// reaper — and a heartbeat that finds such a job gone (its own DONE
// committed first) cancels nothing, where it cancels a job still running.
func TestHeartbeatCoversAResultBeingWritten(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	drv := migratedSQLite(t)
	ws := NewWorkers()
	AddWorker(ws, WorkFunc(func(ctx context.Context, _ *Job[aheadArgs]) error { return nil }))
	c, err := NewClient(drv, Config{Workers: ws, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	in := make([]driver.JobInsertParams, 3)
	for i := range in {
		in[i] = driver.JobInsertParams{Queue: DefaultQueue, Kind: aheadArgs{}.Kind(), Args: []byte("{}"), MaxAttempts: 3}
	}
	_, err = c.exec.JobInsertMany(ctx, in)
	require.NoError(t, err)
	jobs, err := c.exec.JobClaim(ctx, &driver.JobClaimParams{Queue: DefaultQueue, Max: 3})
	require.NoError(t, err)
	require.Len(t, jobs, 3)
	// Every heartbeat an hour old: what a reaper sees of a job nobody
	// refreshes.
	_, err = drv.DB().ExecContext(ctx, "UPDATE lockstep_jobs SET heartbeat_at = ?", time.Now().Add(-time.Hour).UTC().Format("2006-01-02 15:04:05.000000"))
	require.NoError(t, err)

	// Job 0: its worker returns; its DONE waits in a completer that does
	// not write yet.
	c.completer = newCompleter(c)
	c.execute(c.claim(ctx, jobs[0]))
	// Job 1: its worker has returned, and its DONE is committed (by
	// another write) before the heartbeat. Job 2: still running, and its
	// row finished elsewhere (as a cancel or a reap would leave it).
	done1, running2 := c.claim(ctx, jobs[1]), c.claim(ctx, jobs[2])
	c.finishing(jobs[1].ID, jobs[1].Attempts)
	written, err := c.exec.JobCompleteMany(ctx, []driver.JobRef{{ID: jobs[1].ID, Attempt: jobs[1].Attempts}, {ID: jobs[2].ID, Attempt: jobs[2].Attempts}})
	require.NoError(t, err)
	require.Len(t, written, 2)

	// A result younger than a heartbeat interval is left to its write.
	c.Heartbeat(ctx)
	j, err := c.exec.JobGet(ctx, jobs[0].ID)
	require.NoError(t, err)
	require.Equal(t, rowtype.StatusRunning, j.Status, "its DONE still waits")
	require.Less(t, j.HeartbeatAt, time.Now().Add(-time.Minute), "a young result's job was heartbeated")
	require.ErrorIs(t, context.Cause(running2.ctx), ErrJobLost, "a running job found gone is cancelled")

	// Results that have waited longer are heartbeated.
	c.mu.Lock()
	for _, j := range jobs[:2] {
		c.running[j.ID].finishingSince = time.Now().Add(-time.Hour)
	}
	c.mu.Unlock()
	c.Heartbeat(ctx)
	j, err = c.exec.JobGet(ctx, jobs[0].ID)
	require.NoError(t, err)
	require.Equal(t, rowtype.StatusRunning, j.Status, "its DONE still waits")
	require.WithinDuration(t, time.Now(), j.HeartbeatAt, time.Minute, "the heartbeat refreshed the job whose result waits")
	reaped, err := c.Reap(ctx)
	require.NoError(t, err)
	require.Empty(t, reaped, "a job whose result waits is not reaped")
	require.NoError(t, context.Cause(done1.ctx), "a finishing job found gone is not cancelled")

	// The DONE is written: the job is untracked, its later heartbeats
	// leave it be.
	c.completer.write([]*completion{<-c.completer.in})
	j, err = c.exec.JobGet(ctx, jobs[0].ID)
	require.NoError(t, err)
	require.Equal(t, rowtype.StatusDone, j.Status)
	c.mu.Lock()
	_, tracked := c.running[jobs[0].ID]
	c.mu.Unlock()
	require.False(t, tracked, "untracked once its result is written")
}
