package dashboard

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ReplicaLag returns a Config.ReplicaLag that reads, through db, how far
// its server is behind its primary:
//
//   - PostgreSQL: on a standby, the time since the last transaction it
//     replayed, or 0 when it has replayed all the WAL it received; 0 on a
//     primary.
//   - MySQL and MariaDB: a replica's Seconds_Behind_Source (MariaDB:
//     Seconds_Behind_Master) from SHOW REPLICA STATUS; an error while its
//     SQL thread is stopped (the server reports no lag then); 0 on a
//     server that replicates from nothing, as every Galera node is (its
//     writes are certified everywhere before they commit).
//
// SQLite has no replicas: dialect "sqlite" gets an error.
func ReplicaLag(db *sql.DB, dialect string) (func(context.Context) (time.Duration, error), error) {
	switch dialect {
	case dialectPostgres:
		return func(ctx context.Context) (time.Duration, error) {
			var secs float64
			err := db.QueryRowContext(ctx, "SELECT CASE WHEN NOT pg_is_in_recovery() "+
				"OR pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0 "+
				"ELSE COALESCE(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()), 0) END").Scan(&secs)
			if err != nil {
				return 0, fmt.Errorf("read the standby's replay lag: %w", err)
			}
			return time.Duration(secs * float64(time.Second)), nil
		}, nil
	case dialectMySQL:
		return func(ctx context.Context) (time.Duration, error) { return mysqlReplicaLag(ctx, db) }, nil
	}
	return nil, fmt.Errorf("dashboard: a %s database has no replicas to read from", dialect)
}

// mysqlReplicaLag reads SHOW REPLICA STATUS (MySQL 8.0.22+, MariaDB
// 10.5.1+) by column name: the two servers name the lag differently.
func mysqlReplicaLag(ctx context.Context, db *sql.DB) (time.Duration, error) {
	rows, err := db.QueryContext(ctx, "SHOW REPLICA STATUS")
	if err != nil {
		return 0, fmt.Errorf("read the replica's status: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	if !rows.Next() {
		// Not a replica (a primary, or a Galera node).
		return 0, rows.Err()
	}
	vals := make([]sql.NullString, len(cols))
	dest := make([]any, len(cols))
	for i := range vals {
		dest[i] = &vals[i]
	}
	if err := rows.Scan(dest...); err != nil {
		return 0, err
	}
	for i, c := range cols {
		if c != "Seconds_Behind_Source" && c != "Seconds_Behind_Master" {
			continue
		}
		if !vals[i].Valid {
			return 0, errors.New("the replica reports no lag: its replication threads are not running")
		}
		n, err := strconv.ParseInt(vals[i].String, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("the replica reports a lag of %q seconds, not a number", vals[i].String)
		}
		return time.Duration(n) * time.Second, nil
	}
	return 0, errors.New("SHOW REPLICA STATUS has no Seconds_Behind_Source column")
}
