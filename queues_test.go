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
)

type gateArgs struct{}

func (gateArgs) Kind() string { return "gate" }

// gatedWorkers runs "gate" jobs that wait for release; running counts them.
func gatedWorkers(running *atomic.Int64, release <-chan struct{}) *lockstep.Workers {
	ws := lockstep.NewWorkers()
	lockstep.AddWorker(ws, lockstep.WorkFunc(func(ctx context.Context, _ *lockstep.Job[gateArgs]) error {
		running.Add(1)
		defer running.Add(-1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}))
	return ws
}

// TestPauseQueue: on each database, a pause set by one process reaches the
// two others that serve the queue within a second; while paused they take
// none of its jobs (checked on a producer turn taken after the enqueue,
// not by waiting); once resumed they run them all, each claimed after the
// resume.
func TestPauseQueue(t *testing.T) {
	forEachDialectN(t, 3, func(t *testing.T, drvs []driver.Driver) {
		ctx := context.Background()
		admin := quietClient(t, drvs[0], lockstep.Config{})
		release := make(chan struct{})
		close(release)
		var running atomic.Int64
		type seen struct {
			kind lockstep.EventKind
			at   time.Time
		}
		var workers []*lockstep.Client
		events := make([]chan seen, 2)
		for i := range 2 {
			events[i] = make(chan seen, 16)
			ch := events[i]
			w := quietClient(t, drvs[i+1], lockstep.Config{
				Workers: gatedWorkers(&running, release),
				Queues:  map[string]lockstep.QueueConfig{"q": {MaxWorkers: 4}},
				OnEvent: func(e lockstep.Event) {
					if e.Kind == lockstep.EventQueuePaused || e.Kind == lockstep.EventQueueResumed {
						ch <- seen{e.Kind, time.Now()}
					}
				},
			})
			require.NoError(t, w.Start(ctx))
			t.Cleanup(func() { _ = w.Stop(context.Background()) })
			workers = append(workers, w)
		}

		pausedAt := time.Now()
		require.NoError(t, admin.PauseQueue(ctx, "q"))
		for i := range workers {
			select {
			case s := <-events[i]:
				require.Equal(t, lockstep.EventQueuePaused, s.kind)
				require.Less(t, s.at.Sub(pausedAt), time.Second, "worker %d saw the pause late", i)
				t.Logf("worker %d saw the pause %s after PauseQueue was called", i, s.at.Sub(pausedAt).Round(time.Millisecond))
			case <-time.After(10 * time.Second):
				t.Fatalf("worker %d never saw the pause", i)
			}
		}
		settings, err := admin.ListQueueSettings(ctx)
		require.NoError(t, err)
		require.Len(t, settings, 1)
		require.False(t, settings[0].Paused.IsZero())

		var ids []int64
		for _, w := range workers {
			idRes, err := w.Insert(ctx, gateArgs{}, &lockstep.InsertOpts{Queue: "q"})
			require.NoError(t, err)
			id := idRes.ID
			ids = append(ids, id)
		}
		for _, w := range workers {
			w.WaitProducerTurn(t, "q")
		}
		for _, id := range ids {
			j, err := admin.Job(ctx, id)
			require.NoError(t, err)
			require.Equal(t, lockstep.StatusPending, j.Status, "job %d was claimed from a paused queue", id)
		}

		require.NoError(t, admin.ResumeQueue(ctx, "q"))
		settings, err = admin.ListQueueSettings(ctx)
		require.NoError(t, err)
		require.True(t, settings[0].Paused.IsZero())
		resumed := settings[0].UpdatedAt
		eventually(t, 10*time.Second, "the jobs to run after the resume", func() bool {
			for _, id := range ids {
				j, err := admin.Job(ctx, id)
				require.NoError(t, err)
				if j.Status != lockstep.StatusDone {
					return false
				}
			}
			return true
		})
		for _, id := range ids {
			j, err := admin.Job(ctx, id)
			require.NoError(t, err)
			require.False(t, j.StartedAt.Before(resumed), "job %d started %s, before the resume at %s", id, j.StartedAt, resumed)
		}
	})
}

// TestQueueMaxWorkers: on each database, a runtime cap set through another
// client lowers and raises how many of the queue's jobs a process runs,
// and clearing it restores the configured number.
func TestQueueMaxWorkers(t *testing.T) {
	forEachDialectN(t, 2, func(t *testing.T, drvs []driver.Driver) {
		ctx := context.Background()
		admin := quietClient(t, drvs[0], lockstep.Config{})
		require.NoError(t, admin.SetQueueMaxWorkers(ctx, "q", 1))
		release := make(chan struct{})
		var once sync.Once
		t.Cleanup(func() { once.Do(func() { close(release) }) })
		var running atomic.Int64
		w := quietClient(t, drvs[1], lockstep.Config{
			Workers: gatedWorkers(&running, release),
			Queues:  map[string]lockstep.QueueConfig{"q": {MaxWorkers: 4}},
		})
		for range 6 {
			_, err := admin.Insert(ctx, gateArgs{}, &lockstep.InsertOpts{Queue: "q"})
			require.NoError(t, err)
		}
		require.NoError(t, w.Start(ctx))
		t.Cleanup(func() { _ = w.Stop(context.Background()) })
		eventually(t, 10*time.Second, "one job to run", func() bool { return running.Load() == 1 })
		w.WaitProducerTurn(t, "q")
		require.EqualValues(t, 1, running.Load(), "the cap of 1 was exceeded")
		require.Equal(t, 1, countJobs(t, drvs[0], "status", "RUNNING"))

		require.NoError(t, admin.SetQueueMaxWorkers(ctx, "q", 3))
		eventually(t, 10*time.Second, "three jobs to run", func() bool { return running.Load() == 3 })
		w.WaitProducerTurn(t, "q")
		require.EqualValues(t, 3, running.Load())

		require.NoError(t, admin.SetQueueMaxWorkers(ctx, "q", 0))
		eventually(t, 10*time.Second, "the configured four to run", func() bool { return running.Load() == 4 })
		w.WaitProducerTurn(t, "q")
		require.EqualValues(t, 4, running.Load())
		settings, err := admin.ListQueueSettings(ctx)
		require.NoError(t, err)
		require.Equal(t, 0, settings[0].MaxWorkers)

		err = admin.SetQueueMaxWorkers(ctx, "q", 10001)
		require.ErrorIs(t, err, lockstep.ErrInvalidQueueSetting)
		require.ErrorContains(t, err, "max workers must be between 0 (clear) and 10000, got 10001")
		err = admin.PauseQueue(ctx, "")
		require.ErrorIs(t, err, lockstep.ErrInvalidQueueSetting)
		require.ErrorContains(t, err, "queue name is empty")
		once.Do(func() { close(release) })
	})
}
