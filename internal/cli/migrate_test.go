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

	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "up")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "applied  0001_init")
	require.Contains(t, out, "applied  0002_queue_status")
	require.Contains(t, out, "applied  0003_job_features")
	require.Contains(t, out, "schema is at version 3")

	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "up")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "schema is up to date (version 3)")

	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "status")
	require.Equal(t, 0, code, errOut)
	// APPLIED_AT is "-" while migrate.Status cannot read SQLite's TEXT
	// applied_at (it expects a time.Time); a timestamp once it can.
	require.Regexp(t, `(?m)^0001\s+init\s+applied\s+(\d{4}-\d\d-\d\dT\S+|-)$`, out)

	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "status", "--json")
	require.Equal(t, 0, code, errOut)
	var st []statusJSON
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.Len(t, st, 3)
	require.Equal(t, 1, st[0].Version)
	require.Equal(t, "init", st[0].Name)
	require.True(t, st[0].Applied)
	require.Equal(t, 2, st[1].Version)
	require.True(t, st[1].Applied)
	require.Equal(t, 3, st[2].Version)
	require.True(t, st[2].Applied)

	// down reverts one migration at a time, newest first.
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
			require.NotContains(t, out, "DROP TABLE")

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

func TestErrorsAreOneLineWithoutPasswords(t *testing.T) {
	code, out, errOut := runCLI(t, "--dsn", "oracle://scott:tiger@db/x", "migrate", "up")
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.True(t, strings.HasPrefix(errOut, "lockstep: unknown database scheme \"oracle\""), errOut)
	require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
	require.NotContains(t, errOut, "tiger")

	code, _, errOut = runCLI(t, "--log-format", "xml", "migrate", "status")
	require.Equal(t, 1, code)
	require.Equal(t, "lockstep: --log-format must be text or json, got \"xml\"\n", errOut)

	code, _, errOut = runCLI(t, "no-such-command")
	require.Equal(t, 1, code)
	require.True(t, strings.HasPrefix(errOut, "lockstep: unknown command \"no-such-command\""), errOut)
	require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
}

func TestRootHelp(t *testing.T) {
	code, out, errOut := runCLI(t, "--help")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "job queue")
	require.Contains(t, out, "lockstep demo")
	for _, cmd := range []string{"migrate", "demo"} {
		require.Regexp(t, `(?m)^\s+`+cmd+`\s`, out)
	}
	for _, flag := range []string{"--dsn", "--log-level", "--log-format"} {
		require.Contains(t, out, flag)
	}
}

func TestDSNFromEnvironment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "env.db")
	t.Setenv("LOCKSTEP_DSN", "sqlite:"+path)
	code, out, errOut := runCLI(t, "migrate", "up")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "applied  0001_init")
	require.FileExists(t, path)

	// --dsn wins over the environment.
	other := filepath.Join(t.TempDir(), "flag.db")
	code, _, errOut = runCLI(t, "--dsn", "sqlite:"+other, "migrate", "up")
	require.Equal(t, 0, code, errOut)
	require.FileExists(t, other)

	// Help never shows the environment's DSN, which may hold a password.
	t.Setenv("LOCKSTEP_DSN", "postgres://app:secret@db/queue")
	_, out, _ = runCLI(t, "migrate", "up", "--help")
	require.NotContains(t, out, "secret")
}

func TestOneLine(t *testing.T) {
	require.Equal(t, "start: schema is at 0", oneLine(errString("lockstep: start: schema is at 0")))
	require.Equal(t, "failed to connect: dial error; second", oneLine(errString("failed to connect:\n\tdial error\nsecond\n")))
}

type errString string

func (e errString) Error() string { return string(e) }
