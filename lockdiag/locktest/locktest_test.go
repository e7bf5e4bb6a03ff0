package locktest_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/lockdiag/locktest"
	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// fatalTB records the first Fatalf and ends the goroutine, as a failing
// test would.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatalMessage runs fn with a testing.TB whose Fatalf is recorded, and
// returns what it said ("" if it passed).
func fatalMessage(fn func(testing.TB)) string {
	f := &fatalTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f.msg
}

// TestHelpers: hold a row, see another session wait for it, check plans,
// and run the regression test for a safe pair — on MariaDB, Oracle MySQL
// and PostgreSQL.
func TestHelpers(t *testing.T) {
	for _, c := range []struct {
		name, driver string
		dsn          func(testing.TB) string
		pk           string
	}{
		{"MariaDB", "mysql", testdb.MySQL, "PRIMARY"},
		{"OracleMySQL", "mysql", testdb.OracleMySQL, "PRIMARY"},
		{"PostgreSQL", "pgx", testdb.Postgres, "t_pkey"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, err := sql.Open(c.driver, c.dsn(t))
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			_, err = db.Exec("CREATE TABLE t (id BIGINT PRIMARY KEY, v INT NOT NULL)")
			require.NoError(t, err)
			_, err = db.Exec("INSERT INTO t (id, v) VALUES (1, 0), (2, 0)")
			require.NoError(t, err)
			q := func(s string) string {
				if c.driver == "pgx" {
					return s[:len(s)-1] + "$1"
				}
				return s
			}

			release := locktest.Hold(t, db, q("SELECT id FROM t WHERE id = ?")+" FOR UPDATE", 1)
			done := make(chan error, 1)
			go func() {
				_, err := db.Exec(q("UPDATE t SET v = 1 WHERE id = ?"), 1)
				done <- err
			}()
			waits := locktest.WaitForLockWait(t, db, "", 30*time.Second)
			require.Len(t, waits, 1)
			t.Log(waits[0])
			flavor, err := lockview.Detect(context.Background(), db)
			require.NoError(t, err)
			switch flavor {
			case lockview.MariaDB:
				// MariaDB's INNODB_LOCKS says X for a record-only lock.
				require.Equal(t, "X", waits[0].Mode)
			case lockview.MySQL:
				// MySQL's data_locks names the gap part too.
				require.Equal(t, "X,REC_NOT_GAP", waits[0].Mode)
			}
			release()
			require.NoError(t, <-done)

			if c.driver == "mysql" {
				locktest.RequirePlan(t, db, q("UPDATE t SET v = 2 WHERE id = ?"), []any{2}, c.pk)
				// And it fails a plan that is not the one asked for, and a
				// full scan.
				msg := fatalMessage(func(tb testing.TB) {
					locktest.RequirePlan(tb, db, "UPDATE t SET v = 2 WHERE id = ?", []any{2}, "idx_v")
				})
				require.Contains(t, msg, "is planned through [PRIMARY], not idx_v")
				msg = fatalMessage(func(tb testing.TB) {
					locktest.RequirePlan(tb, db, "SELECT id FROM t WHERE v = ?", []any{2}, c.pk)
				})
				require.Contains(t, msg, "no index in the plan (a full scan)")
			} else {
				_, err = db.Exec("SET enable_seqscan = off")
				require.NoError(t, err)
			}

			out := locktest.RegressionTest(t, db,
				func(ctx context.Context, pause func()) error {
					tx, err := db.BeginTx(ctx, nil)
					if err != nil {
						return err
					}
					defer func() { _ = tx.Rollback() }()
					if _, err := tx.ExecContext(ctx, q("UPDATE t SET v = 3 WHERE id = ?"), 1); err != nil {
						return err
					}
					pause()
					if _, err := tx.ExecContext(ctx, q("UPDATE t SET v = 3 WHERE id = ?"), 2); err != nil {
						return err
					}
					return tx.Commit()
				},
				func(ctx context.Context) error {
					// Same order as A: row 1, then row 2.
					tx, err := db.BeginTx(ctx, nil)
					if err != nil {
						return err
					}
					defer func() { _ = tx.Rollback() }()
					for _, id := range []int{1, 2} {
						if _, err := tx.ExecContext(ctx, q("UPDATE t SET v = 4 WHERE id = ?"), id); err != nil {
							return err
						}
					}
					return tx.Commit()
				})
			require.True(t, out.BWaited)
		})
	}
}
