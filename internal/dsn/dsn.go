// Package dsn turns the CLI's --dsn into a lockstep driver.
//
// Accepted forms (package dsnparse tells them apart; its subpackages parse
// each dialect's, the same way driver/mysql, driver/postgres and
// driver/sqlite do):
//
//	mysql://user:pass@host:3306/db?param=value   (also mariadb://; ?socket=/path for a unix socket)
//	user:pass@tcp(host:3306)/db?param=value      (go-sql-driver's DSN; also user@unix(/path)/db, @/db)
//	postgres://user:pass@host:5432/db?sslmode=disable   (also postgresql://)
//	host=localhost port=5432 user=app dbname=app sslmode=disable   (libpq key=value)
//	sqlite:path/to/file.db, sqlite://path/to/file.db, sqlite:///abs/path.db
//	file:path/to/file.db?params   (SQLite's URI)
//	lockstep.db, ./data/q.db, /var/lib/q.sqlite3   (a bare path: SQLite)
//	""   (empty: the SQLite file lockstep.db in the current directory)
//
// A bare path is any DSN that is none of the other forms; a DSN that starts
// with an unknown scheme (redis:) or with key=value pairs none of whose keys
// is a libpq keyword is refused instead, so that a typo does not create a
// SQLite file. Error messages never contain a password.
package dsn

import (
	"context"
	"fmt"
	"strings"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/internal/dsnparse"
	"github.com/lockstep-queue/lockstep/internal/dsnparse/mysqldsn"
	"github.com/lockstep-queue/lockstep/internal/dsnparse/pgdsn"
	"github.com/lockstep-queue/lockstep/internal/dsnparse/sqlitedsn"
)

// DefaultSQLitePath is the database used when no DSN is given.
const DefaultSQLitePath = "lockstep.db"

// Dialects, as driver.Driver.Dialect reports them.
const (
	MySQL    = dsnparse.MySQL
	Postgres = dsnparse.Postgres
	SQLite   = dsnparse.SQLite
)

// Forms lists the accepted DSN forms, for help texts and errors.
const Forms = dsnparse.Forms

// Parsed is a DSN resolved to a dialect and the string its driver's Open
// takes.
type Parsed struct {
	// Dialect is "mysql", "postgres" or "sqlite".
	Dialect string
	// DSN is what the driver's Open takes, meaning the same database: a
	// go-sql-driver DSN for MySQL, the URL or key=value string for
	// PostgreSQL, sqlite:PATH (or the file: URI) for SQLite. It may hold
	// a password: do not print it.
	DSN string
	// Redacted is the input with any password replaced, safe to print.
	Redacted string
	// Hosts are a MySQL URL's hosts when it names several, in the order
	// the driver tries them; DSN is then the first host's.
	Hosts []string
}

// Parse resolves a DSN without connecting.
func Parse(dsn string) (Parsed, error) {
	dsn = strings.TrimSpace(dsn)
	if dsn == "" {
		return Parsed{Dialect: SQLite, DSN: DefaultSQLitePath, Redacted: "sqlite:" + DefaultSQLitePath}, nil
	}
	form, err := dsnparse.Detect(dsn)
	if err != nil {
		return Parsed{}, err
	}
	switch form.Dialect() {
	case MySQL:
		d, err := mysqldsn.Parse(dsn)
		if err != nil {
			return Parsed{}, err
		}
		return Parsed{Dialect: MySQL, DSN: d.GoDSN, Redacted: d.Redacted, Hosts: d.Hosts()}, nil
	case Postgres:
		d, err := pgdsn.Parse(dsn)
		if err != nil {
			return Parsed{}, err
		}
		return Parsed{Dialect: Postgres, DSN: d.ConnString, Redacted: d.Redacted}, nil
	default:
		d, err := sqlitedsn.Parse(dsn)
		if err != nil {
			return Parsed{}, err
		}
		return Parsed{Dialect: SQLite, DSN: d.Shown, Redacted: d.Shown}, nil
	}
}

// Open parses dsn and opens its driver.
func Open(ctx context.Context, dsn string) (driver.Driver, error) {
	p, err := Parse(dsn)
	if err != nil {
		return nil, err
	}
	var d driver.Driver
	switch p.Dialect {
	case SQLite:
		d, err = sqlite.Open(ctx, p.DSN)
	case MySQL:
		if len(p.Hosts) > 0 {
			// go-sql-driver's DSN names one address: the driver takes
			// the URL as written, with every host.
			d, err = mysql.Open(ctx, dsn)
		} else {
			d, err = mysql.Open(ctx, p.DSN)
		}
	case Postgres:
		d, err = postgres.Open(ctx, p.DSN)
	default:
		err = fmt.Errorf("unknown dialect %q", p.Dialect)
	}
	if err != nil {
		// One line, whatever the path or a server's message holds.
		return nil, dsnparse.OneLine{Err: fmt.Errorf("open %s: %w", p.Redacted, err)}
	}
	return d, nil
}
