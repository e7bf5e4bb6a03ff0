package lockstep_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/clienttest"
)

// holders detects a job held by two workers at once, across clients.
type holders struct {
	mu      sync.Mutex
	holding map[int64]string
	overlap atomic.Int64
}

func (h *holders) enter(id int64, who string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, busy := h.holding[id]; busy {
		h.overlap.Add(1)
	}
	h.holding[id] = who
}

func (h *holders) leave(id int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.holding, id)
}

// testThreeClients is three clients, as three processes would be, with 8
// workers each, draining 5,000 jobs: every job DONE exactly once, no job
// held by two workers at once.
func testThreeClients(t *testing.T, newDriver Factory) {
	const jobs, clients, workers = 5000, 3, 8
	ctx := context.Background()
	drv, open := setupOpener(t, newDriver)
	createLedger(t, drv)
	h := &holders{holding: map[int64]string{}}
	var executions atomic.Int64
	// runs records every execution by job, so that a job run twice can be
	// named with its attempts and final row when the count is off.
	var runsMu sync.Mutex
	runs := map[int64][]string{}

	enq, err := lockstep.NewClient(drv, lockstep.Config{})
	require.NoError(t, err)
	params := make([]lockstep.InsertManyParams, jobs)
	for i := range params {
		params[i] = lockstep.InsertManyParams{Args: ledgerArgs{N: i}}
	}
	idsRes, err := enq.InsertMany(ctx, params)
	require.NoError(t, err)
	ids := insertedIDs(idsRes)
	require.Len(t, ids, jobs)

	for i := 0; i < clients; i++ {
		// Each client has its own driver (its own pool), as a process would.
		own := open(t)
		who := fmt.Sprintf("client-%d", i)
		ws := lockstep.NewWorkers()
		lockstep.AddWorker(ws, lockstep.WorkFunc(func(ctx context.Context, j *lockstep.Job[ledgerArgs]) error {
			h.enter(j.ID, who)
			defer h.leave(j.ID)
			executions.Add(1)
			runsMu.Lock()
			runs[j.ID] = append(runs[j.ID], fmt.Sprintf("%s@attempt%d", who, j.Attempts))
			runsMu.Unlock()
			return insertLedger(ctx, own, j.ID, j.Attempts, who)
		}))
		cfg := clienttest.FastConfig(ws)
		cfg.Queues = map[string]lockstep.QueueConfig{lockstep.DefaultQueue: {MaxWorkers: workers}}
		cfg.ReapAfter = time.Minute // no job may be reaped in this test
		clienttest.StartClient(t, own, cfg)
	}
	eventually(t, 3*time.Minute, "all jobs DONE", func() bool {
		return countWhere(t, drv, "status = ?", "DONE") == jobs
	})
	require.Zero(t, h.overlap.Load(), "a job was held by two workers at once")
	if n := executions.Load(); n != jobs {
		runsMu.Lock()
		for id, by := range runs {
			if len(by) > 1 {
				row, err := drv.Executor().JobGet(ctx, id)
				require.NoError(t, err)
				t.Errorf("job %d ran %d times (%v); now %s at attempt %d, errors %v", id, len(by), by, row.Status, row.Attempts, row.Errors)
			}
		}
		runsMu.Unlock()
		t.Fatalf("%d executions for %d jobs: every job must run exactly once", n, jobs)
	}
	var rows, distinct int
	require.NoError(t, drv.DB().QueryRow("SELECT COUNT(*), COUNT(DISTINCT job_id) FROM test_ledger").Scan(&rows, &distinct))
	require.Equal(t, jobs, rows, "one ledger row per job")
	require.Equal(t, jobs, distinct)
	require.Equal(t, jobs, countWhere(t, drv, "attempts = 1"), "no job needed a second attempt")
	var per [clients]int
	r, err := drv.DB().Query("SELECT worker, COUNT(*) FROM test_ledger GROUP BY worker")
	require.NoError(t, err)
	defer r.Close()
	for r.Next() {
		var w string
		var n int
		require.NoError(t, r.Scan(&w, &n))
		var i int
		_, err := fmt.Sscanf(w, "client-%d", &i)
		require.NoError(t, err)
		per[i] = n
	}
	require.NoError(t, r.Err())
	t.Logf("jobs per client: %v", per)
}

// TestThreeClients: three clients on three pools share one database, on
// every driver.
func TestThreeClients(t *testing.T) { forEachClientFactory(t, testThreeClients) }
