package testdb_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lockstep-queue/lockstep/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func open(t *testing.T, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatalf("open %s: %v", dsn, err)
	}
	// Registered after testdb's drop, so it runs first and the drop does
	// not have to kill our connections.
	t.Cleanup(func() { db.Close() })
	return db
}

func queryString(t *testing.T, db *sql.DB, query string, args ...any) string {
	t.Helper()
	var s string
	if err := db.QueryRow(query, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return s
}

// mysqlFlavor is one MySQL-family server testdb starts: MariaDB, or Oracle
// MySQL from its userland.
type mysqlFlavor struct {
	name     string
	env      string
	dsn      func(testing.TB) string
	admin    func(testing.TB) string
	errorLog func(testing.TB) string
}

func mysqlFlavors() []mysqlFlavor {
	return []mysqlFlavor{
		{"MariaDB", testdb.EnvMySQLDSN, testdb.MySQL, testdb.MySQLAdminDSN, testdb.MySQLErrorLog},
		{"OracleMySQL", testdb.EnvOracleMySQLDSN, testdb.OracleMySQL, testdb.OracleMySQLAdminDSN, testdb.OracleMySQLErrorLog},
	}
}

// forEachMySQL runs fn in a parallel subtest per MySQL-family server.
func forEachMySQL(t *testing.T, fn func(t *testing.T, f mysqlFlavor)) {
	for _, f := range mysqlFlavors() {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			fn(t, f)
		})
	}
}

func TestMySQLFreshDatabases(t *testing.T) {
	forEachMySQL(t, testMySQLFreshDatabases)
}

func testMySQLFreshDatabases(t *testing.T, f mysqlFlavor) {
	dsn1, dsn2 := f.dsn(t), f.dsn(t)
	db1, db2 := open(t, "mysql", dsn1), open(t, "mysql", dsn2)

	name1 := queryString(t, db1, "SELECT DATABASE()")
	name2 := queryString(t, db2, "SELECT DATABASE()")
	if name1 == name2 || !strings.HasPrefix(name1, "lst_") || !strings.HasPrefix(name2, "lst_") {
		t.Fatalf("want two distinct lst_ databases, got %q and %q", name1, name2)
	}
	if _, err := db1.Exec("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))"); err != nil {
		t.Fatal(err)
	}
	if _, err := db1.Exec("INSERT INTO t VALUES (1, 'x')"); err != nil {
		t.Fatal(err)
	}
	if v := queryString(t, db1, "SELECT v FROM t WHERE id = 1"); v != "x" {
		t.Fatalf("got %q, want x", v)
	}
	if n := queryString(t, db2, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()"); n != "0" {
		t.Fatalf("second database is not empty: %s tables", n)
	}
}

func TestMySQLServerSettings(t *testing.T) {
	forEachMySQL(t, testMySQLServerSettings)
}

func testMySQLServerSettings(t *testing.T, f mysqlFlavor) {
	admin := open(t, "mysql", f.admin(t))
	// An external server is configured by whoever runs it.
	ours := os.Getenv(f.env) == ""

	var name, value string
	if err := admin.QueryRow("SHOW GLOBAL VARIABLES LIKE 'innodb_print_all_deadlocks'").Scan(&name, &value); err != nil {
		t.Fatal(err)
	}
	if ours && value != "ON" {
		t.Fatalf("innodb_print_all_deadlocks = %q, want ON", value)
	}
	// Needs the PROCESS privilege.
	var typ, status string
	if err := admin.QueryRow("SHOW ENGINE INNODB STATUS").Scan(&typ, &name, &status); err != nil {
		t.Fatalf("SHOW ENGINE INNODB STATUS: %v", err)
	}
	if !strings.Contains(status, "TRANSACTIONS") {
		t.Fatalf("unexpected InnoDB status:\n%s", status)
	}
	if ours {
		if _, err := os.Stat(f.errorLog(t)); err != nil {
			t.Fatalf("error log: %v", err)
		}
	}
}

// TestMySQLDeadlockReachesErrorLog checks the whole path later tests rely
// on: a deadlock between two of our connections ends up in MySQLErrorLog.
func TestMySQLDeadlockReachesErrorLog(t *testing.T) {
	forEachMySQL(t, testMySQLDeadlockReachesErrorLog)
}

func testMySQLDeadlockReachesErrorLog(t *testing.T, f mysqlFlavor) {
	logPath := f.errorLog(t)
	if logPath == "" {
		t.Skip("external server: its error log is not ours to read")
	}
	db := open(t, "mysql", f.dsn(t))
	if _, err := db.Exec("CREATE TABLE d (id INT PRIMARY KEY) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO d VALUES (1), (2)"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tx1, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx1.Rollback()
	tx2, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx2.Rollback()
	lock := func(tx *sql.Tx, id int) error {
		_, err := tx.ExecContext(ctx, "SELECT id FROM d WHERE id = ? FOR UPDATE", id)
		return err
	}
	if err := lock(tx1, 1); err != nil {
		t.Fatal(err)
	}
	if err := lock(tx2, 2); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var err1 error
	wg.Go(func() { err1 = lock(tx1, 2) }) // blocks on tx2
	waitLockWait(t, db)
	err2 := lock(tx2, 1)
	if err2 == nil {
		tx2.Rollback() // the victim was tx1; let it finish
	}
	wg.Wait()
	var me *mysql.MySQLError
	if !(errors.As(err1, &me) && me.Number == 1213) && !(errors.As(err2, &me) && me.Number == 1213) {
		t.Fatalf("no deadlock error: tx1=%v tx2=%v", err1, err2)
	}

	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(logPath)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "deadlock detected") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no deadlock report in %s", logPath)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitLockWait waits until InnoDB shows a transaction waiting for a lock:
// observable state, not a pause. INNODB_TRX is a cache InnoDB refreshes
// only after 0.1 s without readers, so it is polled less often than that.
func waitLockWait(t *testing.T, db *sql.DB) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no transaction started waiting for a lock")
		}
		time.Sleep(150 * time.Millisecond)
	}
}

func TestPostgresFreshDatabases(t *testing.T) {
	t.Parallel()
	dsn1, dsn2 := testdb.Postgres(t), testdb.Postgres(t)
	db1, db2 := open(t, "pgx", dsn1), open(t, "pgx", dsn2)

	name1 := queryString(t, db1, "SELECT current_database()")
	name2 := queryString(t, db2, "SELECT current_database()")
	if name1 == name2 || !strings.HasPrefix(name1, "lst_") || !strings.HasPrefix(name2, "lst_") {
		t.Fatalf("want two distinct lst_ databases, got %q and %q", name1, name2)
	}
	if _, err := db1.Exec("CREATE TABLE t (id int PRIMARY KEY, v text)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db1.Exec("INSERT INTO t VALUES (1, 'x')"); err != nil {
		t.Fatal(err)
	}
	if v := queryString(t, db1, "SELECT v FROM t WHERE id = $1", 1); v != "x" {
		t.Fatalf("got %q, want x", v)
	}
	if n := queryString(t, db2, "SELECT count(*)::text FROM pg_tables WHERE schemaname = 'public'"); n != "0" {
		t.Fatalf("second database is not empty: %s tables", n)
	}
}

func TestPostgresAdmin(t *testing.T) {
	t.Parallel()
	admin := open(t, "pgx", testdb.PostgresAdminDSN(t))
	if su := queryString(t, admin, "SELECT rolsuper::text FROM pg_roles WHERE rolname = current_user"); su != "true" {
		t.Fatalf("admin is not a superuser (rolsuper=%s)", su)
	}
}

// Databases must be dropped when the test that asked for them ends, or a
// long run of tests fills the disk.
func TestDatabasesAreDropped(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, driver string
		fresh, admin func(testing.TB) string
		exists       string
	}{
		{"mysql", "mysql", testdb.MySQL, testdb.MySQLAdminDSN,
			"SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?"},
		{"oraclemysql", "mysql", testdb.OracleMySQL, testdb.OracleMySQLAdminDSN,
			"SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?"},
		{"postgres", "pgx", testdb.Postgres, testdb.PostgresAdminDSN,
			"SELECT count(*)::text FROM pg_database WHERE datname = $1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var dbName string
			t.Run("user", func(t *testing.T) {
				db := open(t, c.driver, c.fresh(t))
				dbName = queryString(t, db, map[string]string{
					"mysql": "SELECT DATABASE()", "pgx": "SELECT current_database()"}[c.driver])
				// A transaction left open past the end of the test holds
				// locks (MySQL) or a session (PostgreSQL) that would block
				// a plain DROP DATABASE.
				if _, err := db.Exec("CREATE TABLE leak (id INT)"); err != nil {
					t.Fatal(err)
				}
				tx, err := db.Begin()
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.Exec("INSERT INTO leak VALUES (1)"); err != nil {
					t.Fatal(err)
				}
			})
			admin := open(t, c.driver, c.admin(t))
			if n := queryString(t, admin, c.exists, dbName); n != "0" {
				t.Fatalf("database %s still exists after its test ended", dbName)
			}
		})
	}
}

// The standalone API (used by lockstep-bench) shares the tests' start-up
// code; Durable switches the settings, and Close removes everything.
func TestStandaloneServer(t *testing.T) {
	t.Parallel()
	if os.Getenv(testdb.EnvPostgresDSN) != "" {
		t.Skip("an external server is configured; this test starts its own")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := testdb.StartPostgresServer(ctx, testdb.ServerOptions{Durable: true, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			srv.Close()
		}
	}()
	if !srv.Started() {
		t.Fatal("Started() = false for a server we started")
	}
	dsn, err := srv.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	db := open(t, "pgx", dsn)
	for name, want := range map[string]string{"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"} {
		if got := queryString(t, db, "SELECT current_setting($1)", name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	db.Close()
	if v, err := srv.Version(ctx); err != nil || !strings.HasPrefix(v, "PostgreSQL ") {
		t.Errorf("Version() = %q, %v", v, err)
	}
	if err := srv.DropDatabase(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	admin := open(t, "pgx", srv.AdminDSN())
	name := dsn[strings.LastIndex(dsn, "/")+1 : strings.Index(dsn, "?")]
	if n := queryString(t, admin, "SELECT count(*)::text FROM pg_database WHERE datname = $1", name); n != "0" {
		t.Fatalf("database %s still exists after DropDatabase", name)
	}
	admin.Close()
	logPath := srv.LogPath()
	closed = true
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(logPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("server directory not removed: stat %s: %v", logPath, err)
	}
}

// The MySQL-family standalone servers take the benchmark's settings with
// Durable (each commit flushed, the doublewrite buffer on) and say which
// server they are in Version; Close removes the data directory.
func TestStandaloneMySQLDurable(t *testing.T) {
	for _, c := range []struct {
		name, env, version string
		start              func(context.Context, testdb.ServerOptions) (*testdb.Server, error)
	}{
		{"MariaDB", testdb.EnvMySQLDSN, "MariaDB", testdb.StartMySQLServer},
		{"OracleMySQL", testdb.EnvOracleMySQLDSN, "MySQL ", testdb.StartOracleMySQLServer},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if os.Getenv(c.env) != "" {
				t.Skip("an external server is configured; this test starts its own")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			srv, err := c.start(ctx, testdb.ServerOptions{Durable: true, Logf: t.Logf})
			if err != nil {
				t.Fatal(err)
			}
			closed := false
			defer func() {
				if !closed {
					srv.Close()
				}
			}()
			if !srv.Started() {
				t.Fatal("Started() = false for a server we started")
			}
			if v, err := srv.Version(ctx); err != nil || !strings.Contains(v, c.version) {
				t.Errorf("Version() = %q, %v; want it to contain %q", v, err, c.version)
			}
			dsn, err := srv.NewDatabase(ctx)
			if err != nil {
				t.Fatal(err)
			}
			db := open(t, "mysql", dsn)
			// SELECT @@ gives MariaDB's booleans as 1, Oracle's
			// innodb_doublewrite (an enum since 8.0.30) as ON.
			for name, want := range map[string][]string{
				"innodb_flush_log_at_trx_commit": {"1"},
				"innodb_doublewrite":             {"1", "ON"},
			} {
				var got string
				if err := db.QueryRow("SELECT @@GLOBAL." + name).Scan(&got); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !slices.Contains(want, got) {
					t.Errorf("%s = %q, want one of %q", name, got, want)
				}
			}
			db.Close()
			logPath := srv.LogPath()
			closed = true
			if err := srv.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(logPath); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("server directory not removed: stat %s: %v", logPath, err)
			}
		})
	}
}
