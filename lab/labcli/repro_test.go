package labcli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/clitest"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

func TestLabRepro(t *testing.T) {
	dsn := clitest.MySQLURL(t, testdb.MySQL(t))

	code, out, errOut := runCLI(t, "--dsn", dsn, "lab", "repro", "--variant", "range-status", "--claim-plan", "primary")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "waits for PRIMARY X 300")
	// InnoDB rolls back the lighter transaction, which here is nearly
	// always the claim; either way the timeline shows 1213.
	require.Contains(t, out, "ERROR 1213")
	require.Regexp(t, `deadlock: InnoDB rolled back session [AB]`, out)

	// The report MariaDB wrote for that deadlock decodes to the
	// claim/cancel pattern: the cancel holds idx_status and waits for PRIMARY 300,
	// the claim holds PRIMARY 300 and waits for idx_status, the claim is
	// rolled back.
	code, out, errOut = runCLI(t, "--dsn", dsn, "deadlock", "decode")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Pattern: opposite-index-order")
	require.Regexp(t, `(?s)statement: UPDATE attempt FORCE INDEX \(idx_status\).*holds:\s+idx_status.*waits for: PRIMARY`, out)
	require.Contains(t, out, "ROLLED BACK")

	code, out, errOut = runCLI(t, "--dsn", dsn, "lab", "repro", "--variant", "ids-then-primary", "--claim-plan", "primary", "--isolation", "read-committed")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "2 rows: 299, 300 (no locks)")
	require.NotContains(t, out, "ERROR 1213")
	require.Contains(t, out, "no deadlock")

	code, _, errOut = runCLI(t, "--dsn", dsn, "lab", "repro", "--variant", "hopeful")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `no cancel variant "hopeful"`)
}

func TestLabExplain(t *testing.T) {
	dsn := clitest.MySQLURL(t, testdb.MySQL(t))
	code, out, errOut := runCLI(t, "--dsn", dsn, "lab", "explain", "--distribution", "tail:500:3")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^run 3 fresh: 100 PENDING.*\s+range\s+idx_run\s+100\s`, out)
	require.Regexp(t, `(?m)^run 3: 2 PENDING / 998 DONE.*\s+range\s+idx_status\s+3\s`, out)
	require.Regexp(t, `(?m)^tail\s+range\s+idx_status\s`, out)

	code, _, errOut = runCLI(t, "--dsn", dsn, "lab", "explain", "--distribution", "bad")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "NAME:RUNSIZE:PENDING")
}

func TestLabLocks(t *testing.T) {
	dsn := clitest.MySQLURL(t, testdb.MySQL(t))
	code, out, errOut := runCLI(t, "--dsn", dsn, "lab", "locks", "--variant", "range-status")
	require.Equal(t, 0, code, errOut)
	// The attempt table's locks: the claim holds PRIMARY 300, the cancel waits
	// for it; MariaDB shows only the locks in the wait, and says so.
	require.Regexp(t, `(?m)\s+PRIMARY\s+X\s+GRANTED\s+300$`, out)
	require.Regexp(t, `(?m)\s+PRIMARY\s+X\s+WAITING\s+300$`, out)
	require.Contains(t, out, "lists only locks that are part of a wait")
	require.Contains(t, out, "ERROR 1213")

	code, out, errOut = runCLI(t, "--dsn", dsn, "lab", "locks", "--live")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "(no locks)")
}

func TestLabRace(t *testing.T) {
	dsn := clitest.MySQLURL(t, testdb.MySQL(t))
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

	code, _, errOut = runCLI(t, "--dsn", "sqlite://"+filepath.Join(out, "x.db"), "lab", "race")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "point --dsn at MySQL or MariaDB")
}

func TestLabAudit(t *testing.T) {
	dsn := clitest.MySQLURL(t, testdb.MySQL(t))
	code, out, errOut := runCLI(t, "--dsn", dsn, "lab", "audit", "../attempt/sql")
	require.Equal(t, 1, code, "findings exit 1")
	require.Contains(t, errOut, "lock paths can cross")
	require.Contains(t, out, "claim × cancel can deadlock on attempt.idx_status")
	require.Contains(t, out, "FORCE INDEX (PRIMARY)")
	require.Contains(t, out, "non-locking SELECT")

	code, _, errOut = runCLI(t, "--dsn", dsn, "lab", "audit", t.TempDir())
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "needs a statements.sql")
}
