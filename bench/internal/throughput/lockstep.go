package throughput

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/migrate"
)

// noopArgs is the payload of every benchmark job, the same shape as River's
// own benchmark jobs.
type noopArgs struct {
	Num int `json:"num"`
}

func (noopArgs) Kind() string { return "benchmark" }

// LockstepPollInterval and LockstepMinPollInterval mirror the fetch
// settings River's own benchmark gives River (FetchPollInterval 20ms,
// FetchCooldown 2ms).
const (
	LockstepPollInterval    = 20 * time.Millisecond
	LockstepMinPollInterval = 2 * time.Millisecond
)

type lockstepInstance struct {
	drv     driver.Driver
	sqlDB   *sql.DB
	client  *lockstep.Client
	logger  *slog.Logger
	workers int
	batch   int
	onDone  func()
	claims  claimCounter
	num     int
	cleanup func()
}

// openLockstep opens lockstep's driver on a fresh database (dialect
// "postgres", "mysql" or "sqlite"; for SQLite dsn is a file path) and
// migrates it.
func openLockstep(ctx context.Context, dialect, dsn string, cfg *Config) (*lockstepInstance, error) {
	var drv driver.Driver
	var sqlDB *sql.DB
	switch dialect {
	case "postgres":
		d, err := postgres.Open(ctx, withPoolConns(dsn, cfg.PGPoolConns))
		if err != nil {
			return nil, err
		}
		drv, sqlDB = d, d.DB()
	case "mysql":
		d, err := mysql.Open(ctx, dsn)
		if err != nil {
			return nil, err
		}
		drv, sqlDB = d, d.DB()
	case "sqlite":
		d, err := sqlite.Open(ctx, dsn)
		if err != nil {
			return nil, err
		}
		drv, sqlDB = d, d.DB()
	default:
		return nil, fmt.Errorf("unknown dialect %q", dialect)
	}
	m, err := migrate.New(drv)
	if err != nil {
		_ = drv.Close()
		return nil, err
	}
	if _, err := m.Up(ctx); err != nil {
		_ = drv.Close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	l := &lockstepInstance{drv: drv, sqlDB: sqlDB, logger: cfg.clientLogger(), workers: cfg.Workers, batch: cfg.BatchSize}
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(context.Context, *lockstep.Job[noopArgs]) error { return nil }))
	l.client, err = lockstep.NewClient(drv, lockstep.Config{
		Workers:           workers,
		Queues:            map[string]lockstep.QueueConfig{lockstep.DefaultQueue: {MaxWorkers: cfg.Workers}},
		Logger:            l.logger,
		PollInterval:      LockstepPollInterval,
		MinPollInterval:   LockstepMinPollInterval,
		CompleteBatchWait: cfg.CompleteBatchWait,
		// EventJobFinished is emitted after the finish statement has
		// committed; Discarded means the fence rejected the result.
		OnEvent: func(e lockstep.Event) {
			if e.Kind == lockstep.EventClaimed {
				l.claims.add(e.Took)
			}
			if e.Kind == lockstep.EventJobFinished && e.Status == lockstep.StatusDone && !e.Discarded && l.onDone != nil {
				l.onDone()
			}
		},
	})
	if err != nil {
		_ = drv.Close()
		return nil, err
	}
	return l, nil
}

// newLockstepSQLite creates a temp directory for a fresh SQLite file.
func newLockstepSQLite(ctx context.Context, cfg *Config) (*lockstepInstance, error) {
	dir, err := os.MkdirTemp("", "lockstep-bench-sqlite-")
	if err != nil {
		return nil, err
	}
	l, err := openLockstep(ctx, "sqlite", filepath.Join(dir, "bench.db"), cfg)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	l.cleanup = func() { _ = os.RemoveAll(dir) }
	return l, nil
}

func (l *lockstepInstance) insert(ctx context.Context, n int) error {
	params := make([]lockstep.InsertManyParams, 0, min(n, l.batch))
	for n > 0 {
		k := min(n, l.batch)
		params = params[:0]
		for range k {
			l.num++
			params = append(params, lockstep.InsertManyParams{Args: noopArgs{Num: l.num}})
		}
		if _, err := l.client.InsertMany(ctx, params); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// parkedQueue is a queue no benchmark worker serves.
const parkedQueue = "parked"

// insertWaiting adds n WAITING jobs: one run, a root on the parked queue
// and n jobs on the benchmark's queue that depend on it.
func (l *lockstepInstance) insertWaiting(ctx context.Context, n int) error {
	params := make([]lockstep.InsertManyParams, 0, n+1)
	params = append(params, lockstep.InsertManyParams{Args: noopArgs{}, Key: "root", Opts: &lockstep.InsertOpts{Queue: parkedQueue}})
	for i := range n {
		params = append(params, lockstep.InsertManyParams{Args: noopArgs{Num: -i - 1}, DependsOn: []string{"root"}})
	}
	_, _, err := l.client.InsertRun(ctx, "waiting", nil, params...)
	return err
}

func (l *lockstepInstance) start(ctx context.Context, done func()) error {
	l.onDone = done
	return l.client.Start(ctx)
}

func (l *lockstepInstance) stop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return l.client.Stop(ctx)
}

func (l *lockstepInstance) countDone(ctx context.Context) (int64, error) {
	var n int64
	err := l.sqlDB.QueryRowContext(ctx, "SELECT COUNT(*) FROM lockstep_jobs WHERE status = 'DONE'").Scan(&n)
	return n, err
}

func (l *lockstepInstance) db() *sql.DB { return l.sqlDB }

func (l *lockstepInstance) close() error {
	err := l.drv.Close()
	if l.cleanup != nil {
		l.cleanup()
	}
	return err
}
