package clienv

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/lockstep-queue/lockstep/internal/dsn"
)

// OpenMonitorDB opens the lock monitor's own small pool (nil on SQLite,
// which has no lock tables to read). It must get a connection when the
// queue's pool is exhausted by blocked sessions, which is when one looks
// at lock waits; and on PostgreSQL it must not inherit the queue pool's
// planner settings (with enable_seqscan=off the pg_locks queries take half
// a second instead of a millisecond). The dashboard (serve) and
// `lab locks --live` both read lock tables through it.
func (e *Env) OpenMonitorDB(ctx context.Context) (*sql.DB, error) {
	p, err := dsn.Parse(e.DSN)
	if err != nil {
		return nil, err
	}
	var db *sql.DB
	switch p.Dialect {
	case dsn.MySQL:
		cfg, err := gomysql.ParseDSN(p.DSN)
		if err != nil {
			return nil, errors.New("lock monitor: cannot read the MySQL DSN")
		}
		conn, err := gomysql.NewConnector(cfg)
		if err != nil {
			return nil, errors.New("lock monitor: cannot use the MySQL DSN")
		}
		db = sql.OpenDB(conn)
	case dsn.Postgres:
		cfg, err := pgx.ParseConfig(p.DSN)
		if err != nil {
			return nil, errors.New("lock monitor: cannot read the PostgreSQL DSN")
		}
		db = stdlib.OpenDB(*cfg)
	default:
		return nil, nil
	}
	db.SetMaxOpenConns(2)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(time.Minute)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("lock monitor: connect: %w", err)
	}
	return db, nil
}
