package cli

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
)

// The root command's own behaviour: its help, the global flags and
// $LOCKSTEP_DSN, and errors reported as one line.

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

// TestDatabaseUses: the commands that open the database without needing
// lockstep's tables at this binary's version are the ones root.go names;
// every other command that opens it checks them first.
func TestDatabaseUses(t *testing.T) {
	root := newRootCmd(io.Discard, io.Discard, nil)
	for path, want := range map[string]string{
		"migrate up": clienv.DatabaseCreates, "migrate status": clienv.DatabaseAny, "migrate down": clienv.DatabaseAny,
		"work": clienv.DatabaseAny, "serve": clienv.DatabaseAny, "deadlock decode": clienv.DatabaseAny, "deadlock aggregate": clienv.DatabaseAny,
		"stats": clienv.DatabaseSchema, "enqueue": clienv.DatabaseSchema, "jobs show": clienv.DatabaseSchema,
		"queues pause": clienv.DatabaseSchema, "runs create": clienv.DatabaseSchema, "cancel run": clienv.DatabaseSchema,
	} {
		cmd, _, err := root.Find(strings.Fields(path))
		require.NoError(t, err, path)
		require.Equal(t, path, strings.TrimPrefix(cmd.CommandPath(), "lockstep "), "no command %q", path)
		require.Equal(t, want, clienv.DatabaseUseOf(cmd), path)
	}
}
