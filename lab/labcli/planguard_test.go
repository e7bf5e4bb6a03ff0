package labcli

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/clitest"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
)

// TestLabPlanguard runs `lockstep lab planguard` on MariaDB and Oracle
// MySQL (where --synthetic used to stop at MariaDB's ANALYZE FORMAT=JSON,
// error 1064), then its refusals.
func TestLabPlanguard(t *testing.T) {
	for _, srv := range []struct {
		name string
		dsn  func(testing.TB) string
	}{{"MariaDB", testdb.MySQL}, {"OracleMySQL", testdb.OracleMySQL}} {
		t.Run(srv.name, func(t *testing.T) { testLabPlanguard(t, srv.dsn(t)) })
	}

	dsn := clitest.MySQLURL(t, testdb.MySQL(t))
	code, _, errOut := runCLI(t, "--dsn", dsn, "lab", "planguard", "--synthetic", "--distribution", "huge")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `no distribution "huge"`)

	code, _, errOut = runCLI(t, "--dsn", dsn, "lab", "planguard", "--statement", "job.nope")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `no statement "job.nope"`)

	sqlite := "sqlite://" + filepath.Join(t.TempDir(), "q.db")
	code, _, errOut = runCLI(t, "--dsn", sqlite, "lab", "planguard")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "SQLite serialises writers")
}

func testLabPlanguard(t *testing.T, goDSN string) {
	// The report names the catalogue's dialect, which is the server's
	// flavor: "mariadb" or "mysql".
	db, err := sql.Open("mysql", goDSN)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	flavor, err := lockview.Detect(context.Background(), db)
	require.NoError(t, err)
	dialect := string(flavor)

	dsn := clitest.MySQLURL(t, goDSN)
	code, _, errOut := runCLI(t, "--dsn", dsn, "migrate", "up")
	require.Equal(t, 0, code, errOut)

	// Against the data as it is: an empty table has nothing to probe most
	// statements with, but the run must still pass and say what it did.
	code, out, errOut := runCLI(t, "--dsn", dsn, "lab", "planguard", "-v")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "skipped: no PENDING job in the data")
	require.Regexp(t, dialect+`: \d+ plans checked, 0 failed`, out)

	// Two distributions, three statements — the claim (measured), a
	// multi-row and a single-row by-id write — as JSON (the package's own
	// tests load all five).
	code, out, errOut = runCLI(t, "--dsn", dsn, "lab", "planguard", "--synthetic", "--json",
		"--distribution", "near-empty", "--distribution", "almost-done",
		"--statement", "job.claim_select", "--statement", "job.cancel_many", "--statement", "job.finish_done")
	require.Equal(t, 0, code, errOut)
	var rep struct {
		Dialect string
		Results []struct {
			Distribution, Statement, Variant string
			Want                             string
			Plan                             struct {
				Accesses []struct {
					Table, Index string
					ReadRows     float64
				}
			}
			Problems []string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, dialect, rep.Dialect)
	seen := map[string]bool{}
	for _, r := range rep.Results {
		require.Empty(t, r.Problems, "%s %s %s", r.Distribution, r.Statement, r.Variant)
		seen[r.Distribution] = true
		// A real plan: the declared index, and for the claim what it read.
		require.NotEmpty(t, r.Plan.Accesses, "%s %s %s", r.Distribution, r.Statement, r.Variant)
		a := r.Plan.Accesses[0]
		require.Equal(t, r.Want, a.Index, "%s %s %s", r.Distribution, r.Statement, r.Variant)
		if r.Statement == "job.claim_select" {
			require.Positive(t, a.ReadRows, r.Distribution)
		}
	}
	require.Equal(t, map[string]bool{"near-empty": true, "almost-done": true}, seen)
}

// TestLabPlanguardREADME runs README's `lab planguard --synthetic` command
// line as it is written, on an empty scratch database (MariaDB, as the
// README's DSN): it migrates the database itself, loads every
// distribution and finds every plan as declared.
func TestLabPlanguardREADME(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	var line string
	for _, l := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(l, "lockstep lab planguard ") && strings.Contains(l, "--synthetic") {
			line = l
		}
	}
	require.NotEmpty(t, line, "README has a `lockstep lab planguard ... --synthetic` line")
	line, _, _ = strings.Cut(line, "#")
	args := strings.Fields(line)[1:]
	dsn := clitest.MySQLURL(t, testdb.MySQL(t))
	i := slices.Index(args, "--dsn")
	require.GreaterOrEqual(t, i, 0, line)
	require.Equal(t, "mysql://…/scratch", args[i+1], "the README's scratch database")
	args[i+1] = dsn

	// Through the binary, as a user runs it: loading a million jobs takes
	// longer than the in-process runner's minute on a busy machine.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, clitest.Binary(t), args...)
	cmd.Env = append(os.Environ(), "LOCKSTEP_DSN=")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s\n%s", stdout.String(), stderr.String())
	require.Contains(t, stderr.String(), "planguard: created lockstep's tables in ")
	require.Regexp(t, `\d+ plans checked, 0 failed`, stdout.String())

	// Now that it has the tables, it checks them rather than migrate.
	code, out, errOut := runCLI(t, append(args, "--distribution", "near-empty")...)
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	require.NotContains(t, errOut, "created lockstep's tables")

	// Without --synthetic, an empty database is not changed but refused.
	empty := clitest.MySQLURL(t, testdb.MySQL(t))
	code, _, errOut = runCLI(t, "--dsn", empty, "lab", "planguard")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "has no lockstep tables: run 'lockstep migrate up' with the same --dsn first")
}
