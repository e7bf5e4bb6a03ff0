package floor

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/migrate"
)

// queue is the queue the floor's rows are on.
const queue = "floor"

// Postgres searches the floor on the PostgreSQL database dsn names
// (a postgres:// URL), creating lockstep's schema there if it is missing.
// The loops use a pgx pool of their own, not lockstep's client.
func Postgres(ctx context.Context, dsn string, o Options) (*Result, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if err := migratePostgres(ctx, dsn); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	// The same planner settings as lockstep's own pool: on a table emptied
	// before every point the statistics would otherwise favour a scan.
	for k, v := range postgres.PlannerSettings() {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
	cfg.MaxConns = int32(slices.Max(o.Concurrency) + 1)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	defer pool.Close()
	r := &Result{Database: "postgres"}
	if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&r.Version); err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	r.Points, r.Best, err = search(ctx, pgStore{pool}, o)
	if err != nil {
		return nil, err
	}
	return r, nil
}

func migratePostgres(ctx context.Context, dsn string) error {
	drv, err := postgres.Open(ctx, dsn)
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	defer drv.Close()
	m, err := migrate.New(drv)
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	if _, err := m.Up(ctx); err != nil {
		return fmt.Errorf("floor: migrate: %w", err)
	}
	return nil
}

type pgStore struct{ pool *pgxpool.Pool }

func (s pgStore) reset(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, "TRUNCATE lockstep_jobs"); err != nil {
		return fmt.Errorf("floor: truncate: %w", err)
	}
	_, err := s.pool.Exec(ctx, "ANALYZE lockstep_jobs")
	return err
}

// The rows are made on the server: the floor is the database's writes, not
// the client's encoding of arguments.
const pgInsert = "INSERT INTO lockstep_jobs (queue, kind, args, status, max_attempts)" +
	" SELECT '" + queue + "', 'noop', '{}', 'PENDING', 25 FROM generate_series(1, $1)"

func (s pgStore) insert(ctx context.Context, n int) error {
	_, err := s.pool.Exec(ctx, pgInsert, n)
	return err
}

// pgClaim is one statement: the ids are locked SKIP LOCKED through the
// claim index in claim order, then updated by primary key.
const pgClaim = "UPDATE lockstep_jobs SET status = 'RUNNING', attempts = attempts + 1, started_at = now(), heartbeat_at = now()" +
	" WHERE id = ANY(ARRAY(SELECT id FROM lockstep_jobs WHERE queue = '" + queue + "' AND status = 'PENDING' AND available_at <= now()" +
	" ORDER BY priority, available_at, id LIMIT $1 FOR UPDATE SKIP LOCKED)) RETURNING id"

func (s pgStore) claim(ctx context.Context, n int) ([]int64, error) {
	rows, err := s.pool.Query(ctx, pgClaim, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ids := make([]int64, 0, n)
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

const pgFinish = "UPDATE lockstep_jobs SET status = 'DONE', finished_at = now(), heartbeat_at = now() WHERE id = ANY($1) AND status = 'RUNNING'"

func (s pgStore) finish(ctx context.Context, ids []int64) (int64, error) {
	tag, err := s.pool.Exec(ctx, pgFinish, ids)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}
