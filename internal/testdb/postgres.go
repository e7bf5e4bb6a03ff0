package testdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	"github.com/lockstep-queue/lockstep/internal/proc"
)

// EnvPostgresDSN names an existing PostgreSQL server (a postgres:// URL for a
// role that may create databases) to use instead of starting one.
const EnvPostgresDSN = "LOCKSTEP_TEST_POSTGRES_DSN"

// pgSuperuser is the bootstrap superuser initdb creates; with trust
// authentication it needs no password.
const pgSuperuser = "postgres"

// Postgres returns a postgres:// URL for a new, empty database that is
// dropped when t ends. The server is shared by the whole test binary.
func Postgres(t testing.TB) string {
	t.Helper()
	return freshDatabase(t, postgresServer(t))
}

// PostgresAdminDSN returns a superuser URL on the server Postgres uses,
// connected to the maintenance database "postgres", for tests that need
// server-wide views.
func PostgresAdminDSN(t testing.TB) string {
	t.Helper()
	return postgresServer(t).adminDSN
}

func postgresServer(t testing.TB) *server {
	t.Helper()
	return registry.postgres.get(t, startPostgres)
}

func startPostgres(t testing.TB) (*server, error) {
	return startPostgresServer(ServerOptions{ExternalDSN: os.Getenv(EnvPostgresDSN), Logf: t.Logf}, EnvPostgresDSN)
}

// startPostgresServer connects to opts.ExternalDSN or starts a PostgreSQL
// server; envName names the variable an external DSN came from, for messages.
func startPostgresServer(opts ServerOptions, envName string) (*server, error) {
	if opts.ExternalDSN != "" {
		return externalPostgres(opts.ExternalDSN, envName)
	}
	binDir, err := findPostgres()
	if err != nil {
		return nil, fmt.Errorf("testdb: cannot start PostgreSQL: %v; `make test` installs postgresql "+
			"(or set %s to use an existing server)", err, envName)
	}

	begin := time.Now()
	dir, err := makeTempDir("postgres")
	if err != nil {
		return nil, fmt.Errorf("testdb: cannot start PostgreSQL: %v", err)
	}
	s, err := launchPostgres(dir, binDir, opts.Durable)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("testdb: cannot start PostgreSQL (%s): %v", binDir, err)
	}
	opts.logf("testdb: PostgreSQL ready in %v (%s settings), log %s",
		time.Since(begin).Round(time.Millisecond), settingsName(opts.Durable), s.errorLog)
	return s, nil
}

// findPostgres returns a directory holding both initdb and postgres. Debian
// keeps them in versioned directories outside PATH, and pg_config may come
// from libpq-dev of a version whose server is not installed, so the
// versioned directories are tried first.
func findPostgres() (string, error) {
	var candidates []string
	for _, pattern := range []string{"/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin"} {
		dirs, _ := filepath.Glob(pattern)
		sort.SliceStable(dirs, func(i, j int) bool { return pgDirVersion(dirs[i]) > pgDirVersion(dirs[j]) })
		candidates = append(candidates, dirs...)
	}
	if pgConfig, err := exec.LookPath("pg_config"); err == nil {
		if out, err := exec.Command(pgConfig, "--bindir").Output(); err == nil {
			candidates = append(candidates, strings.TrimSpace(string(out)))
		}
	}
	candidates = append(candidates, "/usr/local/pgsql/bin")
	for _, dir := range candidates {
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	initdb, err := exec.LookPath("initdb")
	if err != nil {
		return "", errors.New("initdb not found in /usr/lib/postgresql/*/bin, pg_config --bindir or PATH")
	}
	// initdb in PATH is often a symlink into the real bin directory, which is
	// where postgres lives too.
	if real, err := filepath.EvalSymlinks(initdb); err == nil {
		initdb = real
	}
	dir := filepath.Dir(initdb)
	if !isExecutable(filepath.Join(dir, "postgres")) {
		return "", fmt.Errorf("postgres not found next to %s", initdb)
	}
	return dir, nil
}

// pgDirVersion extracts "15" from /usr/lib/postgresql/15/bin and "9.6" from
// /usr/pgsql-9.6/bin, so that the newest installed server wins.
func pgDirVersion(binDir string) float64 {
	name := filepath.Base(filepath.Dir(binDir))
	name = strings.TrimPrefix(name, "pgsql-")
	v, _ := strconv.ParseFloat(name, 64)
	return v
}

// pgCredential returns whom to run PostgreSQL as: initdb and postgres refuse
// to run as root.
func pgCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("PostgreSQL refuses to run as root, and neither user postgres nor nobody exists")
}

func launchPostgres(dir, binDir string, durable bool) (*server, error) {
	cred, err := pgCredential()
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	// A locale from the environment may not be installed; C also makes
	// collation independent of the host.
	env := append(os.Environ(), "LC_ALL=C")
	dataDir := filepath.Join(dir, "data")
	logPath := filepath.Join(dir, "postgres.log")

	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	initdb := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"),
		"-D", dataDir, "-A", "trust", "-U", pgSuperuser, "--no-sync", "-E", "UTF8", "--locale=C")
	initdb.Dir = dir // the postgres user may not be able to enter our cwd
	initdb.Env = env
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, tailString(string(out)))
	}

	var lastErr error
	for range startAttempts {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		newCmd := postgresCommand(dir, dataDir, binDir, port, env, durable)
		logStart := fileSize(logPath)
		s, err := runPostgres(newCmd, cred, port, dir, logPath)
		if err == nil {
			return s, nil
		}
		lastErr = fmt.Errorf("%v\n%s", err, logTail(logPath))
		if !strings.Contains(logSince(logPath, logStart), "Address already in use") {
			break
		}
	}
	return nil, lastErr
}

// postgresCommand builds the command that runs postgres on dataDir,
// listening on 127.0.0.1:port and a socket in dir.
func postgresCommand(dir, dataDir, binDir string, port int, env []string, durable bool) func() *exec.Cmd {
	// Running postgres directly rather than through pg_ctl keeps it our
	// child, so the parent-death signal reaches it.
	args := []string{
		"-D", dataDir,
		"-p", strconv.Itoa(port),
		"-k", dir,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "TimeZone=UTC",
		"-c", "log_timezone=UTC",
		"-c", "log_lock_waits=on",
	}
	for _, setting := range postgresSettings(binDir, durable) {
		args = append(args, "-c", setting)
	}
	return func() *exec.Cmd {
		cmd := exec.Command(filepath.Join(binDir, "postgres"), args...)
		cmd.Dir = dir
		cmd.Env = env
		return cmd
	}
}

func runPostgres(newCmd func() *exec.Cmd, cred *syscall.Credential, port int, dir, logPath string) (*server, error) {
	launch := func() (*proc.Process, error) {
		logFile, err := openLog(logPath)
		if err != nil {
			return nil, err
		}
		defer logFile.Close()
		cmd := newCmd()
		cmd.Stdout, cmd.Stderr = logFile, logFile
		return proc.Start(cmd, cred)
	}
	p, err := launch()
	if err != nil {
		return nil, err
	}
	base := url.URL{
		Scheme:   "postgres",
		User:     url.User(pgSuperuser),
		Host:     fmt.Sprintf("127.0.0.1:%d", port),
		RawQuery: "sslmode=disable",
	}
	s := &server{
		adminDSN: withDatabase(base, "postgres"),
		dsn:      func(name string) string { return withDatabase(base, name) },
		errorLog: logPath,
		proc:     p,
		// Immediate shutdown: no checkpoint, but the postmaster still
		// stops its backends and releases shared memory.
		stopSig:  syscall.SIGQUIT,
		dir:      dir,
		cleanSig: syscall.SIGINT, // fast shutdown: sessions are disconnected, then a checkpoint
		relaunch: launch,
		port:     port,
	}
	if err := s.openPostgresAdmin(); err != nil {
		s.dir = "" // the caller removes it, after reading the log
		_ = s.close()
		return nil, err
	}
	if err := waitReady(context.Background(), p, s.admin); err != nil {
		s.dir = ""
		_ = s.close()
		return nil, err
	}
	return s, nil
}

func externalPostgres(dsn, envName string) (*server, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("testdb: %s must be a postgres:// URL, got %q", envName, dsn)
	}
	base := *u
	s := &server{
		adminDSN: dsn,
		dsn:      func(name string) string { return withDatabase(base, name) },
	}
	if err := s.openPostgresAdmin(); err != nil {
		return nil, fmt.Errorf("testdb: %s: %v", envName, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	if err := s.admin.PingContext(ctx); err != nil {
		_ = s.admin.Close()
		return nil, fmt.Errorf("testdb: cannot connect to %s: %v", envName, err)
	}
	return s, nil
}

// postgresSettings returns the server settings that differ between tests
// and benchmarks.
func postgresSettings(binDir string, durable bool) []string {
	if !durable {
		return []string{
			// Durability against a machine crash is pointless for a server
			// deleted after the run. A commit still reaches the OS before
			// it is acknowledged (synchronous_commit, without fsync costs a
			// write), so that a server a test kills (Server.Kill) keeps
			// every transaction it acknowledged, as MariaDB's
			// innodb_flush_log_at_trx_commit=2 does.
			"fsync=off",
			"synchronous_commit=on",
			"full_page_writes=off",
			"max_connections=300",
		}
	}
	settings := []string{
		// Every commit is flushed before it is acknowledged, and pages are
		// protected against torn writes: PostgreSQL's defaults, said
		// explicitly.
		"fsync=on",
		"synchronous_commit=on",
		"full_page_writes=on",
		"max_connections=400",
		"shared_buffers=512MB",
		// Fewer forced checkpoints during a write-heavy run (the default
		// is 1GB); durability is unchanged.
		"max_wal_size=4GB",
	}
	if hasPgStatStatements(binDir) {
		settings = append(settings,
			"shared_preload_libraries=pg_stat_statements",
			"pg_stat_statements.track=all",
			"pg_stat_statements.max=10000")
	}
	return settings
}

// hasPgStatStatements reports whether the server in binDir ships the
// pg_stat_statements module (Debian's postgresql-NN package does).
func hasPgStatStatements(binDir string) bool {
	libDir := filepath.Join(filepath.Dir(binDir), "lib")
	if out, err := exec.Command(filepath.Join(binDir, "pg_config"), "--pkglibdir").Output(); err == nil {
		libDir = strings.TrimSpace(string(out))
	}
	_, err := os.Stat(filepath.Join(libDir, "pg_stat_statements.so"))
	return err == nil
}

func withDatabase(u url.URL, name string) string {
	u.Path = "/" + name
	u.RawPath = ""
	return u.String()
}

func (s *server) openPostgresAdmin() error {
	db, err := sql.Open("pgx", s.adminDSN)
	if err != nil {
		return err
	}
	s.admin = db
	s.create = func(ctx context.Context, name string) error {
		_, err := s.admin.ExecContext(ctx, `CREATE DATABASE "`+name+`"`)
		return err
	}
	s.drop = func(ctx context.Context, name string) error {
		// FORCE (PostgreSQL 13+) disconnects sessions a test leaked, which
		// would otherwise make the drop fail.
		_, err := s.admin.ExecContext(ctx, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`)
		return err
	}
	return nil
}
