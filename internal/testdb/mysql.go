package testdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lockstep-queue/lockstep/internal/proc"
)

// EnvMySQLDSN names an existing MySQL/MariaDB server (go-sql-driver/mysql DSN
// with rights to create databases) to use instead of starting one.
const EnvMySQLDSN = "LOCKSTEP_TEST_MYSQL_DSN"

// MySQL returns a go-sql-driver/mysql DSN for a new, empty database that is
// dropped when t ends. The server is shared by the whole test binary.
func MySQL(t testing.TB) string {
	t.Helper()
	return freshDatabase(t, mysqlServer(t))
}

// MySQLAdminDSN returns a DSN with root rights on the server MySQL uses,
// without a default database, for tests that need server-wide views.
func MySQLAdminDSN(t testing.TB) string {
	t.Helper()
	return mysqlServer(t).adminDSN
}

// MySQLErrorLog returns the path of the server's error log, where InnoDB
// writes every deadlock, or "" when an external server is used.
func MySQLErrorLog(t testing.TB) string {
	t.Helper()
	return mysqlServer(t).errorLog
}

func mysqlServer(t testing.TB) *server {
	t.Helper()
	return registry.mysql.get(t, startMySQL)
}

func startMySQL(t testing.TB) (*server, error) {
	return startMySQLServer(ServerOptions{ExternalDSN: os.Getenv(EnvMySQLDSN), Logf: t.Logf}, EnvMySQLDSN)
}

// startMySQLServer connects to opts.ExternalDSN or starts a MariaDB server;
// envName names the variable an external DSN came from, for messages.
func startMySQLServer(opts ServerOptions, envName string) (*server, error) {
	if opts.ExternalDSN != "" {
		return externalMySQL(opts.ExternalDSN, envName)
	}
	hint := "`make test` installs mariadb-server (or set " + envName + " to use an existing server)"
	mariadbd, ok := lookBinary([]string{"mariadbd", "mysqld"},
		[]string{"/usr/sbin", "/usr/local/sbin", "/usr/libexec", "/usr/local/mysql/bin"})
	if !ok {
		return nil, errors.New("testdb: cannot start MariaDB: mariadbd not found in PATH or /usr/sbin; " + hint)
	}
	installDB, ok := lookBinary([]string{"mariadb-install-db", "mysql_install_db"},
		[]string{"/usr/bin", "/usr/local/bin", "/usr/local/mysql/scripts"})
	if !ok {
		return nil, errors.New("testdb: cannot start MariaDB: mariadb-install-db not found in PATH or /usr/bin; " + hint)
	}

	begin := time.Now()
	dir, err := makeTempDir("mysql")
	if err != nil {
		return nil, fmt.Errorf("testdb: cannot start MariaDB: %v", err)
	}
	s, err := launchMySQL(dir, mariadbd, installDB, opts.Durable)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("testdb: cannot start MariaDB (%s): %v", mariadbd, err)
	}
	opts.logf("testdb: MariaDB ready in %v (%s settings), error log %s",
		time.Since(begin).Round(time.Millisecond), settingsName(opts.Durable), s.errorLog)
	return s, nil
}

func launchMySQL(dir, mariadbd, installDB string, durable bool) (*server, error) {
	dataDir := filepath.Join(dir, "data")
	tmpDir := filepath.Join(dir, "tmp")
	errorLog := filepath.Join(dir, "error.log")
	if err := os.Mkdir(tmpDir, 0o700); err != nil {
		return nil, err
	}
	// mariadbd refuses to run as root unless told that it is meant to, and
	// install-db rejects --user when not root.
	var userArgs []string
	if os.Geteuid() == 0 {
		userArgs = []string{"--user=root"}
	}

	// Normal (not unix_socket) root authentication gives root@127.0.0.1 with
	// an empty password and all privileges, which is what tests connect as.
	installArgs := append([]string{
		"--no-defaults",
		"--datadir=" + dataDir,
		// Our own tmpdir: a bootstrap sweeps #sql temp files from its
		// tmpdir, and two test binaries installing at once in /tmp removed
		// each other's ("Could not remove temporary table", error 1051).
		"--tmpdir=" + tmpDir,
		"--auth-root-authentication-method=normal",
		"--skip-test-db",
		"--skip-name-resolve",
		"--innodb-use-native-aio=0",
	}, userArgs...)
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	install := exec.CommandContext(ctx, installDB, installArgs...)
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s: %v\n%s", installDB, err, tailString(string(out)))
	}

	var lastErr error
	for range startAttempts {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		args := append(mariadbArgs(dir, dataDir, tmpDir, errorLog, port), userArgs...)
		args = append(args, mysqlSettings(durable)...)
		logStart := fileSize(errorLog)
		s, err := runMySQL(dir, mariadbd, args, port, errorLog)
		if err == nil {
			return s, nil
		}
		lastErr = fmt.Errorf("%v\n%s", err, logTail(errorLog))
		if !strings.Contains(logSince(errorLog, logStart), "Address already in use") {
			break
		}
	}
	return nil, lastErr
}

// mariadbArgs are the options every mariadbd we start runs with: its files
// in dir, TCP on 127.0.0.1:port only, and the settings tests rely on.
func mariadbArgs(dir, dataDir, tmpDir, errorLog string, port int) []string {
	return []string{
		"--no-defaults", // must come first; the host's my.cnf must not leak in
		"--datadir=" + dataDir,
		"--tmpdir=" + tmpDir,
		"--socket=" + filepath.Join(dir, "mysqld.sock"),
		"--pid-file=" + filepath.Join(dir, "mysqld.pid"),
		"--log-error=" + errorLog,
		fmt.Sprintf("--port=%d", port),
		"--bind-address=127.0.0.1",
		"--skip-name-resolve",
		"--skip-log-bin",
		"--max-connections=500",
		"--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_general_ci",
		// Matches loc=UTC in the DSNs, so NOW() and Go agree.
		"--default-time-zone=+00:00",
		// Tests inspect deadlocks through the error log.
		"--innodb-print-all-deadlocks=ON",
		// io_uring/libaio are often blocked by container seccomp
		// profiles; simulated AIO works everywhere.
		"--innodb-use-native-aio=0",
	}
}

func runMySQL(dir, mariadbd string, args []string, port int, errorLog string) (*server, error) {
	return runMySQLCommand(dir, func() *exec.Cmd { return exec.Command(mariadbd, args...) }, nil, port, errorLog)
}

// runMySQLCommand starts the server newCmd builds (mariadbd, or Oracle's
// mysqld through chroot) as cred (nil: as this process) and waits until
// root can connect over TCP.
func runMySQLCommand(dir string, newCmd func() *exec.Cmd, cred *syscall.Credential, port int, errorLog string) (*server, error) {
	launch := func() (*proc.Process, error) {
		logFile, err := openLog(errorLog)
		if err != nil {
			return nil, err
		}
		defer logFile.Close()
		cmd := newCmd()
		cmd.Dir = dir
		// Errors from before the error log is opened (bad options) go here too.
		cmd.Stdout, cmd.Stderr = logFile, logFile
		return proc.Start(cmd, cred)
	}
	p, err := launch()
	if err != nil {
		return nil, err
	}

	base := fmt.Sprintf("root@tcp(127.0.0.1:%d)/", port)
	const params = "?parseTime=true&loc=UTC&multiStatements=false"
	s := &server{
		adminDSN: base + params,
		dsn:      func(name string) string { return base + name + params },
		errorLog: errorLog,
		proc:     p,
		stopSig:  syscall.SIGKILL, // its data is about to be deleted anyway
		dir:      dir,
		cleanSig: syscall.SIGTERM,
		relaunch: launch,
		port:     port,
	}
	if err := s.openMySQLAdmin(); err != nil {
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

func externalMySQL(dsn, envName string) (*server, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("testdb: %s: %v", envName, err)
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.MultiStatements = false
	admin := cfg.Clone()
	admin.DBName = ""
	s := &server{
		adminDSN: admin.FormatDSN(),
		dsn: func(name string) string {
			c := cfg.Clone()
			c.DBName = name
			return c.FormatDSN()
		},
	}
	if err := s.openMySQLAdmin(); err != nil {
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

func (s *server) openMySQLAdmin() error {
	db, err := sql.Open("mysql", s.adminDSN)
	if err != nil {
		return err
	}
	s.admin = db
	s.create = func(ctx context.Context, name string) error {
		_, err := s.admin.ExecContext(ctx, "CREATE DATABASE `"+name+"`")
		return err
	}
	s.drop = s.dropMySQL
	return nil
}

// dropMySQL first kills connections still using the database: a leaked
// open transaction would otherwise hold a metadata lock that makes DROP
// DATABASE wait for lock_wait_timeout (a day by default).
func (s *server) dropMySQL(ctx context.Context, name string) error {
	conn, err := s.admin.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx,
		"SELECT ID FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()", name)
	if err != nil {
		return err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range ids {
		// The connection may have gone away by itself in the meantime.
		_, _ = conn.ExecContext(ctx, fmt.Sprintf("KILL %d", id))
	}
	if _, err := conn.ExecContext(ctx, "SET SESSION lock_wait_timeout = 30"); err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`")
	return err
}

// mysqlSettings returns the server options that differ between tests and
// benchmarks.
func mysqlSettings(durable bool) []string {
	if !durable {
		return []string{
			"--innodb-buffer-pool-size=256M",
			// Durability is pointless for a server deleted after the run.
			"--innodb-flush-log-at-trx-commit=2",
			"--innodb-doublewrite=0",
		}
	}
	return []string{
		"--innodb-buffer-pool-size=1G",
		// Every commit is on disk before it is acknowledged, and pages are
		// protected against torn writes: MariaDB's defaults, said explicitly.
		"--innodb-flush-log-at-trx-commit=1",
		"--innodb-doublewrite=1",
		// A redo log large enough that a write-heavy run is not throttled by
		// checkpoints (the default is 96M); durability is unchanged.
		"--innodb-log-file-size=1G",
	}
}

// tailString keeps the end of a command's output, where the error is.
func tailString(s string) string {
	const maxLen = 4000
	if len(s) > maxLen {
		s = "..." + s[len(s)-maxLen:]
	}
	return s
}
