package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/clitest"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/lockdiag/deadlock"
	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
)

func TestDeadlockDecodeMySQL84Text(t *testing.T) {
	code, out, errOut := runCLI(t, "deadlock", "decode", deadlockTestdata("claim_cancel_mysql84.txt"))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Transaction (1)  trx 4254804, 12 row lock(s)\n  statement: UPDATE attempt SET status='CANCELLED' WHERE run_id=3")
	require.Contains(t, out, "  holds:     idx_status of lab.attempt, X next-key\n             heap no 424: ('PENDING', 99)\n             heap no 429: ('PENDING', 300)")
	require.Contains(t, out, "  waits for: PRIMARY of lab.attempt, X rec-not-gap\n             heap no 109: (300)")
	require.Contains(t, out, "Transaction (2)  trx 4254803, 2 row lock(s)  ← ROLLED BACK")
	require.Contains(t, out, "  waits for: idx_status of lab.attempt, X rec-not-gap\n             heap no 429: ('PENDING', 300)")
	require.Contains(t, out, "Victim: (2) «UPDATE attempt SET status='RUNNING' WHERE id=300 AND status='PENDING'»")
	require.Contains(t, out, "Pattern: opposite-index-order on lab.attempt (idx_status vs PRIMARY)")
	require.Contains(t, out, "Fix: Make (1) lock in the same order as (2)")
	require.NotContains(t, out, "deadlock(s) in", "one report is not aggregated")
}

func TestDeadlockDecodeJSONStdin(t *testing.T) {
	f, err := os.Open(deadlockTestdata("sample_deadlock_force_status_claimpk.txt"))
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	saved := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = saved }()

	code, out, errOut := runCLI(t, "deadlock", "decode", "-", "--json")
	require.Equal(t, 0, code, errOut)
	var got struct {
		Reports []*deadlock.Report
		Groups  []*deadlock.Group
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Len(t, got.Reports, 1)
	require.Empty(t, got.Groups)
	r := got.Reports[0]
	require.Equal(t, "mariadb", r.Format)
	require.Equal(t, 1, r.Victim)
	require.Equal(t, "idx_status", r.Transactions[0].Waits.Index)
	require.Equal(t, "'PENDING'", r.Transactions[0].Waits.Records[0].Fields[0].Value)
	require.Equal(t, "262", r.Transactions[0].Waits.Records[0].Fields[1].Value)
	require.Equal(t, "PRIMARY", r.Transactions[1].Waits.Index)
	require.Equal(t, "idx_status", r.Pattern.Secondary)
	require.Equal(t, 2, r.Pattern.SecondaryFirst)
}

func TestDeadlockDecodeErrorLogAggregates(t *testing.T) {
	code, out, errOut := runCLI(t, "deadlock", "decode", deadlockTestdata("errorlog_mariadb.txt"))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "8 deadlock(s) in 5 group(s), most frequent first")
	require.Contains(t, out, "#1  3×  table research.attempt, indexes PRIMARY ↔ idx_status  [opposite-index-order]")
	require.Contains(t, out, "    UPDATE attempt FORCE INDEX(PRIMARY) SET status=? WHERE id=? AND status=?   (rolled back 3×)")
	require.Contains(t, out, "#2  2×  table research.attempt, indexes PRIMARY ↔ idx_status")
	require.Contains(t, out, "took idx_status before PRIMARY: UPDATE attempt SET status=? WHERE id=? AND status=?")
	require.Contains(t, out, "Group #5, first occurrence:")

	code, out, errOut = runCLI(t, "deadlock", "decode", "--aggregate=false", deadlockTestdata("errorlog_mariadb.txt"))
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, out, "group(s)")
	require.Contains(t, out, "Deadlock (mariadb report, line 3")
}

func TestDeadlockDecodeErrors(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.txt")
	require.NoError(t, os.WriteFile(empty, []byte("nothing here\n"), 0o644))
	code, _, errOut := runCLI(t, "deadlock", "decode", empty)
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "no deadlock report in the input")

	code, _, errOut = runCLI(t, "deadlock", "decode", filepath.Join(t.TempDir(), "missing.txt"))
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "read deadlock report")

	// A garbled report: the line and what should be there, in words.
	b, err := os.ReadFile(deadlockTestdata("claim_cancel_mysql84.txt"))
	require.NoError(t, err)
	bad := filepath.Join(t.TempDir(), "bad.txt")
	require.NoError(t, os.WriteFile(bad, []byte(strings.Replace(string(b), "page no 13 n bits", "page no 1x3 n bits", 1)), 0o644))
	code, _, errOut = runCLI(t, "deadlock", "decode", bad)
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "the report starting at line 1 is skipped: line 9 should be a whole RECORD LOCKS or TABLE LOCK line")
	require.NotContains(t, errOut, "strconv")

	schema := filepath.Join(t.TempDir(), "schema.sql")
	require.NoError(t, os.WriteFile(schema, []byte("SELECT 1"), 0o644))
	code, _, errOut = runCLI(t, "deadlock", "decode", "--schema", schema, deadlockTestdata("claim_cancel_mysql84.txt"))
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "no CREATE TABLE statement found")
}

func TestDeadlockAggregateCommand(t *testing.T) {
	code, out, errOut := runCLI(t, "deadlock", "aggregate", deadlockTestdata("errorlog_mariadb.txt"))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "8 deadlock(s) in 5 group(s), most frequent first")
	require.Contains(t, out, "    seen 2026-11-30 06:27:27 … 2026-11-30 06:27:27\n")
	// One report is still grouped by the aggregate command.
	code, out, errOut = runCLI(t, "deadlock", "aggregate", deadlockTestdata("claim_cancel_mysql84.txt"))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "1 deadlock(s) in 1 group(s)")
}

// TestDeadlockDecodeLive makes the claim/cancel deadlock on a throwaway
// MariaDB and Oracle MySQL (session A holds PRIMARY 5, session B's cancel
// through idx_status waits for it, then A's claim needs B's idx_status
// record) and decodes SHOW ENGINE INNODB STATUS with field names from
// information_schema.
func TestDeadlockDecodeLive(t *testing.T) {
	for _, c := range []struct {
		name   string
		dsn    func(testing.TB) string
		format string
		// derived: the report has no HOLDS THE LOCK(S) (MariaDB's); what a
		// transaction holds is read from the other's CONFLICTING WITH.
		derived bool
	}{
		{"MariaDB", testdb.MySQL, "mariadb", true},
		{"OracleMySQL", testdb.OracleMySQL, "mysql", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			testDeadlockDecodeLive(t, c.dsn(t), c.format, c.derived)
		})
	}
}

func testDeadlockDecodeLive(t *testing.T, rawDSN, format string, derived bool) {
	db, err := sql.Open("mysql", rawDSN)
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	flavor, err := lockview.Detect(ctx, db)
	require.NoError(t, err)

	_, err = db.ExecContext(ctx, `CREATE TABLE attempt (
  id BIGINT PRIMARY KEY, run_id BIGINT NOT NULL, status VARCHAR(16) NOT NULL,
  KEY idx_run (run_id), KEY idx_status (status)) ENGINE=InnoDB`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO attempt VALUES
  (1,1,'DONE'),(2,1,'DONE'),(3,1,'DONE'),(4,1,'PENDING'),(5,1,'PENDING'),(6,2,'DONE'),(7,2,'PENDING')`)
	require.NoError(t, err)

	a, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = a.Rollback() }()
	var id int64
	require.NoError(t, a.QueryRowContext(ctx, "SELECT id FROM attempt WHERE id=5 FOR UPDATE").Scan(&id))

	var bDone atomic.Bool
	bErr := make(chan error, 1)
	go func() {
		defer bDone.Store(true)
		b, err := db.BeginTx(ctx, nil)
		if err != nil {
			bErr <- err
			return
		}
		_, err = b.ExecContext(ctx, "UPDATE attempt FORCE INDEX(idx_status) SET status='CANCELLED' WHERE run_id=1 AND status IN ('PENDING','RUNNING')")
		if err != nil {
			_ = b.Rollback()
			bErr <- err
			return
		}
		bErr <- b.Commit()
	}()
	ws, err := lockview.WaitFor(ctx, db, flavor, nil, bDone.Load)
	require.NoError(t, err)
	require.NotEmpty(t, ws, "the cancel should wait for PRIMARY 5")

	_, claimErr := a.ExecContext(ctx, "UPDATE attempt SET status='RUNNING' WHERE id=5 AND status='PENDING'")
	cancelErr := <-bErr
	require.True(t, claimErr != nil || cancelErr != nil, "one of the two must be rolled back with 1213")

	dbName := strings.SplitN(rawDSN[strings.LastIndex(rawDSN, "/")+1:], "?", 2)[0]
	code, out, errOut := runCLI(t, "--dsn", clitest.MySQLURL(t, rawDSN), "deadlock", "decode", "--json")
	require.Equal(t, 0, code, errOut)
	var got struct{ Reports []*deadlock.Report }
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Len(t, got.Reports, 1)
	r := got.Reports[0]
	require.Equal(t, format, r.Format)
	require.NotNil(t, r.Pattern, out)
	require.Equal(t, dbName+".attempt", r.Pattern.Table)
	require.Equal(t, "idx_status", r.Pattern.Secondary)
	require.Equal(t, "5", r.Pattern.Row)
	canceller := r.Transaction(r.Pattern.SecondaryFirst)
	require.Contains(t, canceller.Query, "FORCE INDEX(idx_status)")
	// Field names come from information_schema.
	w := canceller.Waits.Records[0].Fields
	require.Equal(t, []string{"id", "DB_TRX_ID", "DB_ROLL_PTR", "run_id", "status"},
		[]string{w[0].Name, w[1].Name, w[2].Name, w[3].Name, w[4].Name})
	claimer := r.Transaction(r.Pattern.PrimaryFirst)
	cw := claimer.Waits.Records[0]
	require.Equal(t, "(status='PENDING', id=5)", cw.Key())
	// What each holds: the canceller idx_status records, the claimer
	// PRIMARY 5.
	for _, h := range []struct {
		trx   *deadlock.Transaction
		index string
	}{{canceller, "idx_status"}, {claimer, "PRIMARY"}} {
		require.NotEmpty(t, h.trx.Holds, out)
		var indexes []string
		for _, l := range h.trx.Holds {
			require.Equal(t, derived, l.Inferred, "%s report: held lock %s", format, l.Index)
			indexes = append(indexes, l.Index)
		}
		require.Contains(t, indexes, h.index)
	}
}
