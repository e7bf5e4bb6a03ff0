package throughput

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// The systems measured, by name.
const (
	LockstepPostgres = "lockstep-postgres"
	RiverPostgres    = "river-postgres"
	LockstepMariaDB  = "lockstep-mariadb"
	LockstepMySQL    = "lockstep-mysql" // Oracle MySQL
	LockstepSQLite   = "lockstep-sqlite"
)

// AllSystems is the default order of one repetition: the two systems on
// PostgreSQL side by side, then lockstep on MariaDB, Oracle MySQL and
// SQLite.
var AllSystems = []string{LockstepPostgres, RiverPostgres, LockstepMariaDB, LockstepMySQL, LockstepSQLite}

// innodb reports whether a system runs on an InnoDB server (MariaDB or
// Oracle MySQL), whose statistics come from SHOW GLOBAL STATUS.
func innodb(system string) bool { return system == LockstepMariaDB || system == LockstepMySQL }

// ParseSystems checks a comma-separated list of system names.
func ParseSystems(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" || s == "all" {
		return AllSystems, nil
	}
	var out []string
	seen := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		ok := false
		for _, known := range AllSystems {
			ok = ok || known == name
		}
		if !ok {
			return nil, fmt.Errorf("unknown system %q (want some of %s)", name, strings.Join(AllSystems, ","))
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out, nil
}

// instance is one system on a fresh database, ready to insert and work
// no-op jobs.
type instance interface {
	// insert adds n no-op jobs with the system's own batch insert.
	insert(ctx context.Context, n int) error
	// start starts the workers; done is called once for each job whose
	// completion the system reports after committing it.
	start(ctx context.Context, done func()) error
	// stop stops the workers, waiting for running jobs' results.
	stop(ctx context.Context) error
	// countDone reads the number of completed jobs from the database.
	countDone(ctx context.Context) (int64, error)
	// db is a connection pool to the instance's database, for statistics.
	db() *sql.DB
	// close releases everything; the database itself is dropped by the
	// caller.
	close() error
}
