package lockview_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func open(t *testing.T, driverName, dsn string) *sql.DB {
	db, err := sql.Open(driverName, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// server is one server under test and what its lock views say about a
// row held by PRIMARY KEY: the lock mode and index of the wait (""
// where the server names none) and the record.
type server struct {
	name, driver string
	dsn          func(testing.TB) string
	flavor       lockview.Flavor
	index, mode  string
	data         string
}

func servers() []server {
	return []server{
		// MariaDB's INNODB_LOCKS says X for a lock on the record alone.
		{"MariaDB", "mysql", testdb.MySQL, lockview.MariaDB, "PRIMARY", "X", "1"},
		// MySQL's data_locks says what the lock covers.
		{"OracleMySQL", "mysql", testdb.OracleMySQL, lockview.MySQL, "PRIMARY", "X,REC_NOT_GAP", "1"},
		// PostgreSQL waits for the holder's transaction, holding the
		// tuple lock meanwhile.
		{"PostgreSQL", "pgx", testdb.Postgres, lockview.Postgres, "", "ShareLock", "tuple (0,1)"},
	}
}

// holdRow creates held(id, v) with row 1, and starts a transaction that
// holds row 1 until the returned release.
func holdRow(t *testing.T, ctx context.Context, db *sql.DB) (release func() error) {
	t.Helper()
	_, err := db.ExecContext(ctx, "CREATE TABLE held (id BIGINT PRIMARY KEY, v INT NOT NULL)")
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, "INSERT INTO held (id, v) VALUES (1, 0)")
	require.NoError(t, err)
	holder, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = holder.Rollback() })
	_, err = holder.ExecContext(ctx, "UPDATE held SET v = 1 WHERE id = 1")
	require.NoError(t, err)
	return holder.Commit
}

// TestWaitsShowsARowLockWait: one session holds a row, another waits for
// it; Waits names both sessions (by the id each one's CONNECTION_ID() or
// pg_backend_pid() says), the table, the index, the lock mode, the record
// and the waiter's statement; Locks shows the holder's lock granted and
// the waiter's not, on that record; nothing is shown once the holder lets
// go.
func TestWaitsShowsARowLockWait(t *testing.T) {
	for _, c := range servers() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			db := open(t, c.driver, c.dsn(t))
			f, err := lockview.Detect(ctx, db)
			require.NoError(t, err)
			require.Equal(t, c.flavor, f)
			release := holdRow(t, ctx, db)

			waiter, err := db.Conn(ctx)
			require.NoError(t, err)
			defer waiter.Close()
			idQuery := "SELECT CONNECTION_ID()"
			if f == lockview.Postgres {
				idQuery = "SELECT pg_backend_pid()"
			}
			var waiterID int64
			require.NoError(t, waiter.QueryRowContext(ctx, idQuery).Scan(&waiterID))
			done := make(chan error, 1)
			go func() {
				_, err := waiter.ExecContext(ctx, "UPDATE held SET v = 2 WHERE id = 1")
				done <- err
			}()
			waits, err := lockview.WaitFor(ctx, db, f, nil, nil)
			require.NoError(t, err)
			require.Len(t, waits, 1)
			w := waits[0]
			t.Logf("%s", w)
			require.Equal(t, waiterID, w.WaiterID)
			require.Contains(t, w.WaiterQuery, "SET v = 2")
			require.NotEqual(t, w.WaiterID, w.BlockerID)
			require.Empty(t, w.BlockerQuery, "the holder is idle in its transaction")
			require.Contains(t, w.Table, "held")
			require.Equal(t, c.index, w.Index)
			require.Equal(t, c.mode, w.Mode)
			if f != lockview.Postgres {
				require.Equal(t, c.data, w.Data)
			}

			// The lock table at the same moment: the holder's lock granted,
			// the waiter's not, on the same row.
			locks, err := lockview.Locks(ctx, db, f)
			require.NoError(t, err)
			var granted, waiting int
			for _, l := range locks {
				t.Logf("lock: %+v", l)
				if l.Table != "" { // PostgreSQL's transaction locks name none
					require.Contains(t, l.Table, "held")
				}
				if l.Granted {
					granted++
				} else {
					waiting++
					require.Equal(t, waiterID, l.Session)
				}
				if f != lockview.Postgres && l.Index != "" {
					// Record locks; MySQL lists the table's IX locks too.
					require.Equal(t, c.index, l.Index)
					require.Equal(t, c.mode, l.Mode)
					require.Equal(t, c.data, l.Data)
				}
			}
			require.Positive(t, granted)
			require.Equal(t, 1, waiting)
			require.NotEmpty(t, lockview.LocksNote(f))
			require.NoError(t, release())
			require.NoError(t, <-done)
			require.Eventually(t, func() bool {
				ws, err := lockview.Waits(ctx, db, f)
				return err == nil && len(ws) == 0
			}, 5*time.Second, lockview.PollInterval)
		})
	}
}

// TestWaitsNameTheHolderOfAnImplicitLock: a transaction that changed a
// unique key holds that key's index record by an implicit lock, which the
// session that runs into it (an INSERT of the same key) turns into a lock
// row itself. The wait and the lock table still name the holder's session,
// not the waiter's, and each transaction's locks its own session.
func TestWaitsNameTheHolderOfAnImplicitLock(t *testing.T) {
	for _, c := range servers() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			db := open(t, c.driver, c.dsn(t))
			f, err := lockview.Detect(ctx, db)
			require.NoError(t, err)
			for _, q := range []string{
				"CREATE TABLE u (id BIGINT PRIMARY KEY, k INT NOT NULL, CONSTRAINT u_k UNIQUE (k))",
				"INSERT INTO u (id, k) VALUES (1, 1)",
			} {
				_, err := db.ExecContext(ctx, q)
				require.NoError(t, err, q)
			}
			idQuery := "SELECT CONNECTION_ID()"
			if f == lockview.Postgres {
				idQuery = "SELECT pg_backend_pid()"
			}
			session := func() (*sql.Conn, int64) {
				conn, err := db.Conn(ctx)
				require.NoError(t, err)
				t.Cleanup(func() { _ = conn.Close() })
				var id int64
				require.NoError(t, conn.QueryRowContext(ctx, idQuery).Scan(&id))
				return conn, id
			}
			holderConn, holderID := session()
			waiterConn, waiterID := session()
			holder, err := holderConn.BeginTx(ctx, nil)
			require.NoError(t, err)
			defer func() { _ = holder.Rollback() }()
			_, err = holder.ExecContext(ctx, "UPDATE u SET k = 5 WHERE id = 1")
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() {
				_, err := waiterConn.ExecContext(ctx, "INSERT INTO u (id, k) VALUES (2, 5)")
				done <- err
			}()
			waits, err := lockview.WaitFor(ctx, db, f, nil, nil)
			require.NoError(t, err)
			require.Len(t, waits, 1)
			t.Logf("%s", waits[0])
			require.Equal(t, waiterID, waits[0].WaiterID)
			require.Equal(t, holderID, waits[0].BlockerID)

			locks, err := lockview.Locks(ctx, db, f)
			require.NoError(t, err)
			sessionOf := map[string]int64{}
			for _, l := range locks {
				t.Logf("lock: %+v", l)
				require.Contains(t, []int64{holderID, waiterID}, l.Session)
				if s, ok := sessionOf[l.Trx]; ok {
					require.Equal(t, s, l.Session, "the locks of transaction %s", l.Trx)
				}
				sessionOf[l.Trx] = l.Session
			}
			require.NoError(t, holder.Rollback())
			require.NoError(t, <-done)
		})
	}
}

// TestWaitsOfOtherDatabasesAreNotShown: Waits and Locks read a server-wide
// lock table; a wait between sessions of another database, seen from its
// own database, is not shown to an observer of this one.
func TestWaitsOfOtherDatabasesAreNotShown(t *testing.T) {
	for _, c := range servers() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			other := open(t, c.driver, c.dsn(t))
			mine := open(t, c.driver, c.dsn(t))
			f, err := lockview.Detect(ctx, mine)
			require.NoError(t, err)
			release := holdRow(t, ctx, other)
			done := make(chan error, 1)
			go func() {
				_, err := other.ExecContext(ctx, "UPDATE held SET v = 2 WHERE id = 1")
				done <- err
			}()
			seen, err := lockview.WaitFor(ctx, other, f, nil, nil)
			require.NoError(t, err)
			require.Len(t, seen, 1)

			// The wait is still there (nothing released it), and this
			// database's observer sees none of it.
			ws, err := lockview.Waits(ctx, mine, f)
			require.NoError(t, err)
			require.Empty(t, ws)
			locks, err := lockview.Locks(ctx, mine, f)
			require.NoError(t, err)
			require.Empty(t, locks)
			again, err := lockview.Waits(ctx, other, f)
			require.NoError(t, err)
			require.Len(t, again, 1, "the other database's wait lasted throughout")

			require.NoError(t, release())
			require.NoError(t, <-done)
		})
	}
}

// TestWaitsAreThoseOnThisDatabasesTables: MySQL and MariaDB sessions can
// lock any database's tables. A session of the other database waits for a
// row of this one's table, and a session of this database for a row of the
// other's: each is shown to the database whose table it is (Waits, and
// Locks as a lock not granted), and counted by the other's OtherWaits.
// The wait on this database's table is the one that can hold up its own
// sessions, whoever's session waits.
func TestWaitsAreThoseOnThisDatabasesTables(t *testing.T) {
	for _, c := range servers() {
		if c.flavor == lockview.Postgres {
			continue // a PostgreSQL session reaches only its own database
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			mine := open(t, c.driver, c.dsn(t))
			other := open(t, c.driver, c.dsn(t))
			f, err := lockview.Detect(ctx, mine)
			require.NoError(t, err)
			name := func(db *sql.DB) string {
				var n string
				require.NoError(t, db.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&n))
				return n
			}
			myName, theirName := name(mine), name(other)
			releaseMine := holdRow(t, ctx, mine)
			releaseTheirs := holdRow(t, ctx, other)

			session := func(db *sql.DB) (*sql.Conn, int64) {
				conn, err := db.Conn(ctx)
				require.NoError(t, err)
				t.Cleanup(func() { _ = conn.Close() })
				var id int64
				require.NoError(t, conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id))
				return conn, id
			}
			var done []chan error
			block := func(conn *sql.Conn, q string) {
				ch := make(chan error, 1)
				done = append(done, ch)
				go func() {
					_, err := conn.ExecContext(ctx, q)
					ch <- err
				}()
			}
			// visitor: of the other database, on this one's table; away: of
			// this database, on the other's.
			visitor, visitorID := session(other)
			block(visitor, "UPDATE `"+myName+"`.held SET v = 2 WHERE id = 1")
			away, awayID := session(mine)
			block(away, "UPDATE `"+theirName+"`.held SET v = 2 WHERE id = 1")

			for _, x := range []struct {
				db     *sql.DB
				table  string
				waiter int64
			}{{mine, myName, visitorID}, {other, theirName, awayID}} {
				ws, err := lockview.WaitFor(ctx, x.db, f, func(w lockview.Wait) bool { return w.WaiterID == x.waiter }, nil)
				require.NoError(t, err)
				require.Len(t, ws, 1, "%v", ws)
				require.Equal(t, "`"+x.table+"`.`held`", ws[0].Table)
				require.Equal(t, c.data, ws[0].Data)
				n, err := lockview.OtherWaits(ctx, x.db, f)
				require.NoError(t, err)
				require.Equal(t, 1, n, "the other database's wait is counted, not shown")
				locks, err := lockview.Locks(ctx, x.db, f)
				require.NoError(t, err)
				var waiting []int64
				for _, l := range locks {
					require.Equal(t, "`"+x.table+"`.`held`", l.Table)
					if !l.Granted {
						waiting = append(waiting, l.Session)
					}
				}
				require.Equal(t, []int64{x.waiter}, waiting, "the lock table's wait is the same one")
			}

			require.NoError(t, releaseMine())
			require.NoError(t, releaseTheirs())
			for _, ch := range done {
				require.NoError(t, <-ch)
			}
		})
	}
}

// TestPostgresReadsKeepThePoolsPlannerSettings: driver/postgres turns
// sequential scans and sorts off for the queue's pool, and a dashboard
// reads the lock views through that pool by default. The reads turn them
// back on for their own transaction only (with them off, Waits took
// seconds): the pool's session keeps its settings afterwards.
func TestPostgresReadsKeepThePoolsPlannerSettings(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	db := open(t, "pgx", dsn+sep+"enable_seqscan=off&enable_sort=off")
	db.SetMaxOpenConns(1) // one session: the one the reads ran on
	setting := func(name string) string {
		var v string
		require.NoError(t, db.QueryRowContext(ctx, "SELECT current_setting($1)", name).Scan(&v))
		return v
	}
	require.Equal(t, "off", setting("enable_seqscan"))
	start := time.Now()
	_, err := lockview.Waits(ctx, db, lockview.Postgres)
	require.NoError(t, err)
	_, err = lockview.Locks(ctx, db, lockview.Postgres)
	require.NoError(t, err)
	_, err = lockview.OtherWaits(ctx, db, lockview.Postgres)
	require.NoError(t, err)
	t.Logf("Waits, Locks and OtherWaits took %v", time.Since(start))
	require.Equal(t, "off", setting("enable_seqscan"))
	require.Equal(t, "off", setting("enable_sort"))
}

// TestWaitsNeedsPrivilege: the servers hide their lock tables from a user
// with rights on its own database only, and the error says which grant
// is missing. MariaDB needs PROCESS; MySQL reads performance_schema, which
// SELECT on it opens without PROCESS.
func TestWaitsNeedsPrivilege(t *testing.T) {
	for _, c := range []struct {
		name     string
		dsn      func(testing.TB) string
		adminDSN func(testing.TB) string
		flavor   lockview.Flavor
		// grant opens the lock tables; the error names what it grants.
		grant, names string
	}{
		{"MariaDB", testdb.MySQL, testdb.MySQLAdminDSN, lockview.MariaDB, "GRANT PROCESS ON *.* TO '%s'@'%%'", "PROCESS"},
		{"OracleMySQL", testdb.OracleMySQL, testdb.OracleMySQLAdminDSN, lockview.MySQL, "GRANT SELECT ON performance_schema.* TO '%s'@'%%'", "SELECT on performance_schema"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			cfg, err := gomysql.ParseDSN(c.dsn(t))
			require.NoError(t, err)
			admin := open(t, "mysql", c.adminDSN(t))
			user := "noproc_" + strings.TrimPrefix(cfg.DBName, "lst_")
			for _, q := range []string{
				fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY 'pw'", user),
				fmt.Sprintf("GRANT ALL ON `%s`.* TO '%s'@'%%'", cfg.DBName, user),
			} {
				_, err := admin.ExecContext(ctx, q)
				require.NoError(t, err, q)
			}
			t.Cleanup(func() { _, _ = admin.Exec(fmt.Sprintf("DROP USER '%s'@'%%'", user)) })
			cfg.User, cfg.Passwd = user, "pw"
			db := open(t, "mysql", cfg.FormatDSN())
			f, err := lockview.Detect(ctx, db)
			require.NoError(t, err)
			require.Equal(t, c.flavor, f)
			_, err = lockview.Waits(ctx, db, f)
			require.ErrorIs(t, err, lockview.ErrPrivilege)
			require.Contains(t, err.Error(), c.names)
			t.Logf("%v", err)
			_, err = lockview.Locks(ctx, db, f)
			require.ErrorIs(t, err, lockview.ErrPrivilege)

			grant := fmt.Sprintf(c.grant, user)
			_, err = admin.ExecContext(ctx, grant)
			require.NoError(t, err)
			// A grant reaches sessions opened after it.
			require.NoError(t, db.Close())
			db = open(t, "mysql", cfg.FormatDSN())
			_, err = lockview.Waits(ctx, db, f)
			require.NoError(t, err, "after %s", grant)
			_, err = lockview.Locks(ctx, db, f)
			require.NoError(t, err, "after %s", grant)
		})
	}
}
