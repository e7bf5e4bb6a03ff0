// Package testdb starts throwaway MariaDB, Oracle MySQL and PostgreSQL
// servers for tests.
//
// Each test binary starts at most one server of each kind, on first use, and
// every call to MySQL, OracleMySQL or Postgres gets its own freshly created
// database on it, so tests can run in parallel without seeing each other's
// tables. Setting LOCKSTEP_TEST_MYSQL_DSN, LOCKSTEP_TEST_ORACLE_MYSQL_DSN
// or LOCKSTEP_TEST_POSTGRES_DSN points tests at an existing server instead.
//
// A test package opts in with
//
//	func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }
//
// A test that stops the database (a restart, a crash) must not do it to
// the shared server: it starts one of its own with StartMySQLServer,
// StartOracleMySQLServer or StartPostgresServer and uses Server.Stop, Kill
// and Start, which keep the port and the data, so that the DSNs the test
// handed out work again.
// DSNAddr and DSNWithAddr put a proxy (internal/faultproxy) in between.
package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lockstep-queue/lockstep/internal/proc"
)

const (
	readyTimeout  = 60 * time.Second
	createTimeout = time.Minute
	dropTimeout   = time.Minute
	startAttempts = 3 // retries only for lost races on the free port
)

// server is a database server tests can create databases on: either one we
// started (proc != nil) or an external one named by an environment variable.
type server struct {
	admin    *sql.DB
	adminDSN string
	dsn      func(dbName string) string
	create   func(ctx context.Context, dbName string) error
	drop     func(ctx context.Context, dbName string) error
	errorLog string // "" for external servers

	proc    *proc.Process
	stopSig syscall.Signal
	dir     string // removed after the server has stopped

	// For Server.Stop and Server.Start, on a server we started:
	// cleanSig asks for a clean shutdown (MariaDB: SIGTERM; PostgreSQL:
	// SIGINT, a fast shutdown that disconnects sessions and checkpoints);
	// relaunch starts the same command again (same port, same data
	// directory); port is the TCP port; hold reserves it while the server
	// is stopped.
	cleanSig syscall.Signal
	relaunch func() (*proc.Process, error)
	port     int
	hold     *portHold
}

func (s *server) close() error {
	if s.admin != nil {
		_ = s.admin.Close()
	}
	if s.proc != nil {
		s.proc.Stop(s.stopSig, 10*time.Second)
	}
	s.hold.release()
	s.hold = nil
	if s.dir != "" {
		return os.RemoveAll(s.dir)
	}
	return nil
}

// lazyServer starts a server on first use. A failed start is remembered, so
// every later test fails with the same explanation instead of retrying.
type lazyServer struct {
	once sync.Once
	srv  *server
	err  error
}

func (l *lazyServer) get(t testing.TB, start func(testing.TB) (*server, error)) *server {
	t.Helper()
	if !registry.inMain.Load() {
		t.Fatalf("testdb: servers are only stopped by testdb.Main; add func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) } to this test package")
	}
	l.once.Do(func() { l.srv, l.err = start(t) })
	if l.err != nil {
		t.Fatal(l.err)
	}
	return l.srv
}

// registry is the package's only mutable state: the servers this test
// binary has started, which Main stops.
var registry struct {
	inMain      atomic.Bool
	mysql       lazyServer
	oracleMySQL lazyServer
	postgres    lazyServer
	galera      lazyCluster
}

// Main runs the tests, then stops and removes every server this binary
// started, and returns the exit code for os.Exit.
func Main(m *testing.M) int {
	registry.inMain.Store(true)
	removeStale()
	code := m.Run()
	for _, l := range []*lazyServer{&registry.mysql, &registry.oracleMySQL, &registry.postgres} {
		// Consuming the Once keeps a goroutine that outlived its test from
		// starting a server nobody would stop.
		l.once.Do(func() { l.err = errors.New("testdb: Main has already stopped the test servers") })
		if l.srv == nil {
			continue
		}
		if err := l.srv.close(); err != nil {
			fmt.Fprintf(os.Stderr, "testdb: cleaning up: %v\n", err)
		}
	}
	registry.galera.once.Do(func() { registry.galera.err = errors.New("testdb: Main has already stopped the test servers") })
	if c := registry.galera.c; c != nil {
		if err := c.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "testdb: cleaning up the Galera cluster: %v\n", err)
		}
	}
	return code
}

// freshDatabase creates a uniquely named database for t on s, drops it when
// t ends, and returns a DSN for it.
func freshDatabase(t testing.TB, s *server) string {
	t.Helper()
	name := "lst_" + randomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), createTimeout)
	defer cancel()
	if err := s.create(ctx, name); err != nil {
		t.Fatalf("testdb: creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), dropTimeout)
		defer cancel()
		// Leaking a database only costs disk space on a server that is
		// thrown away anyway, so it should not fail an otherwise good test.
		if err := s.drop(ctx, name); err != nil {
			t.Logf("testdb: dropping database %s: %v", name, err)
		}
	})
	return s.dsn(name)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails, per crypto/rand docs
	return hex.EncodeToString(b)
}

// waitReady pings until the server accepts connections, the process dies,
// ctx ends or readyTimeout passes.
func waitReady(ctx context.Context, p *proc.Process, db *sql.DB) error {
	ctx, cancel := context.WithTimeoutCause(ctx, readyTimeout, fmt.Errorf("%v passed", readyTimeout))
	defer cancel()
	for {
		pingCtx, pingCancel := context.WithTimeout(ctx, 5*time.Second)
		err := db.PingContext(pingCtx)
		pingCancel()
		if err == nil {
			return nil
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("server exited before accepting connections (%v)", p.Wait())
		case <-ctx.Done():
			return fmt.Errorf("server not accepting connections (%v): %v", context.Cause(ctx), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
