package corpusgen

import (
	"context"
	"database/sql"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/lockdiag/deadlock"
	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
)

var update = flag.Bool("update", false, "rewrite the reports (NAME.txt) and schemas (NAME.schema.sql) in testdata/corpus/generated; the sidecars stay as written by hand")

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// dir is where the generated reports are committed.
var dir = filepath.Join("..", "testdata", "corpus", "generated")

// database is the name every scenario's tables are created in, dropped
// and created again for each: a fixed name keeps the table names in the
// reports (`corpus`.`account`) the same from run to run, so a live report
// can be compared with the committed sidecar.
const database = "corpus"

func servers() []server {
	return []server{
		{name: "mariadb", flavor: lockview.MariaDB, admin: testdb.MySQLAdminDSN, log: testdb.MySQLErrorLog, errorLogDecodes: true},
		{name: "oraclemysql", flavor: lockview.MySQL, admin: testdb.OracleMySQLAdminDSN, log: testdb.OracleMySQLErrorLog, errorLogDecodes: true},
	}
}

// TestGenerated reproduces every scenario on each server and checks the
// report InnoDB prints against the committed sidecar; with -update it
// rewrites the committed report and schema first. The two servers run in
// parallel; a server's scenarios run one after another, because SHOW
// ENGINE INNODB STATUS keeps only the server's latest deadlock.
func TestGenerated(t *testing.T) {
	scenarios := append(patterns(), keyScenarios()...)
	for _, srv := range servers() {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			adminDSN := srv.admin(t)
			admin, err := sql.Open("mysql", adminDSN)
			require.NoError(t, err)
			t.Cleanup(func() { _ = admin.Close() })
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
					defer cancel()
					if sc.cannot != nil {
						why, err := sc.cannot(ctx, admin, srv)
						require.NoError(t, err)
						if why != "" {
							// Not a missing server: this one has asked to be
							// told apart (cannot read it from the server), and
							// the scenario does not exist there.
							t.Logf("%s cannot produce this deadlock: %s", srv.name, why)
							return
						}
					}
					srv := srv
					srv.dsn = func(t testing.TB) string { return freshDatabase(ctx, t, admin, adminDSN) }
					checkScenario(ctx, t, srv, admin, sc)
				})
			}
		})
	}
}

// freshDatabase drops and creates the database the scenarios use, and
// returns a DSN for it.
func freshDatabase(ctx context.Context, t testing.TB, admin *sql.DB, adminDSN string) string {
	t.Helper()
	for _, q := range []string{"DROP DATABASE IF EXISTS " + database, "CREATE DATABASE " + database} {
		_, err := admin.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	cfg, err := gomysql.ParseDSN(adminDSN)
	require.NoError(t, err)
	cfg.DBName = database
	return cfg.FormatDSN()
}

func checkScenario(ctx context.Context, t *testing.T, srv server, admin *sql.DB, sc scenario) {
	r := play(ctx, t, srv, admin, sc)
	require.Len(t, r.victims, 1, "exactly one session must get error %d", sc.victimError())

	schema, err := deadlock.ParseSchema(r.schema)
	require.NoError(t, err, "the server's own SHOW CREATE TABLE")
	reports, err := deadlock.Decode(r.report, deadlock.Options{Schema: schema})
	require.NoError(t, err, "decoding:\n%s", r.report)
	require.Len(t, reports, 1, "reports in:\n%s", r.report)
	rep := reports[0]
	require.Len(t, rep.Transactions, sc.reported(), "transactions in:\n%s", r.report)

	// The victim InnoDB names is the session that got the error: the report's
	// thread ids are the sessions' connection ids.
	victim := rep.Transaction(rep.Victim)
	require.NotNil(t, victim, "victim (%d) in:\n%s", rep.Victim, r.report)
	require.EqualValues(t, r.connIDs[r.victims[0]], victim.ThreadID, "the victim's thread id")

	base := filepath.Join(dir, sc.name+"."+srv.name)
	if *update {
		writeFile(t, base+".txt", r.report)
		writeFile(t, base+".schema.sql", r.schema)
		if sc.errorLog {
			writeFile(t, base+".errorlog.txt", r.errorLog)
			writeFile(t, base+".errorlog.schema.sql", r.schema)
		}
	}
	if sc.errorLog {
		// The block must be there on every run; whether the current
		// decoder reads it is the committed file's test below.
		require.Contains(t, r.errorLog, "WE ROLL BACK TRANSACTION")
	}
	if _, err := os.Stat(base + ".facts.json"); os.IsNotExist(err) && *update {
		t.Logf("%s.facts.json: not written yet; read %s.txt and write it by hand", base, base)
		return
	}
	sc2 := readSidecar(t, base+".facts.json")
	require.Equal(t, sc.pattern, sc2.Pattern, "the sidecar's pattern")
	// The live report: everything but the transaction ids, which differ
	// from run to run.
	compareReport(t, rep, sc2, checks{anyOrder: sc.racy != "", keys: true, pattern: true, holds: true})
	// The committed report the sidecar was written from, ids included.
	checkCommitted(t, base+".txt", sc2)
	if sc.errorLog && srv.errorLogDecodes {
		checkCommitted(t, base+".errorlog.txt", readSidecar(t, base+".errorlog.facts.json"))
	}
}

// checkCommitted decodes a committed report and compares it with its
// sidecar, transaction ids included.
func checkCommitted(t *testing.T, path string, sc sidecar) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var opt deadlock.Options
	if s, err := os.ReadFile(strings.TrimSuffix(path, ".txt") + ".schema.sql"); err == nil {
		schema, err := deadlock.ParseSchema(string(s))
		require.NoError(t, err, path)
		opt.Schema = schema
	}
	reports, err := deadlock.Decode(string(b), opt)
	require.NoError(t, err, path)
	require.Len(t, reports, 1, path)
	compareReport(t, reports[0], sc, checks{trxIDs: true, keys: true, pattern: true, holds: true})
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}
