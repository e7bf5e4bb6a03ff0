//go:build unix

package cli

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/internal/clitest"
	"github.com/lockstep-queue/lockstep/internal/dsn"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/migrate"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// Bad input through the binary: one line on stderr naming what is wrong,
// exit status 1, nothing on stdout, and every row of the database as it
// was.

// cliBadInputFixture fills the database: PENDING, scheduled, RUNNING and
// DONE jobs, an active run and a cancelled one. It returns the cancelled
// run's id.
func cliBadInputFixture(t *testing.T, l *lockstepCLI, drv driver.Driver) (cancelledRun int64) {
	t.Helper()
	ctx := context.Background()
	l.enqueue("existing", `{"n":1}`)
	l.enqueue("existing", "--queue", "other", "--in", "1h", "--priority", "3", `{"n":2}`)
	l.enqueue("existing", "--new-run", "active", `{"n":3}`)
	gone := l.job(l.enqueue("existing", "--new-run", "gone", `{"n":4}`)).RunID
	l.OK("cancel", "run", itoa(gone))
	for _, queue := range []string{"running", "finished"} {
		id := l.enqueue("existing", "--queue", queue, `{"n":5}`)
		jobs, err := drv.Executor().JobClaim(ctx, &driver.JobClaimParams{Queue: queue, Max: 1})
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		require.Equal(t, id, jobs[0].ID)
		if queue == "finished" {
			ok, err := drv.Executor().JobFinish(ctx, &driver.JobFinishParams{ID: id, Attempt: 1, Status: rowtype.StatusDone})
			require.NoError(t, err)
			require.True(t, ok)
		}
	}
	return gone
}

func TestCLIBadInputEnqueue(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.json")
	require.NoError(t, os.WriteFile(big, []byte(`"`+strings.Repeat("a", 1<<20)+`"`), 0o600))
	forEachDialect(t, func(t *testing.T, l *lockstepCLI) {
		drv := openCLIDatabase(t, l)
		gone := cliBadInputFixture(t, l, drv)
		before := testdb.TakeSnapshot(t, drv.DB())

		for _, tc := range []struct {
			args []string
			want string
		}{
			// Kind names.
			{[]string{""}, "lockstep: KIND must not be empty"},
			{[]string{"   "}, "lockstep: KIND must not be empty"},
			{[]string{strings.Repeat("k", 129)}, "lockstep: enqueue: kind name is 129 bytes long; the limit is 128"},
			{[]string{strings.Repeat("é", 65)}, "lockstep: enqueue: kind name is 130 bytes long; the limit is 128"},
			{[]string{"a\nb"}, `lockstep: enqueue: kind name "a\nb" contains a control or invalid character`},
			{[]string{"red\x1b[31m"}, `lockstep: enqueue: kind name "red\x1b[31m" contains a control or invalid character`},
			{[]string{"c1\u0085"}, `lockstep: enqueue: kind name "c1\u0085" contains a control or invalid character`},
			{[]string{"x\xffy"}, `lockstep: enqueue: kind name "x\xffy" contains a control or invalid character`},
			// Queue names.
			{[]string{"k", "--queue", ""}, `lockstep: --queue must not be empty; omit it for the "default" queue`},
			{[]string{"k", "--queue", "  "}, `lockstep: --queue must not be empty`},
			{[]string{"k", "--queue", strings.Repeat("q", 129)}, "lockstep: enqueue: queue name is 129 bytes long; the limit is 128"},
			{[]string{"k", "--queue", "q\tx"}, `lockstep: enqueue: queue name "q\tx" contains a control or invalid character`},
			// (A NUL cannot be passed in argv; the API tests cover it.)
			// Args.
			{[]string{"k", "{"}, "lockstep: args from JSON_ARGS are not valid JSON: unexpected end of JSON input"},
			{[]string{"k", ""}, "lockstep: args from JSON_ARGS are not valid JSON: unexpected end of JSON input"},
			{[]string{"k", `{"a":1} {"b":2}`}, "lockstep: args from JSON_ARGS are not valid JSON: invalid character '{' after top-level value"},
			{[]string{"k", "--args-file", big}, `lockstep: enqueue: args of kind "k" are 1048578 bytes; the limit is 1048576`},
			// Attempts, delays, priorities.
			{[]string{"k", "--max-attempts", "0"}, "lockstep: --max-attempts must be at least 1, got 0"},
			{[]string{"k", "--max-attempts=-1"}, "lockstep: --max-attempts must be at least 1, got -1"},
			{[]string{"k", "--max-attempts", "2147483648"}, "lockstep: enqueue: max attempts 2147483648 is out of range [1, 2147483647]"},
			{[]string{"k", "--in", "-5s"}, "lockstep: --in must not be negative, got -5s"},
			{[]string{"k", "--in=-1ns"}, "lockstep: --in must not be negative, got -1ns"},
			{[]string{"k", "--at", "0999-12-31T00:00:00Z"}, "lockstep: enqueue: scheduled time 0999-12-31T00:00:00Z is outside the range the databases store, years 1000 to 9999"},
			{[]string{"k", "--priority", "40000"}, "lockstep: enqueue: priority 40000 is out of range [-32768, 32767]"},
			{[]string{"k", "--priority=-40000"}, "lockstep: enqueue: priority -40000 is out of range [-32768, 32767]"},
			// Runs.
			{[]string{"k", "--run=-1"}, "lockstep: --run must be a positive run id, got -1"},
			{[]string{"k", "--run", "0"}, "lockstep: --run must be a positive run id, got 0"},
			{[]string{"k", "--run", itoa(gone)}, fmt.Sprintf("lockstep: enqueue: run %d is cancelled; its jobs cannot be added to", gone)},
			{[]string{"k", "--run", "999999"}, "lockstep: enqueue: run 999999 not found"},
			{[]string{"k", "--new-run", ""}, "lockstep: --new-run needs a name"},
			{[]string{"k", "--new-run", "never", "{"}, "lockstep: args from JSON_ARGS are not valid JSON"},
			{[]string{"k", "--new-run", "never", "--queue", "a\nb"}, `lockstep: create run: queue name "a\nb" contains a control or invalid character`},
			{[]string{"k", "--new-run", "never", "--priority", "32768"}, "lockstep: create run: priority 32768 is out of range"},
		} {
			line := l.Fail(append([]string{"enqueue"}, tc.args...)...)
			require.True(t, strings.HasPrefix(line, tc.want), "%q:\n got %q\nwant %q", tc.args, line, tc.want)
		}
		require.Equal(t, before, testdb.TakeSnapshot(t, drv.DB()), "no bad command added or changed a job or run")
	})
}

// A DSN that does not parse, or names an unknown scheme: one line, no
// password, exit 1, and nothing opened.
func TestCLIBadInputDSN(t *testing.T) {
	bin := clitest.Binary(t)
	for _, tc := range []struct{ dsn, want string }{
		{"foo://x", `lockstep: unknown database scheme "foo"; accepted forms: mysql://`},
		{"oracle://scott:tiger@db/x", `lockstep: unknown database scheme "oracle"`},
		{"hots=localhost prot=5432", "lockstep: database DSN starts with key=value, but none of its keys is a PostgreSQL connection keyword"},
		{"app:secret@tcp(h:3306/db", "lockstep: mysql DSN app:xxxxx@tcp(h:3306/db: invalid DSN: network address not terminated"},
		{"mysql://app:secret@h:port/db", "lockstep: mysql DSN is not a valid URL"},
		{"mysql://app:s%zzecret@h/db", "lockstep: mysql DSN is not a valid URL (a '%' is not followed by two hex digits)"},
		{"mysql://:secret@h/db", "lockstep: mysql DSN mysql://:xxxxx@h/db has a password but no user name"},
		{"mysql://ap%3Ap:secret@h/db", "lockstep: mysql DSN mysql://ap%3Ap:xxxxx@h/db: its user name and password cannot be passed to go-sql-driver"},
		{"mysql://app:secret@h", "lockstep: mysql DSN needs exactly one database name"},
		{"postgres://app:secret@h o/db", "lockstep: postgres DSN postgres://app:xxxxx@h o/db: failed to parse as URL"},
		{"postgres://app:secret@h/db\x7f", "lockstep: postgres DSN contains a control character"},
		{"sqlite:", "lockstep: sqlite DSN has no file path"},
	} {
		for _, cmd := range [][]string{{"stats"}, {"enqueue", "k"}, {"jobs"}, {"migrate", "up"}} {
			l := &lockstepCLI{&clitest.CLI{T: t, Bin: bin, DSN: tc.dsn}}
			dir := t.TempDir()
			r := l.RunIn(dir, cmd...)
			require.Equal(t, 1, r.Code, "%q %v: %s", tc.dsn, cmd, r.Stdout)
			require.Empty(t, r.Stdout, "%q %v", tc.dsn, cmd)
			require.Equal(t, 1, strings.Count(r.Stderr, "\n"), "%q %v: one line: %q", tc.dsn, cmd, r.Stderr)
			require.True(t, strings.HasPrefix(r.Stderr, tc.want), "%q %v:\n got %q\nwant %q", tc.dsn, cmd, r.Stderr, tc.want)
			for _, secret := range []string{"secret", "tiger", "zzecret"} {
				require.NotContains(t, r.Stderr, secret, "%q %v", tc.dsn, cmd)
			}
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, entries, "%q %v: no database file was created", tc.dsn, cmd)
		}
	}
	// --dsn wins over a good $LOCKSTEP_DSN, with the same error, and the
	// good database is not touched.
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	l := &lockstepCLI{&clitest.CLI{T: t, Bin: bin, DSN: "sqlite:" + good}}
	r := l.RunIn(dir, "--dsn", "foo://x", "stats")
	require.Equal(t, 1, r.Code, r.Stdout)
	require.Empty(t, r.Stdout)
	require.Equal(t, "lockstep: unknown database scheme \"foo\"; accepted forms: "+dsn.Forms+"\n", r.Stderr)
	require.NoFileExists(t, good)
	code, out, errOut := runCLI(t, "--dsn", "foo://x", "stats")
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Equal(t, r.Stderr, errOut)
}

// Workers for bad queue or kind names are refused before they start.
func TestCLIBadInputWorkNames(t *testing.T) {
	forEachDialect(t, func(t *testing.T, l *lockstepCLI) {
		drv := openCLIDatabase(t, l)
		cliBadInputFixture(t, l, drv)
		before := testdb.TakeSnapshot(t, drv.DB())
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--kind", "demo", "--queue", "a\nb"}, `lockstep: queue name "a\nb" contains a control or invalid character`},
			{[]string{"--kind", "demo", "--queue", strings.Repeat("q", 129)}, "lockstep: queue name is 129 bytes long; the limit is 128"},
			{[]string{"--exec", "bad\x7fkind=true"}, `kind name "bad\x7fkind" contains a control or invalid character`},
			{[]string{"--exec", strings.Repeat("k", 129) + "=true"}, "kind name is 129 bytes long; the limit is 128"},
		} {
			line := l.Fail(append([]string{"work"}, tc.args...)...)
			require.Contains(t, line, tc.want, "%q", tc.args)
		}
		require.Equal(t, before, testdb.TakeSnapshot(t, drv.DB()))
	})
}

// A schema behind or ahead of the binary: `work` refuses to start, one
// line, and nothing changes.
func TestCLIBadInputSchemaVersion(t *testing.T) {
	forEachDialect(t, func(t *testing.T, l *lockstepCLI) {
		ctx := context.Background()
		drv := openCLIDatabase(t, l)
		cliBadInputFixture(t, l, drv)
		m, err := migrate.New(drv)
		require.NoError(t, err)
		latest := m.Latest()
		all := m.All()
		previous := all[len(all)-2].Version // numbers may skip one another dialect has

		l.OK("migrate", "down")
		before := testdb.TakeSnapshot(t, drv.DB())
		line := l.Fail("work", "--kind", "demo", "--poll", "50ms")
		require.Contains(t, line, fmt.Sprintf("at migration %d, this binary needs %d: run `lockstep migrate up`", previous, latest))
		require.Equal(t, before, testdb.TakeSnapshot(t, drv.DB()))
		l.OK("migrate", "up")

		_, err = drv.DB().ExecContext(ctx, drv.Catalog().Get("migration.insert").SQL, latest+1, "from_a_newer_binary")
		require.NoError(t, err)
		before = testdb.TakeSnapshot(t, drv.DB())
		line = l.Fail("work", "--kind", "demo", "--poll", "50ms")
		require.Contains(t, line, fmt.Sprintf("migration %d", latest+1))
		require.Regexp(t, "which this binary does not know|newer than this binary knows", line)
		line = l.Fail("migrate", "up")
		require.Contains(t, line, fmt.Sprintf("database has migration %d", latest+1))
		require.Equal(t, before, testdb.TakeSnapshot(t, drv.DB()))
	})
}

// goInternals is wording of Go's, cobra's or pflag's that a user should
// never have to read: what failed inside, rather than what the command
// expected.
var goInternals = []string{"strconv.", `parsing "`, "arg(s)", "shorthand", "received", `invalid argument "`, `" flag`, "flag needs an argument", "invalid syntax", "time: "}

func requireUserWords(t *testing.T, args []string, errOut string) {
	t.Helper()
	for _, w := range goInternals {
		require.NotContains(t, errOut, w, "%q", args)
	}
}

// TestCLIBadInputUsage: mistakes on the command line (a word where a
// number goes, too many arguments, an unknown flag or command, a negative
// number read as a flag) are told in the user's words, with what was
// expected and what was given, and a suggestion for a mistyped command or
// flag; then every flag of every command, given a value of the wrong
// kind, and every command given an unknown flag, a negative number and
// too many arguments, says so without Go's wording.
func TestCLIBadInputUsage(t *testing.T) {
	db := filepath.Join(t.TempDir(), "never.db")
	dsnFlag := []string{"--dsn", "sqlite:" + db}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"enqueue", "k", "--priority", "high"}, `lockstep: --priority wants a whole number, got "high"`},
		{[]string{"enqueue", "k", "--run", "1.5"}, `lockstep: --run wants a whole number, got "1.5"`},
		{[]string{"enqueue", "k", "--priority", "99999999999999999999"}, `lockstep: --priority must be a whole number from -9223372036854775808 to 9223372036854775807, got "99999999999999999999"`},
		{[]string{"enqueue", "k", "--in", "10"}, `lockstep: --in wants a duration such as 500ms, 30s, 10m or 1h30m, got "10" (a number needs its unit: ms, s, m or h)`},
		{[]string{"enqueue", "k", "--in", "soon"}, `lockstep: --in wants a duration such as 500ms, 30s, 10m or 1h30m, got "soon"`},
		{[]string{"enqueue", "k", "--json=maybe"}, `lockstep: --json is a switch: give it alone, or as --json=true or --json=false; got "maybe"`},
		{[]string{"enqueue", "k", "--queue"}, `lockstep: --queue needs a value: queue`},
		{[]string{"enqueue"}, `lockstep: lockstep enqueue needs KIND [JSON_ARGS], got no arguments`},
		{[]string{"enqueue", "k", "{a:", "1}"}, `lockstep: lockstep enqueue takes KIND [JSON_ARGS], got 3 arguments ("k" "{a:" "1}") (quote an argument that contains spaces)`},
		{[]string{"jobs", "show", "-1"}, `lockstep: -1 is not a flag of lockstep jobs show: a value that starts with '-' goes after '--', as in: lockstep jobs show -- -1`},
		{[]string{"jobs", "show", "--", "-1"}, `lockstep: invalid job id "-1": want a positive integer`},
		{[]string{"jobs", "show"}, `lockstep: lockstep jobs show needs ID, got no arguments`},
		{[]string{"jobs", "show", "1", "2"}, `lockstep: lockstep jobs show takes ID, got 2 arguments ("1" "2") (quote an argument that contains spaces)`},
		{[]string{"jobs", "--stauts", "PENDING"}, `lockstep: unknown flag --stauts for lockstep jobs; did you mean --status?`},
		{[]string{"jobs", "-json"}, `lockstep: unknown flag -json for lockstep jobs; did you mean --json? (a flag's full name takes two dashes)`},
		{[]string{"jobs", "-x"}, `lockstep: unknown flag -x for lockstep jobs; 'lockstep jobs --help' lists its flags`},
		{[]string{"jobs", "--limit", "ten"}, `lockstep: --limit wants a whole number, got "ten"`},
		{[]string{"qeueus"}, `lockstep: unknown command "qeueus" for lockstep; did you mean "queues"?`},
		{[]string{"queues", "paus", "mail"}, `lockstep: unknown command "paus" for lockstep queues; did you mean "pause"?`},
		{[]string{"queues", "max-workers", "mail"}, `lockstep: lockstep queues max-workers needs NAME N, got 1 argument ("mail")`},
		{[]string{"queues", "pause"}, `lockstep: lockstep queues pause needs NAME, got no arguments`},
		{[]string{"stats", "now"}, `lockstep: lockstep stats takes no arguments, got 1 argument ("now")`},
		{[]string{"frobnicate"}, `lockstep: unknown command "frobnicate" for lockstep; 'lockstep --help' lists its commands`},
		{[]string{"---dsn", "x", "stats"}, `lockstep: "---dsn" is not a flag: a flag is -x or --name (see 'lockstep stats --help')`},
		{[]string{"work", "--poll", "1"}, `lockstep: --poll wants a duration such as 500ms, 30s, 10m or 1h30m, got "1" (a number needs its unit: ms, s, m or h)`},
	} {
		code, out, errOut := runCLI(t, append(slices.Clone(dsnFlag), tc.args...)...)
		require.Equal(t, 1, code, "%q: %s", tc.args, out)
		require.Empty(t, out, "%q", tc.args)
		require.Equal(t, tc.want+"\n", errOut, "%q", tc.args)
		requireUserWords(t, tc.args, errOut)
	}

	// Every command and every flag.
	root := newRootCmd(io.Discard, io.Discard, nil)
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		if cmd.Name() == "help" {
			return // it takes any command's path
		}
		path := strings.Fields(cmd.CommandPath())[1:]
		run := func(extra ...string) {
			t.Helper()
			args := append(append(slices.Clone(dsnFlag), path...), extra...)
			code, out, errOut := runCLI(t, args...)
			require.Equal(t, 1, code, "%q: %s", args, out)
			require.Equal(t, 1, strings.Count(errOut, "\n"), "%q: one line: %q", args, errOut)
			requireUserWords(t, args, errOut)
		}
		run("--no-such-flag")
		run("-1")
		if cmd.Runnable() {
			// (cobra shows the help of a command that does not run,
			// whatever its arguments: cobra's completion.)
			run("a", "b", "c", "d", "e")
		}
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			switch f.Value.Type() {
			case "bool":
				run("--" + f.Name + "=maybe")
			case "string":
				run("--" + f.Name) // no value
			case "stringSlice", "stringArray":
				run("--" + f.Name + `="a`)
			default:
				run("--" + f.Name + "=x1y")
				run("--" + f.Name) // no value
			}
		})
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
	require.NoFileExists(t, db, "no bad command line opened the database")
}

// TestCLIVersion: `lockstep version` and `lockstep --version` print the
// module's version, the Go version and, built from a checkout, the commit.
func TestCLIVersion(t *testing.T) {
	l := &lockstepCLI{&clitest.CLI{T: t, Bin: clitest.Binary(t), DSN: ""}}
	dir := t.TempDir()
	r := l.RunIn(dir, "version")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Regexp(t, `^lockstep \S+\nmodule    github.com/lockstep-queue/lockstep\ngo        go1\.\d+`, r.Stdout)
	// The commit is there when the toolchain recorded it (-buildvcs, in a
	// checkout the go command recognises).
	bi, err := buildinfo.ReadFile(l.Bin)
	require.NoError(t, err)
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			require.Contains(t, r.Stdout, "\ncommit    "+s.Value)
		}
	}
	v := l.RunIn(dir, "--version")
	require.Equal(t, 0, v.Code, v.Stderr)
	require.Equal(t, r.Stdout, v.Stdout)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "version opens no database")
}
