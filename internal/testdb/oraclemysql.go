package testdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-queue/lockstep/internal/proc"
)

// EnvOracleMySQLDSN names an existing Oracle MySQL server (go-sql-driver
// DSN with rights to create databases) to use instead of starting one.
const EnvOracleMySQLDSN = "LOCKSTEP_TEST_ORACLE_MYSQL_DSN"

// EnvOracleMySQLRoot names the directory holding the userland Oracle MySQL
// runs from (a Debian unstable root with mysql-server-core, which needs a
// newer C library than the host's); DefaultOracleMySQLRoot when unset.
// `make deps` builds it there.
const EnvOracleMySQLRoot = "LOCKSTEP_ORACLE_MYSQL_ROOT"

// DefaultOracleMySQLRoot is where `make deps` builds the userland, outside
// the repository so that every checkout and CI run reuses it.
const DefaultOracleMySQLRoot = "/var/cache/lockstep/mysql-sid"

// OracleMySQL returns a go-sql-driver/mysql DSN for a new, empty database
// on a throwaway Oracle MySQL server, dropped when t ends. The server is
// shared by the whole test binary.
func OracleMySQL(t testing.TB) string {
	t.Helper()
	return freshDatabase(t, oracleMySQLServer(t))
}

// OracleMySQLAdminDSN returns a DSN with root rights on the server
// OracleMySQL uses, without a default database.
func OracleMySQLAdminDSN(t testing.TB) string {
	t.Helper()
	return oracleMySQLServer(t).adminDSN
}

// OracleMySQLErrorLog returns the path (on this host) of the server's error
// log, where InnoDB writes every deadlock, or "" for an external server.
func OracleMySQLErrorLog(t testing.TB) string {
	t.Helper()
	return oracleMySQLServer(t).errorLog
}

func oracleMySQLServer(t testing.TB) *server {
	t.Helper()
	return registry.oracleMySQL.get(t, startOracleMySQL)
}

func startOracleMySQL(t testing.TB) (*server, error) {
	return startOracleMySQLServer(ServerOptions{ExternalDSN: os.Getenv(EnvOracleMySQLDSN), Logf: t.Logf}, EnvOracleMySQLDSN)
}

// oracleMySQLRoot is the userland's directory, from EnvOracleMySQLRoot.
func oracleMySQLRoot() string {
	if r := os.Getenv(EnvOracleMySQLRoot); r != "" {
		return r
	}
	return DefaultOracleMySQLRoot
}

// startOracleMySQLServer connects to opts.ExternalDSN or starts Oracle
// MySQL from its userland with chroot; envName names the variable an
// external DSN came from, for messages.
func startOracleMySQLServer(opts ServerOptions, envName string) (*server, error) {
	if opts.ExternalDSN != "" {
		return externalMySQL(opts.ExternalDSN, envName)
	}
	root := oracleMySQLRoot()
	hint := "`make deps` builds it (or set " + envName + " to use an existing server, or " + EnvOracleMySQLRoot + " to name another userland)"
	if !isExecutable(filepath.Join(root, "usr/sbin/mysqld")) {
		return nil, fmt.Errorf("testdb: cannot start Oracle MySQL: no userland with usr/sbin/mysqld at %s; %s", root, hint)
	}
	chroot, ok := lookBinary([]string{"chroot"}, []string{"/usr/sbin", "/usr/bin", "/sbin", "/bin"})
	if !ok {
		return nil, errors.New("testdb: cannot start Oracle MySQL: chroot not found")
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("testdb: cannot start Oracle MySQL: running it from %s needs chroot, which needs root; set %s to use a server of your own", root, envName)
	}
	begin := time.Now()
	tmp := filepath.Join(root, "tmp")
	proc.RemoveStaleDirs(tmp, dirPrefix)
	dir, err := proc.OwnedTempDir(tmp, dirPrefix, "oraclemysql")
	if err != nil {
		return nil, fmt.Errorf("testdb: cannot start Oracle MySQL: %v", err)
	}
	s, err := launchOracleMySQL(root, dir, chroot, opts.Durable)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("testdb: cannot start Oracle MySQL: %v", err)
	}
	opts.logf("testdb: Oracle MySQL ready on port %d in %s", s.port, time.Since(begin).Round(time.Millisecond))
	return s, nil
}

// launchOracleMySQL initializes a data directory and starts mysqld on a
// free loopback port. dir is on this host, inside root; mysqld sees it
// without the root prefix.
func launchOracleMySQL(root, dir, chroot string, durable bool) (*server, error) {
	inner := "/" + strings.TrimPrefix(strings.TrimPrefix(dir, root), "/")
	dataDir := inner + "/data"
	errorLog := filepath.Join(dir, "error.log")
	if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o700); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	// --initialize-insecure: root@localhost with an empty password, which
	// go-sql-driver and the mariadb client both authenticate as over TCP.
	install := exec.CommandContext(ctx, chroot, root, "/usr/sbin/mysqld", "--no-defaults",
		"--initialize-insecure", "--datadir="+dataDir, "--user=root", "--innodb-use-native-aio=0")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mysqld --initialize-insecure: %v\n%s", err, tailString(string(out)))
	}
	var lastErr error
	for range startAttempts {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		args := append([]string{root, "/usr/sbin/mysqld",
			"--no-defaults", // the userland's my.cnf must not leak in
			"--datadir=" + dataDir,
			"--tmpdir=" + inner + "/tmp",
			"--socket=" + inner + "/mysqld.sock",
			"--pid-file=" + inner + "/mysqld.pid",
			"--log-error=" + inner + "/error.log",
			"--user=root",
			fmt.Sprintf("--port=%d", port),
			"--bind-address=127.0.0.1",
			// The X protocol would take a second port; nothing uses it.
			"--mysqlx=OFF",
			// The packaged default directory is missing in a bare userland.
			"--secure-file-priv=",
			// No --skip-name-resolve: --initialize-insecure creates only
			// root@localhost, which a TCP connection from 127.0.0.1 matches
			// only by its resolved name.
			"--skip-log-bin",
			"--max-connections=500",
			"--character-set-server=utf8mb4",
			"--default-time-zone=+00:00",
			// Deadlock reports are Notes: at the default verbosity (2)
			// innodb_print_all_deadlocks writes nothing on MySQL 8+.
			"--innodb-print-all-deadlocks=ON",
			"--log-error-verbosity=3",
			"--innodb-use-native-aio=0",
		}, oracleMySQLSettings(durable)...)
		logStart := fileSize(errorLog)
		s, err := runMySQLCommand(dir, func() *exec.Cmd { return exec.Command(chroot, args...) }, nil, port, errorLog)
		if err == nil {
			return s, nil
		}
		lastErr = fmt.Errorf("%v\n%s%s", err, logErrors(logSince(errorLog, logStart)), logTail(errorLog))
		if !strings.Contains(logSince(errorLog, logStart), "Address already in use") {
			break
		}
	}
	return nil, lastErr
}

// oracleMySQLSettings are mysqlSettings for Oracle MySQL, which sizes its
// redo log with innodb_redo_log_capacity (8.0.30 on): 9.x no longer knows
// innodb_log_file_size and refuses to start with it.
func oracleMySQLSettings(durable bool) []string {
	out := mysqlSettings(durable)
	for i, a := range out {
		if size, ok := strings.CutPrefix(a, "--innodb-log-file-size="); ok {
			out[i] = "--innodb-redo-log-capacity=" + size
		}
	}
	return out
}

// logErrors returns the [ERROR] lines of a MySQL error log: at
// log_error_verbosity=3 a failed start ends in a hundred shutdown Notes,
// which push the reason out of logTail.
func logErrors(log string) string {
	var b strings.Builder
	for line := range strings.Lines(log) {
		if strings.Contains(line, "[ERROR]") {
			b.WriteString(line)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "errors it logged:\n" + b.String()
}
