package planguard

import (
	"context"
	"fmt"

	"github.com/lockstep-queue/lockstep/driver"
)

// appendChunk is how many jobs one statement of AppendDone inserts.
const appendChunk = 100_000

// AppendDone inserts n DONE jobs of queue and kind, finished an hour ago,
// after every existing job, generated on the server appendChunk to a
// statement, then refreshes the table's statistics (and on PostgreSQL its
// visibility map) as autovacuum would have: the table of a queue that
// keeps its history. The dashboard's benchmark and lockstep-bench's
// --retained both fill tables with it.
func AppendDone(ctx context.Context, drv driver.Driver, queue, kind string, n int) error {
	var q, settle string
	switch d := drv.Dialect(); d {
	case "postgres":
		q = "INSERT INTO lockstep_jobs (queue, kind, args, status, attempts, max_attempts, available_at, started_at, heartbeat_at, finished_at, created_at)" +
			" SELECT $1, $2, '{}', 'DONE', 1, 25, t, t, t, t, t FROM generate_series(1, $3::int), (SELECT now() - interval '1 hour' AS t) x"
		settle = "VACUUM (ANALYZE) lockstep_jobs"
	case "mysql":
		q = "INSERT INTO lockstep_jobs (queue, kind, args, status, attempts, max_attempts, available_at, started_at, heartbeat_at, finished_at, created_at, error_history)" +
			" SELECT ?, ?, '{}', 'DONE', 1, 25, t, t, t, t, t, '[]' FROM " + numbers(appendChunk) +
			", (SELECT UTC_TIMESTAMP(6) - INTERVAL 1 HOUR AS t) x WHERE n <= ?"
		settle = "ANALYZE TABLE lockstep_jobs"
	default:
		return fmt.Errorf("planguard: AppendDone is for PostgreSQL and the MySQL family, not %s", d)
	}
	for n > 0 {
		k := min(n, appendChunk)
		if _, err := drv.DB().ExecContext(ctx, q, queue, kind, k); err != nil {
			return fmt.Errorf("planguard: append %d DONE jobs: %w", k, err)
		}
		n -= k
	}
	_, err := drv.DB().ExecContext(ctx, settle)
	return err
}
