package labcli

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/clitest"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/lab/chaos"
)

// finals samples how many jobs have ended, over time.
type finals struct {
	mu      sync.Mutex
	samples []finalSample
}

type finalSample struct {
	at time.Time
	n  int
}

func (f *finals) add(at time.Time, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.samples = append(f.samples, finalSample{at, n})
}

func (f *finals) last() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.samples) == 0 {
		return 0
	}
	return f.samples[len(f.samples)-1].n
}

// rate is the jobs ended per second between two instants, from the samples
// nearest them.
func (f *finals) rate(from, to time.Time) float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	at := func(t time.Time) finalSample {
		best := f.samples[0]
		for _, s := range f.samples {
			if !s.at.After(t) {
				best = s
			}
		}
		return best
	}
	a, b := at(from), at(to)
	if !b.at.After(a.at) {
		return 0
	}
	return float64(b.n-a.n) / b.at.Sub(a.at).Seconds()
}

// TestChaosGaleraNodeKill runs the chaos harness (four `lockstep work`
// processes, one killed with SIGKILL every 1–3 s, runs cancelled, workflows
// with callbacks) on a three-node Galera cluster through a DSN naming every
// node, and kills the node they all write through, mid-run, with SIGKILL;
// the processes' connections move to another node (each logs the move),
// the killed node is started again and rejoins, and the ledger, the status
// audit and the final rows must show every job DONE or CANCELLED once,
// none lost, none finished twice. The jobs ended per second before, during
// and after the node's absence are logged.
func TestChaosGaleraNodeKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cluster, err := testdb.StartGaleraCluster(ctx, testdb.ServerOptions{Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cluster.Close()) })
	dsns, err := cluster.NewDatabase(ctx)
	require.NoError(t, err)
	url, err := testdb.MultiHostURL(dsns)
	require.NoError(t, err)
	l := &clitest.CLI{T: t, Bin: clitest.Binary(t), DSN: url}
	require.Contains(t, l.OK("migrate", "up"), "schema is at version")

	// The counts are read through the last node, which is never killed.
	watch, err := sql.Open("mysql", dsns[2])
	require.NoError(t, err)
	t.Cleanup(func() { _ = watch.Close() })
	var f finals
	var watchErr atomic.Value // the latest failed count, for the failure message
	watchErr.Store("")
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		for watchCtx.Err() == nil {
			var n int
			if err := watch.QueryRowContext(watchCtx,
				"SELECT COUNT(*) FROM lockstep_jobs WHERE status IN ('DONE', 'CANCELLED')").Scan(&n); err == nil {
				f.add(time.Now(), n)
			} else {
				watchErr.Store(err.Error())
			}
			select {
			case <-watchCtx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()

	const jobs = 3000
	logDir := t.TempDir()
	if d := os.Getenv("LOCKSTEP_CHAOS_LOGDIR"); d != "" {
		logDir = d
	}
	type outcome struct {
		res *chaos.Result
		err error
	}
	done := make(chan outcome, 1)
	var ended atomic.Bool // chaos.Run returned
	var progress strings.Builder
	begin := time.Now()
	go func() {
		res, err := chaos.Run(ctx, chaos.Config{
			Binary:     l.Bin,
			DSN:        url,
			Env:        []string{"GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")},
			LogDir:     logDir,
			Jobs:       jobs,
			WorkMillis: 50,
			Seed:       21,
			Progress:   &progress,
		})
		ended.Store(true)
		done <- outcome{res, err}
	}()

	// Kill the writer once a fifth of the jobs have ended: synchronised on
	// the rows, not on time.
	waitFinals := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool { return f.last() >= n || ended.Load() }, 5*time.Minute, 50*time.Millisecond,
			"%d jobs ended (want %d; the count's latest error: %v); progress:\n%s", f.last(), n, watchErr.Load(), progress.String())
		if f.last() < n {
			out := <-done
			t.Fatalf("the chaos run ended before %d jobs had (%d counted; the count's latest error: %v): %v\n%v",
				n, f.last(), watchErr.Load(), out.err, out.res)
		}
	}
	waitFinals(jobs / 5)
	killed := time.Now()
	require.NoError(t, cluster.Node(0).Kill())
	// The cluster goes on without it: the other two keep their quorum.
	waitFinals(f.last() + jobs/5)
	restart := time.Now()
	require.NoError(t, cluster.StartNode(ctx, 0))
	rejoined := time.Now()

	out := <-done
	end := time.Now()
	stopWatch()
	if out.res != nil {
		t.Log(out.res.String())
	}
	require.NoError(t, out.err, "progress:\n%s", progress.String())
	require.Empty(t, out.res.Problems, "%d problems", out.res.ProblemCount)
	require.Equal(t, out.res.Jobs, out.res.Done+out.res.Cancelled, "every job, callbacks included, DONE or CANCELLED")
	require.Positive(t, out.res.Kills, "processes were killed too")

	// Every process that was writing through the killed node said where
	// it went.
	entries, err := os.ReadDir(logDir)
	require.NoError(t, err)
	moved := 0
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(logDir, e.Name()))
		require.NoError(t, err)
		if strings.Contains(string(b), "database connections moved to another host") {
			moved++
		}
	}
	require.Positive(t, moved, "a process logged its move to another node")
	t.Logf("Galera node kill: jobs ended per second before the kill %.0f, while the node was down %.0f, "+
		"while it rejoined %.0f (%v), after %.0f; %d process logs record a move to another node",
		f.rate(begin, killed), f.rate(killed, restart), f.rate(restart, rejoined), rejoined.Sub(restart).Round(time.Millisecond),
		f.rate(rejoined, end), moved)
}
