package lockstep_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/migrate"
)

type benchHistArgs struct{}

func (benchHistArgs) Kind() string { return "bench_hist" }

// BenchmarkHistoryCost runs the same workload — b.N no-op jobs enqueued in
// one batch, worked by one client with 20 workers — with the history
// rollup on (a flush every 100 ms, so the flushes run under the load
// rather than once at Stop) and off, on SQLite and PostgreSQL, and reports
// the time per job; the cost of history is the ratio of on to off
// (BENCHMARKS.md). Each run has a fresh database.
//
//	go test -run '^$' -bench BenchmarkHistoryCost -benchtime 5000x -count 5 .
func BenchmarkHistoryCost(b *testing.B) {
	for _, db := range []struct {
		name string
		open func(b *testing.B) driver.Driver
	}{
		{"sqlite", func(b *testing.B) driver.Driver {
			drv, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
			require.NoError(b, err)
			return drv
		}},
		{"postgres", func(b *testing.B) driver.Driver {
			drv, err := postgres.Open(context.Background(), testdb.Postgres(b))
			require.NoError(b, err)
			return drv
		}},
	} {
		for _, history := range []bool{false, true} {
			name := db.name + "/history=off"
			if history {
				name = db.name + "/history=on"
			}
			b.Run(name, func(b *testing.B) {
				ctx := context.Background()
				drv := db.open(b)
				defer drv.Close()
				m, err := migrate.New(drv)
				require.NoError(b, err)
				_, err = m.Up(ctx)
				require.NoError(b, err)
				var done atomic.Int64
				ws := lockstep.NewWorkers()
				lockstep.AddWorker(ws, lockstep.WorkFunc(func(ctx context.Context, j *lockstep.Job[benchHistArgs]) error {
					done.Add(1)
					return nil
				}))
				c, err := lockstep.NewClient(drv, lockstep.Config{
					Logger: slog.New(slog.DiscardHandler), Workers: ws,
					Queues:       map[string]lockstep.QueueConfig{"bench": {MaxWorkers: 20}},
					PollInterval: 20 * time.Millisecond, DisableHistory: !history, HistoryFlushInterval: 100 * time.Millisecond,
				})
				require.NoError(b, err)
				params := make([]lockstep.InsertManyParams, b.N)
				for i := range params {
					params[i] = lockstep.InsertManyParams{Args: benchHistArgs{}, Opts: &lockstep.InsertOpts{Queue: "bench"}}
				}
				for start := 0; start < len(params); start += 1000 {
					_, err := c.InsertMany(ctx, params[start:min(start+1000, len(params))])
					require.NoError(b, err)
				}
				b.ResetTimer()
				require.NoError(b, c.Start(ctx))
				for done.Load() < int64(b.N) {
					time.Sleep(time.Millisecond)
				}
				require.NoError(b, c.Stop(ctx))
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/job")
				if history {
					rows, err := c.History(ctx, lockstep.HistoryParams{Since: time.Now().Add(-time.Hour), Queue: "bench"})
					require.NoError(b, err)
					var n int64
					for _, r := range rows {
						n += r.Done
					}
					require.Equal(b, int64(b.N), n, "every job counted")
				}
			})
		}
	}
}
