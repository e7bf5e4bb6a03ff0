package testdb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
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

// Server is a MariaDB, Oracle MySQL or PostgreSQL server started (or connected to) outside
// of a test binary, or by a test that needs a server of its own (one it
// stops and starts again: see Stop). The caller must Close it; a server we
// started is also killed if this process dies first.
type Server struct {
	s            *server
	started      bool
	versionQuery string
	source       string // where an external server's DSN came from

	// life serialises Stop, Kill, Start and Close.
	life sync.Mutex

	mu      sync.Mutex
	created []string
	closed  bool
}

// StartMySQLServer starts a throwaway MariaDB server on a free port of
// 127.0.0.1 with a temp data directory, or connects to opts.ExternalDSN.
func StartMySQLServer(ctx context.Context, opts ServerOptions) (*Server, error) {
	return startStandalone(ctx, opts, startMySQLServer, "SELECT VERSION()")
}

// StartOracleMySQLServer starts a throwaway Oracle MySQL server from its
// userland (see OracleMySQL) on a free port of 127.0.0.1 with a temp data
// directory, or connects to opts.ExternalDSN.
func StartOracleMySQLServer(ctx context.Context, opts ServerOptions) (*Server, error) {
	return startStandalone(ctx, opts, startOracleMySQLServer, "SELECT VERSION()")
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
	return &Server{s: s, started: opts.ExternalDSN == "", versionQuery: versionQuery, source: opts.source()}, nil
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
	s.life.Lock()
	defer s.life.Unlock()
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

// Addr returns the server's host:port (127.0.0.1 and a free port for a
// server we started), for a proxy placed in front of it (see DSNWithAddr);
// "" for an external server reached other than by TCP.
func (s *Server) Addr() string {
	addr, _ := DSNAddr(s.s.adminDSN)
	return addr
}

// Stop shuts down a server we started, cleanly (MariaDB's normal shutdown;
// PostgreSQL's fast shutdown, which disconnects the sessions, rolls their
// transactions back and checkpoints), and waits until it has exited. The
// data directory stays, and its port stays reserved (bound, not listening:
// a connection attempt is refused, as with no server) so that no other
// server or outgoing connection takes it before Start. Should ctx end
// first the server is killed, and the error says so.
//
// Stop is for a server a test started for itself: stopping the shared
// server of MySQL or Postgres would break every other test. An external
// server (ServerOptions.ExternalDSN) cannot be stopped: Stop, Kill and
// Start return an error for it.
func (s *Server) Stop(ctx context.Context) error {
	unlock, err := s.begin("Stop", true)
	if err != nil {
		return err
	}
	defer unlock()
	err = s.s.proc.Shutdown(ctx, s.s.cleanSig)
	holdErr := s.holdPort()
	if err != nil {
		return fmt.Errorf("testdb: stopping the server: %v\n%s", err, logTail(s.s.errorLog))
	}
	return holdErr
}

// Kill kills a server we started with SIGKILL, with no chance to flush or
// say goodbye to its clients, as a crash or a power cut would; Start then
// runs the server's crash recovery. Committed transactions survive (the
// test settings flush the log to the OS at each commit, and the OS is not
// what died). Like Stop it keeps the data directory and the port.
func (s *Server) Kill() error {
	unlock, err := s.begin("Kill", true)
	if err != nil {
		return err
	}
	defer unlock()
	s.s.proc.Kill()
	return s.holdPort()
}

// Start starts a server that Stop or Kill stopped, on the same port and
// data directory, and returns once it accepts connections: DSNs given out
// before work again (database/sql pools reconnect on their own; their
// connections from before the stop are broken). It gives up when ctx ends
// or after a minute.
func (s *Server) Start(ctx context.Context) error {
	unlock, err := s.begin("Start", false)
	if err != nil {
		return err
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	s.s.hold.release()
	s.s.hold = nil
	for {
		logStart := fileSize(s.s.errorLog)
		p, err := s.s.relaunch()
		if err == nil {
			if err = waitReady(ctx, p, s.s.admin); err == nil {
				s.s.proc = p
				return nil
			}
			p.Kill()
		}
		// A killed server's processes may still be on their way out
		// (PostgreSQL backends leave on their own, holding shared memory
		// and the data directory's lock until then): try again shortly.
		if transientStartFailure(logSince(s.s.errorLog, logStart)) && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
				continue
			}
		}
		if p != nil {
			s.s.proc = p // exited: the server stays stopped
		}
		holdErr := s.holdPort()
		return errors.Join(fmt.Errorf("testdb: starting the server again on port %d: %v\n%s",
			s.s.port, err, logTail(s.s.errorLog)), holdErr)
	}
}

// begin checks that op may run — on a server we started, not closed, in
// the state op needs (running, or stopped) — and holds the life lock
// until unlock.
func (s *Server) begin(op string, wantRunning bool) (unlock func(), err error) {
	if err := s.controllable(strings.ToLower(op)); err != nil {
		return nil, err
	}
	s.life.Lock()
	if err := s.usable(); err != nil {
		s.life.Unlock()
		return nil, err
	}
	switch running := s.running(); {
	case wantRunning && !running:
		s.life.Unlock()
		return nil, fmt.Errorf("testdb: %s: the server is not running", op)
	case !wantRunning && running:
		s.life.Unlock()
		return nil, fmt.Errorf("testdb: %s: the server is already running", op)
	}
	return s.life.Unlock, nil
}

// Restart is Stop, then Start.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.Stop(ctx); err != nil {
		return err
	}
	return s.Start(ctx)
}

// controllable refuses to stop or start a server that is not ours.
func (s *Server) controllable(op string) error {
	if s.started {
		return nil
	}
	return fmt.Errorf("testdb: cannot %s an external server (named by %s): it is not ours to stop; "+
		"start a throwaway one (StartMySQLServer, StartOracleMySQLServer or StartPostgresServer without ExternalDSN)", op, s.source)
}

func (s *Server) usable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("testdb: server is closed")
	}
	return nil
}

// running reports whether the server's process is alive; s.life is held.
func (s *Server) running() bool { return !s.s.proc.HasExited() }

// holdPort reserves the port of the stopped server; s.life is held.
func (s *Server) holdPort() error {
	if s.s.hold != nil {
		return nil
	}
	h, err := holdPort(s.s.port)
	if err != nil {
		return fmt.Errorf("testdb: the server stopped, but its port could not be reserved until Start: %v", err)
	}
	s.s.hold = h
	return nil
}

// transientStartFailure recognises a start that failed because the
// previous incarnation's processes, or its connections, are still
// going away.
func transientStartFailure(log string) bool {
	for _, s := range []string{
		"Address already in use",                    // both
		"pre-existing shared memory block",          // PostgreSQL: an old backend still attached
		`lock file "postmaster.pid" already exists`, // PostgreSQL: a process still alive
		"Unable to lock",                            // InnoDB: the data files are locked
	} {
		if strings.Contains(log, s) {
			return true
		}
	}
	return false
}
