package soak

import (
	"context"
	"database/sql"
	"fmt"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/mysql"
)

// mysqlLevel is the level's name as the isolation variable takes it.
func mysqlLevel(level sql.IsolationLevel) (string, bool) {
	switch level {
	case sql.LevelReadUncommitted:
		return "READ-UNCOMMITTED", true
	case sql.LevelReadCommitted:
		return "READ-COMMITTED", true
	case sql.LevelRepeatableRead:
		return "REPEATABLE-READ", true
	case sql.LevelSerializable:
		return "SERIALIZABLE", true
	}
	return "", false
}

// OpenMySQL opens a MySQL/MariaDB driver from a go-sql-driver DSN whose
// sessions and whose queue transactions both run at level. READ COMMITTED
// is what mysql.Open gives; the soak uses this to show that the lock order
// holds under REPEATABLE READ too, where gap locks come into play. Closing
// the driver closes its pool.
func OpenMySQL(ctx context.Context, dsn string, level sql.IsolationLevel) (driver.Driver, error) {
	name, ok := mysqlLevel(level)
	if !ok {
		return nil, fmt.Errorf("soak: MySQL has no isolation level %s", level)
	}
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("soak: parse mysql dsn: %w", err)
	}
	cfg.ParseTime = true
	variable, err := isolationVariable(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	delete(cfg.Params, "tx_isolation")
	delete(cfg.Params, "transaction_isolation")
	// go-sql-driver sends unknown parameters as SET statements on connect,
	// so every session of the pool starts at the level.
	cfg.Params[variable] = "'" + name + "'"
	connector, err := gomysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("soak: mysql: %w", err)
	}
	db := sql.OpenDB(connector)
	d, err := mysql.New(ctx, db)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return &ownedPool{Driver: d.WithIsolation(level), db: db}, nil
}

// isolationVariable names the session variable of the isolation level on
// the server cfg names (mysql.IsolationVariable: tx_isolation on MariaDB
// before 11.1, transaction_isolation on MySQL and later MariaDB).
func isolationVariable(ctx context.Context, cfg *gomysql.Config) (string, error) {
	connector, err := gomysql.NewConnector(cfg)
	if err != nil {
		return "", fmt.Errorf("soak: mysql: %w", err)
	}
	probe := sql.OpenDB(connector)
	defer probe.Close()
	var version string
	if err := probe.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return "", fmt.Errorf("soak: mysql: read server version: %w", err)
	}
	return mysql.IsolationVariable(version), nil
}

// ownedPool is a driver on a pool it owns: mysql.New and WithIsolation
// leave the pool to the caller, and the soak closes what it opened.
type ownedPool struct {
	driver.Driver
	db *sql.DB
}

func (o *ownedPool) Close() error {
	return o.db.Close()
}
