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

// TestWaitsShowsARowLockWait: one session holds a row, another waits for
// it; Waits names both sessions, the table and the waiter's statement, and
// nothing is shown once the holder lets go.
func TestWaitsShowsARowLockWait(t *testing.T) {
	cases := []struct {
		name, driver, dsn string
		want              lockview.Flavor
	}{
		{"MariaDB", "mysql", testdb.MySQL(t), lockview.MariaDB},
		{"PostgreSQL", "pgx", testdb.Postgres(t), lockview.Postgres},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			db := open(t, c.driver, c.dsn)
			f, err := lockview.Detect(ctx, db)
			require.NoError(t, err)
			require.Equal(t, c.want, f)
			_, err = db.ExecContext(ctx, "CREATE TABLE held (id BIGINT PRIMARY KEY, v INT NOT NULL)")
			require.NoError(t, err)
			_, err = db.ExecContext(ctx, "INSERT INTO held (id, v) VALUES (1, 0)")
			require.NoError(t, err)

			holder, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			defer func() { _ = holder.Rollback() }()
			_, err = holder.ExecContext(ctx, "UPDATE held SET v = 1 WHERE id = 1")
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() {
				_, err := db.ExecContext(ctx, "UPDATE held SET v = 2 WHERE id = 1")
				done <- err
			}()
			waits, err := lockview.WaitFor(ctx, db, f, nil, nil)
			require.NoError(t, err)
			require.Len(t, waits, 1)
			w := waits[0]
			t.Logf("%s", w)
			require.Contains(t, w.WaiterQuery, "SET v = 2")
			require.NotEqual(t, w.WaiterID, w.BlockerID)
			require.Contains(t, w.Table, "held")
			if f == lockview.MariaDB {
				require.Equal(t, "PRIMARY", w.Index)
				require.Equal(t, "X", w.Mode)
				require.Equal(t, "1", w.Data)
			}
			// The lock table at the same moment: the holder's lock granted,
			// the waiter's not, on the same row.
			locks, err := lockview.Locks(ctx, db, f)
			require.NoError(t, err)
			var granted, waiting int
			for _, l := range locks {
				t.Logf("lock: %+v", l)
				if l.Granted {
					granted++
				} else {
					waiting++
				}
				if f == lockview.MariaDB {
					require.Equal(t, "PRIMARY", l.Index)
					require.Equal(t, "1", l.Data)
				}
			}
			require.Positive(t, granted)
			require.Equal(t, 1, waiting)
			require.NotEmpty(t, lockview.LocksNote(f))
			require.NoError(t, holder.Commit())
			require.NoError(t, <-done)
			require.Eventually(t, func() bool {
				ws, err := lockview.Waits(ctx, db, f)
				return err == nil && len(ws) == 0
			}, 5*time.Second, lockview.PollInterval)
		})
	}
}

// TestWaitsNeedsProcessPrivilege: MariaDB hides its lock tables from a user
// without PROCESS; the error says which privilege to grant.
func TestWaitsNeedsProcessPrivilege(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.MySQL(t)
	cfg, err := gomysql.ParseDSN(dsn)
	require.NoError(t, err)
	admin := open(t, "mysql", testdb.MySQLAdminDSN(t))
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
	_, err = lockview.Waits(ctx, db, lockview.MariaDB)
	require.ErrorIs(t, err, lockview.ErrPrivilege)
	require.Contains(t, err.Error(), "PROCESS")
}
