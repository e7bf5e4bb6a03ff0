package throughput

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/lab/planguard"
)

// retainChunk is how many finished jobs one statement of retain inserts.
const retainChunk = 100_000

// retainer is a system that can put finished jobs in its table before a
// run: the table of a queue that keeps its history (Config.Retained).
type retainer interface {
	// retain inserts n jobs finished an hour ago — inside either system's
	// retention, so that nothing deletes them during the run — on the
	// benchmark's queue, then refreshes the table's statistics (and on
	// PostgreSQL its visibility map) as autovacuum would have by then.
	retain(ctx context.Context, n int) error
}

func (l *lockstepInstance) retain(ctx context.Context, n int) error {
	return planguard.AppendDone(ctx, l.drv, lockstep.DefaultQueue, noopArgs{}.Kind(), n)
}

func (r *riverInstance) retain(ctx context.Context, n int) error {
	for n > 0 {
		k := min(n, retainChunk)
		if _, err := r.pool.Exec(ctx, "INSERT INTO river_job (args, attempt, attempted_at, created_at, finalized_at, kind, max_attempts, priority, queue, state, scheduled_at)"+
			" SELECT '{}', 1, t, t, t, 'benchmark', 25, 1, $1, 'completed', t FROM generate_series(1, $2::int), (SELECT now() - interval '1 hour' AS t) x",
			river.QueueDefault, k); err != nil {
			return err
		}
		n -= k
	}
	_, err := r.pool.Exec(ctx, "VACUUM (ANALYZE) river_job")
	return err
}

// retainFor fills inst's table with cfg.Retained finished jobs, when set.
func retainFor(ctx context.Context, cfg *Config, system string, inst instance) error {
	if cfg.Retained <= 0 {
		return nil
	}
	r, ok := inst.(retainer)
	if !ok {
		return fmt.Errorf("%s: --retained is not supported", system)
	}
	began := time.Now()
	if err := r.retain(ctx, cfg.Retained); err != nil {
		return fmt.Errorf("%s: retain %d finished jobs: %w", system, cfg.Retained, err)
	}
	cfg.logger().Info("throughput: finished jobs retained", "system", system, "jobs", cfg.Retained, "took", time.Since(began).Round(time.Second))
	return nil
}
