package throughput

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"
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
	var q, settle string
	switch d := l.drv.Dialect(); d {
	case "postgres":
		q = "INSERT INTO lockstep_jobs (queue, kind, args, status, attempts, max_attempts, available_at, started_at, heartbeat_at, finished_at, created_at)" +
			" SELECT 'default', 'benchmark', '{}', 'DONE', 1, 25, t, t, t, t, t FROM generate_series(1, %d), (SELECT now() - interval '1 hour' AS t) x"
		settle = "VACUUM (ANALYZE) lockstep_jobs"
	case "mysql":
		q = "INSERT INTO lockstep_jobs (queue, kind, args, status, attempts, max_attempts, available_at, started_at, heartbeat_at, finished_at, created_at, error_history)" +
			" SELECT 'default', 'benchmark', '{}', 'DONE', 1, 25, t, t, t, t, t, '[]' FROM " + digitRows(5) +
			", (SELECT UTC_TIMESTAMP(6) - INTERVAL 1 HOUR AS t) x LIMIT %d"
		settle = "ANALYZE TABLE lockstep_jobs"
	default:
		return fmt.Errorf("--retained is for the PostgreSQL and MySQL-family systems, not %s", d)
	}
	for n > 0 {
		k := min(n, retainChunk)
		if _, err := l.sqlDB.ExecContext(ctx, fmt.Sprintf(q, k)); err != nil {
			return err
		}
		n -= k
	}
	_, err := l.sqlDB.ExecContext(ctx, settle)
	return err
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

// digitRows is a derived table of 10^n rows, digits cross-joined: MySQL
// and MariaDB alike (MariaDB's seq_1_to_N engine does not exist on MySQL).
func digitRows(n int) string {
	const digits = "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4" +
		" UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("%s d%d", digits, i)
	}
	return strings.Join(parts, ", ")
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
