package labcli

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/clitest"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// labServer is an InnoDB server the lab's commands run on, and the mode
// its lock table gives a lock on PRIMARY 300 alone (MariaDB's X is MySQL's
// X,REC_NOT_GAP).
type labServer struct {
	name string
	dsn  func(testing.TB) string
	mode string
}

func labServers() []labServer {
	return []labServer{
		{"MariaDB", testdb.MySQL, "X"},
		{"OracleMySQL", testdb.OracleMySQL, "X,REC_NOT_GAP"},
	}
}

// TestLabRepro: the deadlock, its timeline, and the report the server
// wrote for it. Not parallel: deadlock decode reads the server's latest
// deadlock, whichever database it was in.
func TestLabRepro(t *testing.T) {
	for _, srv := range labServers() {
		t.Run(srv.name, func(t *testing.T) {
			dsn := clitest.MySQLURL(t, srv.dsn(t))

			code, out, errOut := runCLI(t, "--dsn", dsn, "lab", "repro", "--variant", "range-status", "--claim-plan", "primary")
			require.Equal(t, 0, code, errOut)
			require.Contains(t, out, "waits for PRIMARY "+srv.mode+" 300")
			// InnoDB rolls back the lighter transaction, which here is nearly
			// always the claim; either way the timeline shows 1213.
			require.Contains(t, out, "ERROR 1213")
			require.Regexp(t, `deadlock: InnoDB rolled back session [AB]`, out)

			// The report the server wrote for that deadlock decodes to the
			// claim/cancel pattern: the cancel holds idx_status and waits for
			// PRIMARY 300, the claim holds PRIMARY 300 and waits for
			// idx_status, the claim is rolled back.
			code, out, errOut = runCLI(t, "--dsn", dsn, "deadlock", "decode")
			require.Equal(t, 0, code, errOut)
			require.Contains(t, out, "Pattern: opposite-index-order")
			require.Regexp(t, `(?s)statement: UPDATE attempt FORCE INDEX \(idx_status\).*holds:\s+idx_status.*waits for: PRIMARY`, out)
			require.Contains(t, out, "ROLLED BACK")
			// lab repro dropped its table: the report's keys are inferred,
			// and the output says why, rather than read as a table without
			// a primary key (DB_ROW_ID).
			require.Regexp(t, `Keys: column types inferred from the bytes: table \w+\.attempt was not found in the live server's information_schema`, out)
			require.NotContains(t, out, "DB_ROW_ID")

			code, out, errOut = runCLI(t, "--dsn", dsn, "lab", "repro", "--variant", "ids-then-primary", "--claim-plan", "primary", "--isolation", "read-committed")
			require.Equal(t, 0, code, errOut)
			require.Contains(t, out, "2 rows: 299, 300 (no locks)")
			require.NotContains(t, out, "ERROR 1213")
			require.Contains(t, out, "no deadlock")

			code, _, errOut = runCLI(t, "--dsn", dsn, "lab", "repro", "--variant", "hopeful")
			require.Equal(t, 1, code)
			require.Contains(t, errOut, `no cancel variant "hopeful"`)
		})
	}
}

// TestLabExplain: the cancel's plan under each distribution. Both servers
// give the published plans: idx_run for a fresh run, idx_status once most of
// the run is DONE.
func TestLabExplain(t *testing.T) {
	for _, srv := range labServers() {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			dsn := clitest.MySQLURL(t, srv.dsn(t))
			code, out, errOut := runCLI(t, "--dsn", dsn, "lab", "explain", "--distribution", "tail:500:3")
			require.Equal(t, 0, code, errOut)
			require.Regexp(t, `(?m)^run 3 fresh: 100 PENDING.*\s+range\s+idx_run\s+100\s`, out)
			require.Regexp(t, `(?m)^run 3: 2 PENDING / 998 DONE.*\s+range\s+idx_status\s+3\s`, out)
			require.Regexp(t, `(?m)^tail\s+range\s+idx_status\s`, out)

			code, _, errOut = runCLI(t, "--dsn", dsn, "lab", "explain", "--distribution", "bad")
			require.Equal(t, 1, code)
			require.Contains(t, errOut, "NAME:RUNSIZE:PENDING")
		})
	}
}

// TestLabLocks: the lock table while the cancel waits. Not parallel: its
// deadlock would be the latest one TestLabRepro decodes.
func TestLabLocks(t *testing.T) {
	for _, srv := range labServers() {
		t.Run(srv.name, func(t *testing.T) {
			dsn := clitest.MySQLURL(t, srv.dsn(t))
			code, out, errOut := runCLI(t, "--dsn", dsn, "lab", "locks", "--variant", "range-status")
			require.Equal(t, 0, code, errOut)
			// The attempt table's locks: the claim holds PRIMARY 300, the
			// cancel waits for it.
			require.Regexp(t, `(?m)\s+PRIMARY\s+`+regexp.QuoteMeta(srv.mode)+`\s+GRANTED\s+300$`, out)
			require.Regexp(t, `(?m)\s+PRIMARY\s+`+regexp.QuoteMeta(srv.mode)+`\s+WAITING\s+300$`, out)
			// MariaDB shows only the locks in the wait, and says so; MySQL
			// shows the cancel's idx_status locks as well (X: the record and
			// the gap before it).
			cancelHolds := regexp.MustCompile(`(?m)\s+idx_status\s+X\s+GRANTED\s+'PENDING', 300$`)
			switch srv.name {
			case "MariaDB":
				require.Contains(t, out, "lists only locks that are part of a wait")
				require.NotRegexp(t, cancelHolds, out)
			default:
				require.Contains(t, out, "lists every lock InnoDB holds or waits for")
				require.Regexp(t, cancelHolds, out)
			}
			require.Contains(t, out, "ERROR 1213")

			code, out, errOut = runCLI(t, "--dsn", dsn, "lab", "locks", "--live")
			require.Equal(t, 0, code, errOut)
			require.Contains(t, out, "(no locks)")
		})
	}
}

func TestLabRace(t *testing.T) {
	for _, srv := range labServers() {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			dsn := clitest.MySQLURL(t, srv.dsn(t))
			out := t.TempDir()
			code, stdout, errOut := runCLI(t, "--dsn", dsn, "lab", "race", "--variant", "ids-then-primary", "--claim-plan", "primary", "--rounds", "5", "--out", out)
			require.Equal(t, 0, code, errOut)
			require.Regexp(t, `(?m)^ids-then-primary\s+primary\s+5\s+0\s+none\s`, stdout)
			csv, err := os.ReadFile(filepath.Join(out, "race.csv"))
			require.NoError(t, err)
			require.Contains(t, string(csv), "ids-then-primary,primary,5,0,0,0,0,")
			svg, err := os.ReadFile(filepath.Join(out, "race.svg"))
			require.NoError(t, err)
			require.Contains(t, string(svg), "<svg")
			require.Contains(t, string(svg), "ids-then-primary × claim primary")
		})
	}

	out := t.TempDir()
	code, _, errOut := runCLI(t, "--dsn", "sqlite://"+filepath.Join(out, "x.db"), "lab", "race")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "point --dsn at MySQL or MariaDB")
}

// TestLabAudit: the attempt table's statements, audited against each
// server's own plans. The cancel crosses the claim on idx_status on both;
// only on MariaDB does the by-id claim itself find its row through
// idx_status (MySQL plans it through PRIMARY), so only there is the claim
// told to force PRIMARY.
func TestLabAudit(t *testing.T) {
	for _, srv := range labServers() {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			dsn := clitest.MySQLURL(t, srv.dsn(t))
			code, out, errOut := runCLI(t, "--dsn", dsn, "lab", "audit", "../attempt/sql")
			require.Equal(t, 1, code, "findings exit 1")
			require.Contains(t, errOut, "lock paths can cross")
			require.Regexp(t, `(claim × cancel|cancel × claim) can deadlock on attempt\.idx_status`, out)
			require.Contains(t, out, "non-locking SELECT")
			if srv.name == "MariaDB" {
				require.Regexp(t, `(?m)^claim\s+attempt\s+yes\s+idx_status`, out)
				require.Contains(t, out, "FORCE INDEX (PRIMARY)")
			} else {
				require.Regexp(t, `(?m)^claim\s+attempt\s+yes\s+PRIMARY`, out)
			}

			code, _, errOut = runCLI(t, "--dsn", dsn, "lab", "audit", t.TempDir())
			require.Equal(t, 1, code)
			require.Contains(t, errOut, "needs a statements.sql")
		})
	}
}
