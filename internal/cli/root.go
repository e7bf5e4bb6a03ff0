package cli

import (
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
	"github.com/lockstep-queue/lockstep/internal/dsn"
)

// app is the state shared by all commands: the global flags, the output
// streams and the logger (clienv.Env, which the lab's commands share too),
// and the kinds of job extensions added to `work`.
type app struct {
	*clienv.Env
	workKinds []clienv.WorkKind
}

const rootLong = `lockstep is a job queue that lives in the database you already run —
MySQL 8.0.1+/MariaDB 10.6+, PostgreSQL 12+, or an embedded SQLite file — with
runs of jobs as a first-class idea. Workers claim jobs with short READ
COMMITTED transactions (SELECT ... FOR UPDATE SKIP LOCKED, or BEGIN IMMEDIATE
on SQLite), run them with no transaction open, and write results fenced on the
attempt they claimed; every statement that writes job rows follows one lock
order (ids read without locking, then rows by primary key in ascending id
order, a run row before its jobs), so claim, finish, retry, snooze, reap and
cancel do not deadlock with each other whatever plan the optimizer picks.

Try it with no database server: lockstep demo

Run it:
  lockstep migrate up                                   create the tables
  lockstep enqueue resize '{"file":"a.png"}'            add a job
  lockstep work --exec resize=./resize.sh               run workers (args on stdin)
  lockstep serve                                        dashboard on 127.0.0.1:8080
  lockstep stats | runs | jobs | cancel | retry         look and act
  lockstep queues pause | resume | max-workers | limit NAME   control a queue

Databases are named with --dsn or $LOCKSTEP_DSN:
  mysql://user:pass@host:3306/db      (also mariadb://)
  postgres://user:pass@host:5432/db   (also postgresql://)
  sqlite:path/to/file.db              (also sqlite:///abs/path.db)
Without either, lockstep uses the SQLite file ./lockstep.db if it exists;
only 'lockstep migrate up' creates it, so a forgotten --dsn is an error
rather than a new, empty database.`

// newRootCmd builds the command tree. A new command is a newXxxCmd(c) in
// its own file, added to the list below; the extensions' commands follow.
func newRootCmd(stdout, stderr io.Writer, exts []clienv.Extension) *cobra.Command {
	c := &app{Env: &clienv.Env{Stdout: stdout, Stderr: stderr}}
	for _, ext := range exts {
		c.workKinds = append(c.workKinds, ext.WorkKinds...)
	}
	root := &cobra.Command{
		Use:           "lockstep",
		Short:         "A job queue on MySQL/MariaDB, PostgreSQL and SQLite that follows one lock order",
		Long:          rootLong,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Without a subcommand, show the help rather than doing anything.
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			c.DSNSource = clienv.DSNFlag
			if !cmd.Flags().Changed("dsn") {
				c.DSN, c.DSNSource = os.Getenv("LOCKSTEP_DSN"), clienv.DSNEnv
			}
			if strings.TrimSpace(c.DSN) == "" {
				// An empty --dsn "$UNSET" is a forgotten DSN, as no
				// --dsn is: both fall back to the default file.
				c.DSNSource = clienv.DSNDefault
			}
			c.Database = clienv.DatabaseUseOf(cmd)
			return c.Setup()
		},
		// --version prints what `lockstep version` does.
		Version: moduleVersion(),
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("{{.Annotations.versionText}}")
	root.Annotations = map[string]string{"versionText": versionText()}
	root.CompletionOptions.HiddenDefaultCmd = true
	// Mistyped commands and flags get a suggestion among the real ones
	// (usage.go), at cobra's edit distance.
	root.SuggestionsMinimumDistance = 2
	root.SetFlagErrorFunc(flagError)

	f := root.PersistentFlags()
	// The default is resolved in PersistentPreRunE, not here, so that
	// --help never shows $LOCKSTEP_DSN, which may hold a password.
	f.StringVar(&c.DSN, "dsn", "",
		"database: mysql://… or user:pass@tcp(host)/db, postgres://… or host=… dbname=…, sqlite:PATH or a file path (default $LOCKSTEP_DSN, else sqlite:"+dsn.DefaultSQLitePath+
			" if that file exists; only 'migrate up' creates it)")
	f.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.StringVar(&c.LogFormat, "log-format", "text", "log format: text or json")

	root.AddCommand(
		newMigrateCmd(c),
		newDemoCmd(c),
		newDeadlockCmd(c),
		newEnqueueCmd(c),
		newRunsCmd(c),
		newJobsCmd(c),
		newCancelCmd(c),
		newRetryCmd(c),
		newStatsCmd(c),
		newHistoryCmd(c),
		newQueuesCmd(c),
		newProcessesCmd(c),
		newWorkCmd(c),
		newServeCmd(c),
		newVersionCmd(c),
	)
	for _, ext := range exts {
		for _, build := range ext.Commands {
			root.AddCommand(build(c.Env))
		}
	}
	setDatabaseUses(root)
	// Added now rather than when it runs, so that its argument checks are
	// in the user's words too.
	root.InitDefaultCompletionCmd()
	userArgs(root)
	return root
}

// setDatabaseUses says how the commands that open the database with
// --dsn but do not need lockstep's tables at this binary's version use it
// (clienv.OpenDriver goes by it); every other command needs them. The
// commands are found by path here, so that their own files need not know.
func setDatabaseUses(root *cobra.Command) {
	for path, use := range map[string]string{
		// The migrations read and change the schema themselves; only up
		// may create the default SQLite file, with the tables.
		"migrate":    clienv.DatabaseAny,
		"migrate up": clienv.DatabaseCreates,
		// Client.Start checks the schema, in its own words.
		"work":  clienv.DatabaseAny,
		"serve": clienv.DatabaseAny,
		// Reads information_schema of any MySQL database.
		"deadlock": clienv.DatabaseAny,
	} {
		// TestDatabaseUses finds a command renamed without this list.
		if cmd, _, err := root.Find(strings.Fields(path)); err == nil && cmd != root {
			clienv.SetDatabaseUse(cmd, use)
		}
	}
}
