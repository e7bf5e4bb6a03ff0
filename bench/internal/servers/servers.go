// Package servers gives the benchmarks their MariaDB, Oracle MySQL and
// PostgreSQL servers: throwaway ones started on first use with durable
// settings (see internal/testdb), or existing ones named by
// $LOCKSTEP_BENCH_MYSQL_DSN, $LOCKSTEP_BENCH_ORACLE_MYSQL_DSN and
// $LOCKSTEP_BENCH_POSTGRES_DSN.
package servers

import (
	"context"
	"errors"
	"os"
	"sync"

	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// Environment variables naming existing servers, with rights to create
// databases: go-sql-driver/mysql DSNs (MariaDB, Oracle MySQL) and a
// postgres:// URL.
const (
	EnvMySQLDSN       = "LOCKSTEP_BENCH_MYSQL_DSN"
	EnvOracleMySQLDSN = "LOCKSTEP_BENCH_ORACLE_MYSQL_DSN"
	EnvPostgresDSN    = "LOCKSTEP_BENCH_POSTGRES_DSN"
)

// Set starts throwaway servers lazily (or uses the servers the Env
// variables name), with durable settings. Its methods are safe for
// concurrent use.
type Set struct {
	logf        func(format string, args ...any)
	mysql       lazy
	oracleMySQL lazy
	postgres    lazy
}

type lazy struct {
	mu  sync.Mutex
	srv *testdb.Server
	err error
}

// Start returns a Set; no server is started until it is first asked for.
func Start(ctx context.Context, logf func(format string, args ...any)) (*Set, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &Set{logf: logf}, nil
}

func (s *Set) server(ctx context.Context, l *lazy, env string,
	start func(context.Context, testdb.ServerOptions) (*testdb.Server, error)) (*testdb.Server, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.srv == nil && l.err == nil {
		l.srv, l.err = start(ctx, testdb.ServerOptions{
			Durable:           true,
			ExternalDSN:       getenv(env),
			ExternalDSNSource: env,
			Logf:              s.logf,
		})
	}
	return l.srv, l.err
}

func (s *Set) mysqlServer(ctx context.Context) (*testdb.Server, error) {
	return s.server(ctx, &s.mysql, EnvMySQLDSN, testdb.StartMySQLServer)
}

func (s *Set) oracleMySQLServer(ctx context.Context) (*testdb.Server, error) {
	return s.server(ctx, &s.oracleMySQL, EnvOracleMySQLDSN, testdb.StartOracleMySQLServer)
}

func (s *Set) postgresServer(ctx context.Context) (*testdb.Server, error) {
	return s.server(ctx, &s.postgres, EnvPostgresDSN, testdb.StartPostgresServer)
}

// MySQL creates a fresh database and returns its go-sql-driver DSN
// (user:pass@tcp(host:port)/db?parseTime=true&loc=UTC...).
func (s *Set) MySQL(ctx context.Context) (dsn string, err error) {
	srv, err := s.mysqlServer(ctx)
	if err != nil {
		return "", err
	}
	return srv.NewDatabase(ctx)
}

// OracleMySQL creates a fresh database on the Oracle MySQL server and
// returns its go-sql-driver DSN.
func (s *Set) OracleMySQL(ctx context.Context) (dsn string, err error) {
	srv, err := s.oracleMySQLServer(ctx)
	if err != nil {
		return "", err
	}
	return srv.NewDatabase(ctx)
}

// Postgres creates a fresh database and returns its postgres:// URL.
func (s *Set) Postgres(ctx context.Context) (dsn string, err error) {
	srv, err := s.postgresServer(ctx)
	if err != nil {
		return "", err
	}
	return srv.NewDatabase(ctx)
}

// MySQLAdmin returns a DSN with administrative rights and no database.
func (s *Set) MySQLAdmin(ctx context.Context) (string, error) {
	srv, err := s.mysqlServer(ctx)
	if err != nil {
		return "", err
	}
	return srv.AdminDSN(), nil
}

// OracleMySQLAdmin returns a DSN with administrative rights on the Oracle
// MySQL server and no database.
func (s *Set) OracleMySQLAdmin(ctx context.Context) (string, error) {
	srv, err := s.oracleMySQLServer(ctx)
	if err != nil {
		return "", err
	}
	return srv.AdminDSN(), nil
}

// PostgresAdmin returns a superuser URL for the maintenance database
// "postgres".
func (s *Set) PostgresAdmin(ctx context.Context) (string, error) {
	srv, err := s.postgresServer(ctx)
	if err != nil {
		return "", err
	}
	return srv.AdminDSN(), nil
}

// Drop drops a database MySQL, OracleMySQL or Postgres created, to free
// its disk space before the next run. Databases not dropped go away with
// Close.
func (s *Set) Drop(ctx context.Context, dsn string) error {
	for _, l := range s.all() {
		l.mu.Lock()
		srv := l.srv
		l.mu.Unlock()
		if srv == nil {
			continue
		}
		if err := srv.DropDatabase(ctx, dsn); err == nil {
			return nil
		}
	}
	return errors.New("servers: no server created " + dsn)
}

// Versions returns the MariaDB and PostgreSQL servers' version strings for
// the report, starting them if need be; a server that cannot be reached
// reports "unavailable".
func (s *Set) Versions(ctx context.Context) (mysql, postgres string) {
	return version(ctx, s.mysqlServer), version(ctx, s.postgresServer)
}

// OracleMySQLVersion is Versions for the Oracle MySQL server, which only
// the runs that ask for it start.
func (s *Set) OracleMySQLVersion(ctx context.Context) string {
	return version(ctx, s.oracleMySQLServer)
}

func version(ctx context.Context, get func(context.Context) (*testdb.Server, error)) string {
	srv, err := get(ctx)
	if err != nil {
		return "unavailable"
	}
	v, err := srv.Version(ctx)
	if err != nil {
		return "unavailable"
	}
	return v
}

func (s *Set) all() []*lazy { return []*lazy{&s.mysql, &s.oracleMySQL, &s.postgres} }

// Close stops the servers the Set started (removing their data) and drops
// the databases it created on external ones.
func (s *Set) Close() error {
	var errs []error
	for _, l := range s.all() {
		l.mu.Lock()
		if l.srv != nil {
			errs = append(errs, l.srv.Close())
		}
		l.srv, l.err = nil, errors.New("servers: closed")
		l.mu.Unlock()
	}
	return errors.Join(errs...)
}

func getenv(name string) string { return os.Getenv(name) }
