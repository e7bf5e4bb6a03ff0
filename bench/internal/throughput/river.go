package throughput

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// River's fetch settings from its own benchmark (cmd/river/riverbench):
// "much better than the client's default values".
const (
	RiverFetchCooldown     = 2 * time.Millisecond
	RiverFetchPollInterval = 20 * time.Millisecond
)

type riverWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (riverWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

type riverInstance struct {
	pool     *pgxpool.Pool
	sqlDB    *sql.DB
	client   *river.Client[pgx.Tx]
	batch    int
	num      int
	events   <-chan *river.Event
	unsub    func()
	consumed chan struct{}
}

// openRiver migrates a fresh PostgreSQL database with rivermigrate and
// builds a client with a no-op worker, as River's own benchmark does.
func openRiver(ctx context.Context, dsn string, cfg *Config) (*riverInstance, error) {
	poolCfg, err := pgxpool.ParseConfig(withPoolConns(dsn, cfg.PGPoolConns))
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return nil, err
	}
	drv := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(drv, nil)
	if err != nil {
		pool.Close()
		return nil, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		pool.Close()
		return nil, fmt.Errorf("river migrate: %w", err)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &riverWorker{})
	client, err := river.NewClient(drv, &river.Config{
		FetchCooldown:     RiverFetchCooldown,
		FetchPollInterval: RiverFetchPollInterval,
		Logger:            cfg.clientLogger(),
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.Workers}},
		Workers:           workers,
	})
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &riverInstance{pool: pool, sqlDB: stdlib.OpenDBFromPool(pool), client: client, batch: cfg.BatchSize}, nil
}

func (r *riverInstance) insert(ctx context.Context, n int) error {
	params := make([]river.InsertManyParams, 0, min(n, r.batch))
	for n > 0 {
		k := min(n, r.batch)
		params = params[:0]
		for range k {
			r.num++
			params = append(params, river.InsertManyParams{Args: noopArgs{Num: r.num}})
		}
		if _, err := r.client.InsertMany(ctx, params); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// riverEventBuffer is the subscription's channel size: events that would
// overflow it are dropped, so it is as large as River's own benchmark makes
// it. The consumer only counts, so it never falls far behind.
const riverEventBuffer = 75_000

func (r *riverInstance) start(ctx context.Context, done func()) error {
	// Completions are counted from the subscription, as River's benchmark
	// does: its events are sent after the completer has committed the
	// jobs' new state.
	r.events, r.unsub = r.client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: riverEventBuffer,
		Kinds:    []river.EventKind{river.EventKindJobCompleted},
	})
	r.consumed = make(chan struct{})
	go func() {
		defer close(r.consumed)
		for e := range r.events {
			if e != nil && e.Kind == river.EventKindJobCompleted {
				done()
			}
		}
	}()
	return r.client.Start(ctx)
}

func (r *riverInstance) stop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := r.client.Stop(ctx)
	if r.unsub != nil {
		r.unsub()
		<-r.consumed
	}
	return err
}

func (r *riverInstance) countDone(ctx context.Context) (int64, error) {
	var n int64
	err := r.pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE state = 'completed'").Scan(&n)
	return n, err
}

func (r *riverInstance) db() *sql.DB { return r.sqlDB }

func (r *riverInstance) close() error {
	_ = r.sqlDB.Close()
	r.pool.Close()
	return nil
}

// withPoolConns sets pgxpool's pool_max_conns on a postgres:// URL when n > 0;
// otherwise the pool keeps pgx's default, max(4, GOMAXPROCS).
func withPoolConns(dsn string, n int) string {
	if n <= 0 {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn
	}
	q := u.Query()
	q.Set("pool_max_conns", strconv.Itoa(n))
	u.RawQuery = q.Encode()
	return u.String()
}
