package floor

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/migrate"
)

// MySQL searches the floor on the MariaDB (or MySQL 8) database dsn names
// (a go-sql-driver DSN), creating lockstep's schema there if it is missing.
// The loops use the pool of lockstep's driver, which makes READ COMMITTED
// the session default, but none of its statements: every statement is
// plain text without parameters, so each is one round trip.
func MySQL(ctx context.Context, dsn string, o Options) (*Result, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	drv, err := mysql.Open(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	defer drv.Close()
	m, err := migrate.New(drv)
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	if _, err := m.Up(ctx); err != nil {
		return nil, fmt.Errorf("floor: migrate: %w", err)
	}
	db := drv.DB()
	db.SetMaxIdleConns(slices.Max(o.Concurrency) + 1)
	r := &Result{Database: "mysql"}
	if drv.MariaDB() {
		r.Database = "mariadb"
	}
	if r.Version, err = drv.Version(ctx); err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	r.Points, r.Best, err = search(ctx, &myStore{db: db}, o)
	if err != nil {
		return nil, err
	}
	return r, nil
}

type myStore struct {
	db *sql.DB
	mu sync.Mutex
	// inserts caches the INSERT statement of each batch size.
	inserts map[int]string
}

func (s *myStore) reset(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, "TRUNCATE TABLE lockstep_jobs"); err != nil {
		return fmt.Errorf("floor: truncate: %w", err)
	}
	return nil
}

const myNow = "UTC_TIMESTAMP(6)"

func (s *myStore) insert(ctx context.Context, n int) error {
	s.mu.Lock()
	q, ok := s.inserts[n]
	if !ok {
		row := "('" + queue + "', 'noop', '{}', 'PENDING', 25, " + myNow + ", '[]', " + myNow + ")"
		q = "INSERT INTO lockstep_jobs (queue, kind, args, status, max_attempts, available_at, error_history, created_at) VALUES " +
			strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
		if s.inserts == nil {
			s.inserts = map[int]string{}
		}
		s.inserts[n] = q
	}
	s.mu.Unlock()
	_, err := s.db.ExecContext(ctx, q)
	return err
}

// claim locks the ids SKIP LOCKED through the claim index in claim order,
// then updates them by primary key, in one short transaction.
func (s *myStore) claim(ctx context.Context, n int) (ids []int64, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, tx.Rollback())
		}
	}()
	rows, err := tx.QueryContext(ctx, fmt.Sprintf("SELECT id FROM lockstep_jobs FORCE INDEX (lockstep_jobs_claim)"+
		" WHERE queue = '"+queue+"' AND status = 'PENDING' AND available_at <= "+myNow+
		" ORDER BY priority, available_at, id LIMIT %d FOR UPDATE SKIP LOCKED", n))
	if err != nil {
		return nil, err
	}
	ids = make([]int64, 0, n)
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, tx.Rollback()
	}
	res, err := tx.ExecContext(ctx, "UPDATE lockstep_jobs FORCE INDEX (PRIMARY) SET status = 'RUNNING', attempts = attempts + 1, started_at = "+myNow+
		", heartbeat_at = "+myNow+" WHERE id IN ("+idList(ids)+")")
	if err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil || n != int64(len(ids)) {
		return nil, errors.Join(err, fmt.Errorf("claim updated %d of %d locked rows", n, len(ids)))
	}
	return ids, tx.Commit()
}

func (s *myStore) finish(ctx context.Context, ids []int64) (int64, error) {
	res, err := s.db.ExecContext(ctx, "UPDATE lockstep_jobs FORCE INDEX (PRIMARY) SET status = 'DONE', finished_at = "+myNow+
		", heartbeat_at = "+myNow+" WHERE id IN ("+idList(ids)+") AND status = 'RUNNING'")
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
