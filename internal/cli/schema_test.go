package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/clitest"
	"github.com/lockstep-queue/lockstep/internal/dsn"
	"github.com/lockstep-queue/lockstep/migrate"
)

// The commands that read or change jobs, runs or queues, each as it would
// be run on a database with lockstep's tables.
var schemaCommands = [][]string{
	{"stats"}, {"jobs"}, {"jobs", "show", "1"}, {"runs"}, {"runs", "show", "1"},
	{"queues"}, {"queues", "pause", "mail", "--create"}, {"queues", "limit", "mail", "--concurrency", "2", "--create"},
	{"enqueue", "k"}, {"cancel", "job", "1"}, {"cancel", "run", "1"}, {"retry", "job", "1"},
}

// TestCLINeedsLockstepTables: before `migrate up`, every command that
// needs lockstep's tables says so and what to run, in one line, instead
// of the database's "no such table"; it creates nothing (not even the
// bookkeeping table). A schema older or newer than the binary is named as
// such.
func TestCLINeedsLockstepTables(t *testing.T) {
	bin := clitest.Binary(t)
	for _, d := range schemaDialects() {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			l := &lockstepCLI{&clitest.CLI{T: t, Bin: bin, DSN: d.dsn(t)}}
			p, err := dsn.Parse(l.DSN)
			require.NoError(t, err)
			for _, args := range schemaCommands {
				line := l.Fail(args...)
				require.Equal(t, "lockstep: the database at "+p.Redacted+" has no lockstep tables: run 'lockstep migrate up' with the same $LOCKSTEP_DSN first",
					line, "%v", args)
			}
			// The flag's form names the flag.
			code, out, errOut := runCLI(t, "--dsn", l.DSN, "stats")
			require.Equal(t, 1, code)
			require.Empty(t, out)
			require.Equal(t, "lockstep: the database at "+p.Redacted+" has no lockstep tables: run 'lockstep migrate up' with the same --dsn first\n", errOut)

			drv, err := dsn.Open(context.Background(), l.DSN)
			require.NoError(t, err)
			t.Cleanup(func() { _ = drv.Close() })
			_, err = drv.DB().Exec("SELECT 1 FROM lockstep_migrations")
			require.Error(t, err, "the check created nothing, not even the bookkeeping table")

			// Migrated all the way down, the bookkeeping table is there but
			// records nothing: no tables either.
			l.OK("migrate", "up")
			m, err := migrate.New(drv)
			require.NoError(t, err)
			latest := m.Latest()
			all := m.All()
			previous := all[len(all)-2].Version // numbers may skip one another dialect has
			l.OK("migrate", "down", "--steps", fmt.Sprint(len(all)))
			require.Contains(t, l.Fail("jobs"), "has no lockstep tables")

			// Older: one migration behind.
			l.OK("migrate", "up")
			l.OK("migrate", "down")
			for _, args := range schemaCommands {
				require.Equal(t, fmt.Sprintf("lockstep: the lockstep schema of the database at %s is at migration %d, this binary needs %d: "+
					"run 'lockstep migrate up' with the same $LOCKSTEP_DSN first", p.Redacted, previous, latest), l.Fail(args...), "%v", args)
			}

			// Newer: a migration this binary does not have.
			l.OK("migrate", "up")
			_, err = drv.DB().Exec(drv.Catalog().Get("migration.insert").SQL, latest+1, "from_a_newer_binary")
			require.NoError(t, err)
			line := l.Fail("stats")
			require.Equal(t, fmt.Sprintf("lockstep: the lockstep schema of the database at %s is at migration %d, newer than this binary knows (it has up to %d): "+
				"use the newer lockstep that migrated it, or revert with its 'lockstep migrate down'", p.Redacted, latest+1, latest), line)
			_, err = drv.DB().Exec(drv.Catalog().Get("migration.delete").SQL, latest+1)
			require.NoError(t, err)
			require.Equal(t, "no queue has jobs or settings\n", l.OK("queues"))
		})
	}
}

// TestCLIDefaultDatabaseFile: without --dsn or $LOCKSTEP_DSN (or with an
// empty one), no command but `migrate up` creates ./lockstep.db; each
// refuses, naming both. Once `migrate up` has created it, the commands use
// it.
func TestCLIDefaultDatabaseFile(t *testing.T) {
	l := &lockstepCLI{&clitest.CLI{T: t, Bin: clitest.Binary(t), DSN: ""}}
	dir := t.TempDir()
	const want = "lockstep: no database given: pass --dsn or set $LOCKSTEP_DSN; without them lockstep uses ./lockstep.db, " +
		"which does not exist here ('lockstep migrate up' creates it)\n"
	for _, args := range [][]string{
		{"stats"}, {"jobs"}, {"enqueue", "k"}, {"queues"}, {"queues", "pause", "mail", "--create"}, {"runs"},
		{"cancel", "job", "1"}, {"retry", "job", "1"}, {"migrate", "status"}, {"migrate", "down"},
		{"work", "--kind", "demo"}, {"serve", "--addr", "127.0.0.1:0"},
		{"--dsn", "", "enqueue", "k"}, {"--dsn", " ", "stats"},
	} {
		r := l.RunIn(dir, args...)
		require.Equal(t, 1, r.Code, "%v: %s", args, r.Stdout)
		require.Empty(t, r.Stdout, "%v", args)
		require.Equal(t, want, r.Stderr, "%v", args)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Empty(t, entries, "%v created a file", args)
	}

	r := l.RunIn(dir, "migrate", "up")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.FileExists(t, filepath.Join(dir, "lockstep.db"))
	r = l.RunIn(dir, "enqueue", "k")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Equal(t, "1\n", r.Stdout)
	r = l.RunIn(dir, "jobs", "show", "1")
	require.Equal(t, 0, r.Code, r.Stderr)

	// The help says which database is used, and that only migrate up
	// creates it.
	code, out, _ := runCLI(t, "--help")
	require.Equal(t, 0, code)
	require.Contains(t, strings.Join(strings.Fields(out), " "), "lockstep uses the SQLite file ./lockstep.db if it exists; only 'lockstep migrate up' creates it")
	code, out, _ = runCLI(t, "stats", "--help")
	require.Equal(t, 0, code)
	require.Contains(t, out, "else sqlite:lockstep.db if that file exists; only 'migrate up' creates it")
}
