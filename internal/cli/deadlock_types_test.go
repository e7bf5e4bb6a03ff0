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

// TestDeadlockDecodeKeyTypes makes a deadlock on a real MariaDB and Oracle
// MySQL whose locked secondary record holds a CHAR, a DATETIME(6) and a
// TINYINT and whose primary key is a BIGINT UNSIGNED above 2^63, then
// decodes the server's report with --dsn (information_schema) and with
// --schema (its SHOW CREATE TABLE output): each type must come out as the
// value that was inserted.
func TestDeadlockDecodeKeyTypes(t *testing.T) {
	for _, c := range []struct {
		name string
		dsn  func(testing.TB) string
	}{
		{"MariaDB", testdb.MySQL},
		{"OracleMySQL", testdb.OracleMySQL},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			testDeadlockKeyTypes(t, c.dsn(t))
		})
	}
}

const keyTypesID = "18446744073709551000" // BIGINT UNSIGNED, top bit set

func testDeadlockKeyTypes(t *testing.T, rawDSN string) {
	db, err := sql.Open("mysql", rawDSN)
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	flavor, err := lockview.Detect(ctx, db)
	require.NoError(t, err)

	_, err = db.ExecContext(ctx, `CREATE TABLE key_types (
  id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
  code CHAR(8) NOT NULL,
  at DATETIME(6) NOT NULL,
  flag TINYINT NOT NULL,
  status VARCHAR(16) NOT NULL,
  KEY idx_k (code, at, flag)) ENGINE=InnoDB`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO key_types VALUES
  (7, 'AA', '2024-01-01 00:00:00', 1, 'NEW'),
  (`+keyTypesID+`, 'AB', '2024-01-02 03:04:05.123456', 33, 'NEW')`)
	require.NoError(t, err)
	var create, name string
	require.NoError(t, db.QueryRowContext(ctx, "SHOW CREATE TABLE key_types").Scan(&name, &create))

	// A holds the PRIMARY record; B finds the row through idx_k and waits
	// for it; A then changes flag, a column of idx_k, and needs B's idx_k
	// record.
	a, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = a.Rollback() }()
	_, err = a.ExecContext(ctx, "SELECT id FROM key_types WHERE id = "+keyTypesID+" FOR UPDATE")
	require.NoError(t, err)
	var bDone atomic.Bool
	bErr := make(chan error, 1)
	go func() {
		defer bDone.Store(true)
		b, err := db.BeginTx(ctx, nil)
		if err != nil {
			bErr <- err
			return
		}
		_, err = b.ExecContext(ctx, "UPDATE key_types FORCE INDEX(idx_k) SET status='DONE' WHERE code = 'AB' AND at >= '2024-01-02'")
		if err != nil {
			_ = b.Rollback()
			bErr <- err
			return
		}
		bErr <- b.Commit()
	}()
	ws, err := lockview.WaitFor(ctx, db, flavor, nil, bDone.Load)
	require.NoError(t, err)
	require.NotEmpty(t, ws, "B should wait for A's PRIMARY record")
	_, aErr := a.ExecContext(ctx, "UPDATE key_types SET flag = 2 WHERE id = "+keyTypesID)
	require.True(t, aErr != nil || <-bErr != nil, "one of the two must be rolled back with 1213")

	status, err := innodbStatus(ctx, db)
	require.NoError(t, err)
	dir := t.TempDir()
	report := filepath.Join(dir, "status.txt")
	schema := filepath.Join(dir, "schema.sql")
	require.NoError(t, os.WriteFile(report, []byte(status), 0o644))
	require.NoError(t, os.WriteFile(schema, []byte(create+";\n"), 0o644))

	want := map[string]string{"code": "AB", "at": "2024-01-02 03:04:05.123456", "flag": "33", "id": keyTypesID}
	for _, src := range []struct {
		name string
		args []string
	}{
		{"dsn", []string{"--dsn", clitest.MySQLURL(t, rawDSN), "deadlock", "decode", "--json", report}},
		{"schema", []string{"deadlock", "decode", "--json", "--schema", schema, report}},
	} {
		code, out, errOut := runCLI(t, src.args...)
		require.Equal(t, 0, code, errOut)
		var got struct{ Reports []*deadlock.Report }
		require.NoError(t, json.Unmarshal([]byte(out), &got), out)
		require.Len(t, got.Reports, 1)
		rec := idxKRecord(t, got.Reports[0])
		for _, typ := range []struct{ name, col string }{{"unsigned", "id"}, {"char", "code"}, {"datetime6", "at"}, {"tinyint", "flag"}} {
			t.Run(src.name+"/"+typ.name, func(t *testing.T) {
				f := field(rec, typ.col)
				require.NotNil(t, f, "field %s in %+v", typ.col, rec.Fields)
				require.Equal(t, want[typ.col], f.Plain())
				require.NotEmpty(t, f.ColumnType, "the type came from the schema")
			})
		}
		require.Equal(t, deadlock.PatternOppositeIndexOrder, got.Reports[0].PatternName(), out)
	}
	// Without a schema, an id above 2^63 would read as a signed one; the
	// statement's literal (WHERE id = 18446744073709551000) chooses the
	// unsigned reading, and the note says so.
	code, out, errOut := runCLI(t, "deadlock", "decode", "--json", report)
	require.Equal(t, 0, code, errOut)
	var got struct{ Reports []*deadlock.Report }
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	id := field(idxKRecord(t, got.Reports[0]), "")
	require.Equal(t, keyTypesID, id.Plain())
	require.Contains(t, id.Note, "the statement names "+keyTypesID)
	require.Empty(t, id.ColumnType)
}

// idxKRecord is the idx_k record some transaction waits for.
func idxKRecord(t *testing.T, r *deadlock.Report) *deadlock.Record {
	t.Helper()
	for _, tx := range r.Transactions {
		if tx.Waits != nil && tx.Waits.Index == "idx_k" && len(tx.Waits.Records) > 0 {
			return tx.Waits.Records[0]
		}
	}
	t.Fatalf("no transaction waits for idx_k: %+v", r.Transactions)
	return nil
}

// field returns the field named col; "" is the last one (the primary key
// of a secondary record).
func field(rec *deadlock.Record, col string) *deadlock.Field {
	for i := range rec.Fields {
		if col == "" && i == len(rec.Fields)-1 || col != "" && strings.EqualFold(rec.Fields[i].Name, col) {
			return &rec.Fields[i]
		}
	}
	return nil
}
