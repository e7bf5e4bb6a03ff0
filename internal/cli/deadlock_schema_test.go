package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/clitest"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/lab/attempt"
	"github.com/lockstep-queue/lockstep/lab/repro"
	"github.com/lockstep-queue/lockstep/lockdiag/deadlock"
	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
)

// liveServers are the InnoDB servers the live decode tests make deadlocks
// on.
func liveServers() []struct {
	name string
	dsn  func(testing.TB) string
} {
	return []struct {
		name string
		dsn  func(testing.TB) string
	}{{"MariaDB", testdb.MySQL}, {"OracleMySQL", testdb.OracleMySQL}}
}

// latestDeadlock reads the server's LATEST DETECTED DEADLOCK and checks
// that it is about table (schema.table): the report is server-wide.
func latestDeadlock(t *testing.T, ctx context.Context, db *sql.DB, table string) string {
	t.Helper()
	status, err := innodbStatus(ctx, db)
	require.NoError(t, err)
	rs, err := deadlock.ParseString(status)
	require.NoError(t, err)
	require.Len(t, rs, 1)
	for _, tr := range rs[0].Transactions {
		require.NotNil(t, tr.Waits)
		require.Equal(t, table, tr.Waits.Table, "the server's latest deadlock is this test's")
	}
	return status
}

// TestDeadlockDecodeDroppedTable: lab repro's deadlock, decoded with --dsn
// after the reproduction dropped its attempt table. The report names a
// table the server no longer has: its keys are inferred from the bytes
// exactly as with no schema (not read as a table without a primary key:
// no DB_ROW_ID, no ORDER BY DB_ROW_ID), the output says the table was not
// found on the server, and the pattern and fix are those of the
// claim/cancel deadlock. Not parallel: --dsn reads the server's latest
// deadlock, whichever database it was in.
func TestDeadlockDecodeDroppedTable(t *testing.T) {
	for _, srv := range liveServers() {
		t.Run(srv.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			dsn := srv.dsn(t)
			db, err := sql.Open("mysql", dsn)
			require.NoError(t, err)
			defer func() { _ = db.Close() }()
			observer, err := sql.Open("mysql", dsn)
			require.NoError(t, err)
			defer func() { _ = observer.Close() }()
			var dbName string
			require.NoError(t, db.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&dbName))
			table := dbName + ".attempt"

			variant, err := attempt.LookupCancel("range-status")
			require.NoError(t, err)
			claim, err := attempt.LookupClaim("primary")
			require.NoError(t, err)
			res, err := repro.Run(ctx, db, observer, repro.Options{Cancel: variant, Claim: claim})
			require.NoError(t, err)
			require.True(t, res.Deadlock)
			var n int
			require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'attempt'").Scan(&n))
			require.Zero(t, n, "lab repro dropped its table")
			status := latestDeadlock(t, ctx, db, table)
			plain, err := deadlock.ParseString(status)
			require.NoError(t, err)

			url := clitest.MySQLURL(t, dsn)
			code, out, errOut := runCLI(t, "--dsn", url, "deadlock", "decode")
			require.Equal(t, 0, code, errOut)
			t.Log("\n" + out)
			require.Contains(t, out, "Keys: column types inferred from the bytes: table "+table+" was not found in the live server's information_schema (dropped or renamed since the deadlock?)")
			require.NotContains(t, out, "give --schema or --dsn", "--dsn was given")
			require.NotContains(t, out, "DB_ROW_ID")
			require.Contains(t, out, "Pattern: opposite-index-order on "+table+" (idx_status vs PRIMARY)")
			require.Contains(t, out, "Fix: Make (")
			require.NotContains(t, out, "has no PRIMARY KEY")

			code, out, errOut = runCLI(t, "--dsn", url, "deadlock", "decode", "--json")
			require.Equal(t, 0, code, errOut)
			var got struct{ Reports []*deadlock.Report }
			require.NoError(t, json.Unmarshal([]byte(out), &got), out)
			require.Len(t, got.Reports, 1)
			r := got.Reports[0]
			require.Equal(t, []string{table}, r.TablesNotFound)
			require.Empty(t, r.SchemaSource)
			// Every record as the decoder reads it with no schema at all.
			for i, tr := range r.Transactions {
				want := plain[0].Transactions[i]
				require.Equal(t, recordsOf(want), recordsOf(tr))
			}
			require.Equal(t, plain[0].Pattern.Fix, r.Pattern.Fix)
		})
	}
}

func recordsOf(t *deadlock.Transaction) []string {
	var out []string
	locks := append(append([]*deadlock.Lock{}, t.Holds...), t.Conflicts...)
	if t.Waits != nil {
		locks = append(locks, t.Waits)
	}
	for _, l := range locks {
		for _, rec := range l.Records {
			out = append(out, l.Index+" "+rec.String())
		}
	}
	return out
}

// TestDeadlockDecodeTableWithoutPrimaryKey: a real table without a
// primary key, which InnoDB clusters by its hidden row id. Two READ
// COMMITTED sessions update its two rows in opposite order (each UPDATE
// scans the table; semi-consistent reads skip the row the other holds
// when it does not match), the second UPDATE of A is seen waiting before
// B's second one closes the cycle. Decoded with --dsn, the records are
// GEN_CLUST_INDEX's, keyed by DB_ROW_ID, and the fix says to add a
// primary key: it never orders or filters by DB_ROW_ID, which no
// statement can name. Not parallel: --dsn reads the server's latest
// deadlock.
func TestDeadlockDecodeTableWithoutPrimaryKey(t *testing.T) {
	for _, srv := range liveServers() {
		t.Run(srv.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			dsn := srv.dsn(t)
			db, err := sql.Open("mysql", dsn)
			require.NoError(t, err)
			defer func() { _ = db.Close() }()
			f, err := lockview.Detect(ctx, db)
			require.NoError(t, err)
			var dbName string
			require.NoError(t, db.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&dbName))
			table := dbName + ".nokey"
			for _, q := range []string{
				"CREATE TABLE nokey (i INT NOT NULL, v INT NOT NULL) ENGINE=InnoDB",
				"INSERT INTO nokey VALUES (1, 0), (2, 0)",
			} {
				_, err := db.ExecContext(ctx, q)
				require.NoError(t, err, q)
			}
			session := func() (*sql.Tx, int64) {
				conn, err := db.Conn(ctx)
				require.NoError(t, err)
				t.Cleanup(func() { _ = conn.Close() })
				var id int64
				require.NoError(t, conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id))
				tx, err := conn.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
				require.NoError(t, err)
				t.Cleanup(func() { _ = tx.Rollback() })
				return tx, id
			}
			a, aID := session()
			b, _ := session()
			_, err = a.ExecContext(ctx, "UPDATE nokey SET v = 1 WHERE i = 1")
			require.NoError(t, err)
			_, err = b.ExecContext(ctx, "UPDATE nokey SET v = 2 WHERE i = 2")
			require.NoError(t, err)
			var aDone atomic.Bool
			aErr := make(chan error, 1)
			go func() {
				defer aDone.Store(true)
				_, err := a.ExecContext(ctx, "UPDATE nokey SET v = 1 WHERE i = 2")
				aErr <- err
			}()
			ws, err := lockview.WaitFor(ctx, db, f, func(w lockview.Wait) bool { return w.WaiterID == aID }, aDone.Load)
			require.NoError(t, err)
			require.NotEmpty(t, ws, "A's second UPDATE waits for B's row")
			_, bErr := b.ExecContext(ctx, "UPDATE nokey SET v = 2 WHERE i = 1")
			require.True(t, <-aErr != nil || bErr != nil, "one of the two is rolled back with 1213")
			latestDeadlock(t, ctx, db, table)

			code, out, errOut := runCLI(t, "--dsn", clitest.MySQLURL(t, dsn), "deadlock", "decode")
			require.Equal(t, 0, code, errOut)
			t.Log("\n" + out)
			require.Contains(t, out, "Keys: column types from the live server's information_schema\n")
			require.Contains(t, out, "GEN_CLUST_INDEX of "+table)
			require.Contains(t, out, "DB_ROW_ID=", "the records are the hidden row id's")
			_, fix, ok := strings.Cut(out, "\nFix: ")
			require.True(t, ok, "a pattern is recognised")
			require.Contains(t, out, "Pattern: opposite-row-order on "+table)
			require.NotContains(t, fix, "DB_ROW_ID")
			require.Contains(t, fix, table+" has no PRIMARY KEY")
			require.Contains(t, fix, "ALTER TABLE nokey ADD PRIMARY KEY")
		})
	}
}

// TestDeadlockDecodeNeedsProcess: a user with rights on its own database
// only is refused SHOW ENGINE INNODB STATUS (error 1227), and decode --dsn
// says which privilege is missing.
func TestDeadlockDecodeNeedsProcess(t *testing.T) {
	for _, c := range []struct {
		name       string
		dsn, admin func(testing.TB) string
	}{
		{"MariaDB", testdb.MySQL, testdb.MySQLAdminDSN},
		{"OracleMySQL", testdb.OracleMySQL, testdb.OracleMySQLAdminDSN},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			cfg, err := gomysql.ParseDSN(c.dsn(t))
			require.NoError(t, err)
			admin, err := sql.Open("mysql", c.admin(t))
			require.NoError(t, err)
			defer func() { _ = admin.Close() }()
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
			code, _, errOut := runCLI(t, "--dsn", clitest.MySQLURL(t, cfg.FormatDSN()), "deadlock", "decode")
			require.NotEqual(t, 0, code)
			require.Contains(t, errOut, "SHOW ENGINE INNODB STATUS needs the PROCESS privilege")
		})
	}
}
