package testdb

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ServerOptions configures a server started outside of tests, by
// StartMySQLServer or StartPostgresServer.
type ServerOptions struct {
	// Durable selects benchmark settings: every commit is flushed to disk
	// (MariaDB innodb_flush_log_at_trx_commit=1 with the doublewrite
	// buffer; PostgreSQL fsync, synchronous_commit and full_page_writes
	// on), with larger buffers (1G buffer pool, 512MB shared_buffers) and
	// pg_stat_statements loaded when the server ships it. Without it the
	// server gets the tests' settings, which skip flushing.
	Durable bool
	// ExternalDSN, when set, names an existing server (with rights to
	// create databases) to use instead of starting one: a
	// go-sql-driver/mysql DSN or a postgres:// URL. Its settings are
	// whatever its owner chose.
	ExternalDSN string
	// ExternalDSNSource says where ExternalDSN came from (an environment
	// variable's name), for error messages.
	ExternalDSNSource string
	// Logf, if set, receives progress messages.
	Logf func(format string, args ...any)
}

func (o ServerOptions) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

func (o ServerOptions) source() string {
	if o.ExternalDSNSource != "" {
		return o.ExternalDSNSource
	}
	return "ServerOptions.ExternalDSN"
}

func settingsName(durable bool) string {
	if durable {
		return "durable"
	}
	return "test"
}

// Server is a MariaDB or PostgreSQL server started (or connected to) outside
// of a test binary. The caller must Close it; a server we started is also
// killed if this process dies first.
type Server struct {
	s            *server
	started      bool
	versionQuery string

	mu      sync.Mutex
	created []string
	closed  bool
}

// StartMySQLServer starts a throwaway MariaDB server on a free port of
// 127.0.0.1 with a temp data directory, or connects to opts.ExternalDSN.
func StartMySQLServer(ctx context.Context, opts ServerOptions) (*Server, error) {
	return startStandalone(ctx, opts, startMySQLServer, "SELECT VERSION()")
}

// StartPostgresServer starts a throwaway PostgreSQL server on a free port
// of 127.0.0.1 with a temp data directory, or connects to opts.ExternalDSN.
func StartPostgresServer(ctx context.Context, opts ServerOptions) (*Server, error) {
	return startStandalone(ctx, opts, startPostgresServer, "SELECT 'PostgreSQL ' || current_setting('server_version')")
}

func startStandalone(ctx context.Context, opts ServerOptions,
	start func(ServerOptions, string) (*server, error), versionQuery string) (*Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.ExternalDSN == "" {
		removeStale()
	}
	s, err := start(opts, opts.source())
	if err != nil {
		return nil, err
	}
	return &Server{s: s, started: opts.ExternalDSN == "", versionQuery: versionQuery}, nil
}

// NewDatabase creates a new, empty, uniquely named database and returns a
// DSN for it (go-sql-driver/mysql DSN with parseTime and loc=UTC, or a
// postgres:// URL). On an external server Close drops it again; on a server
// we started, Close removes the whole data directory.
func (s *Server) NewDatabase(ctx context.Context) (string, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return "", errors.New("testdb: server is closed")
	}
	name := "lst_" + randomHex(8)
	if err := s.s.create(ctx, name); err != nil {
		return "", fmt.Errorf("testdb: creating database %s: %v", name, err)
	}
	s.mu.Lock()
	s.created = append(s.created, name)
	s.mu.Unlock()
	return s.s.dsn(name), nil
}

// DropDatabase drops a database NewDatabase returned dsn for, first
// disconnecting whoever still uses it.
func (s *Server) DropDatabase(ctx context.Context, dsn string) error {
	s.mu.Lock()
	idx := -1
	for i, name := range s.created {
		if s.s.dsn(name) == dsn {
			idx = i
			break
		}
	}
	if idx < 0 {
		s.mu.Unlock()
		return fmt.Errorf("testdb: %s was not created by NewDatabase", dsn)
	}
	name := s.created[idx]
	s.created = append(s.created[:idx], s.created[idx+1:]...)
	s.mu.Unlock()
	if err := s.s.drop(ctx, name); err != nil {
		return fmt.Errorf("testdb: dropping database %s: %v", name, err)
	}
	return nil
}

// AdminDSN returns a DSN with administrative rights and no particular
// database (MariaDB) or the maintenance database "postgres" (PostgreSQL).
func (s *Server) AdminDSN() string { return s.s.adminDSN }

// LogPath returns the server's error log, or "" for an external server.
func (s *Server) LogPath() string { return s.s.errorLog }

// Started reports whether this process started the server (rather than
// connecting to an external one).
func (s *Server) Started() bool { return s.started }

// Version returns the server's version string.
func (s *Server) Version(ctx context.Context) (string, error) {
	var v string
	err := s.s.admin.QueryRowContext(ctx, s.versionQuery).Scan(&v)
	return v, err
}

// Close drops the databases NewDatabase created on an external server, or
// stops a server we started and removes its data directory.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	created := s.created
	s.mu.Unlock()
	var errs []error
	if !s.started {
		for _, name := range created {
			ctx, cancel := context.WithTimeout(context.Background(), dropTimeout)
			if err := s.s.drop(ctx, name); err != nil {
				errs = append(errs, fmt.Errorf("testdb: dropping database %s: %v", name, err))
			}
			cancel()
		}
	}
	errs = append(errs, s.s.close())
	return errors.Join(errs...)
}
