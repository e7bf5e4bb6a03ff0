package testdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// standbyName is the standby's application_name, which the primary's
// synchronous_standby_names names.
const standbyName = "standby1"

// PostgresPair is a throwaway PostgreSQL primary and a hot standby that
// streams its WAL (pg_basebackup), each a Server on its own loopback port
// and data directory, for failover tests: Kill the primary, Promote the
// standby.
type PostgresPair struct {
	Primary, Standby *Server
	// Synchronous: the primary acknowledges a commit only once the standby
	// has flushed it (synchronous_standby_names, synchronous_commit on).
	Synchronous bool
}

// StartPostgresPair starts a primary, takes a base backup of it into the
// standby's data directory and starts the standby streaming from it; with
// synchronous, replication is synchronous. It returns once the standby
// streams (in sync, if asked).
func StartPostgresPair(ctx context.Context, opts ServerOptions, synchronous bool) (*PostgresPair, error) {
	if opts.ExternalDSN != "" {
		return nil, errors.New("testdb: a primary and standby pair is always started here; ExternalDSN is not taken")
	}
	primary, err := StartPostgresServer(ctx, ServerOptions{Durable: opts.Durable, Logf: opts.Logf})
	if err != nil {
		return nil, err
	}
	pair := &PostgresPair{Primary: primary, Synchronous: synchronous}
	standby, err := startStandby(ctx, primary, opts)
	if err != nil {
		_ = primary.Close()
		return nil, fmt.Errorf("testdb: cannot start the standby: %v", err)
	}
	pair.Standby = standby
	if synchronous {
		for _, q := range []string{
			"ALTER SYSTEM SET synchronous_standby_names = '" + standbyName + "'",
			"SELECT pg_reload_conf()",
		} {
			if _, err := primary.s.admin.ExecContext(ctx, q); err != nil {
				_ = pair.Close()
				return nil, fmt.Errorf("testdb: making replication synchronous: %v", err)
			}
		}
	}
	want := "async"
	if synchronous {
		want = "sync"
	}
	wait, cancel := context.WithTimeoutCause(ctx, readyTimeout, fmt.Errorf("%v passed", readyTimeout))
	defer cancel()
	if err := waitFor(wait, func() (bool, error) {
		var state, sync string
		err := primary.s.admin.QueryRowContext(wait,
			"SELECT state, sync_state FROM pg_stat_replication WHERE application_name = $1", standbyName).Scan(&state, &sync)
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		return err == nil && state == "streaming" && sync == want, err
	}); err != nil {
		_ = pair.Close()
		return nil, fmt.Errorf("testdb: the standby does not stream (%s): %v\n%s", want, err, logTail(standby.LogPath()))
	}
	opts.logf("testdb: PostgreSQL primary on %s, %s standby on %s", primary.Addr(), want, standby.Addr())
	return pair, nil
}

// startStandby takes a base backup of primary into a new data directory
// and starts a hot standby on it, streaming from primary.
func startStandby(ctx context.Context, primary *Server, opts ServerOptions) (*Server, error) {
	binDir, err := findPostgres()
	if err != nil {
		return nil, err
	}
	cred, err := pgCredential()
	if err != nil {
		return nil, err
	}
	dir, err := makeTempDir("postgres-standby")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Server, error) {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fail(err)
		}
	}
	host, port, _ := strings.Cut(primary.Addr(), ":")
	dataDir := filepath.Join(dir, "data")
	backupCtx, cancel := context.WithTimeout(ctx, 2*readyTimeout)
	defer cancel()
	// -R writes standby.signal and the connection to the primary; the
	// application_name is the one synchronous_standby_names names.
	backup := exec.CommandContext(backupCtx, filepath.Join(binDir, "pg_basebackup"),
		"-D", dataDir, "-X", "stream", "-c", "fast", "--no-sync", "-R",
		"-d", fmt.Sprintf("host=%s port=%s user=%s application_name=%s", host, port, pgSuperuser, standbyName))
	backup.Dir = dir
	backup.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := backup.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("pg_basebackup: %v\n%s", err, tailString(string(out))))
	}
	env := append(os.Environ(), "LC_ALL=C")
	logPath := filepath.Join(dir, "postgres.log")
	var lastErr error
	for range startAttempts {
		port, err := freePort()
		if err != nil {
			return fail(err)
		}
		logStart := fileSize(logPath)
		s, err := runPostgres(postgresCommand(dir, dataDir, binDir, port, env, opts.Durable), cred, port, dir, logPath)
		if err == nil {
			return &Server{s: s, started: true,
				versionQuery: "SELECT 'PostgreSQL ' || current_setting('server_version')", source: "StartPostgresPair"}, nil
		}
		lastErr = fmt.Errorf("%v\n%s", err, logTail(logPath))
		if !strings.Contains(logSince(logPath, logStart), "Address already in use") {
			break
		}
	}
	return fail(lastErr)
}

// NewDatabase creates a new, empty database on the primary and returns its
// URL on the primary and on the standby, once the standby has it too.
func (p *PostgresPair) NewDatabase(ctx context.Context) (primary, standby string, err error) {
	primary, err = p.Primary.NewDatabase(ctx)
	if err != nil {
		return "", "", err
	}
	u, err := url.Parse(primary)
	if err != nil {
		return "", "", err
	}
	name := strings.TrimPrefix(u.Path, "/")
	standby = p.Standby.s.dsn(name)
	err = waitFor(ctx, func() (bool, error) {
		var one int
		err := p.Standby.s.admin.QueryRowContext(ctx, "SELECT 1 FROM pg_database WHERE datname = $1", name).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		return err == nil, err
	})
	return primary, standby, err
}

// Promote makes the standby a primary (pg_promote) and waits until it
// takes writes.
func (p *PostgresPair) Promote(ctx context.Context) error {
	var ok bool
	if err := p.Standby.s.admin.QueryRowContext(ctx, "SELECT pg_promote(true, 60)").Scan(&ok); err != nil {
		return fmt.Errorf("testdb: promoting the standby: %v", err)
	}
	if !ok {
		return errors.New("testdb: the standby was not promoted within 60 s")
	}
	return waitFor(ctx, func() (bool, error) {
		var recovery bool
		err := p.Standby.s.admin.QueryRowContext(ctx, "SELECT pg_is_in_recovery()").Scan(&recovery)
		return err == nil && !recovery, err
	})
}

// MultiHostURL is a URL for the database name (as NewDatabase made it)
// naming the primary's host first and the standby's second, as a client
// configured for failover names them.
func (p *PostgresPair) MultiHostURL(primaryURL string) (string, error) {
	u, err := url.Parse(primaryURL)
	if err != nil {
		return "", err
	}
	u.Host = p.Primary.Addr() + "," + p.Standby.Addr()
	return u.String(), nil
}

// Close stops both servers and removes their data.
func (p *PostgresPair) Close() error {
	var errs []error
	if p.Standby != nil {
		errs = append(errs, p.Standby.Close())
	}
	errs = append(errs, p.Primary.Close())
	return errors.Join(errs...)
}
