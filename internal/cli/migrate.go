package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
	"github.com/lockstep-queue/lockstep/internal/dsn"
	"github.com/lockstep-queue/lockstep/migrate"
)

func newMigrateCmd(c *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply, revert, list or print lockstep's schema migrations",
		Long: `Apply, revert, list or print lockstep's schema migrations.

The schema is embedded in the binary, versioned, one set per dialect. The
applied versions are recorded in the table lockstep_migrations. Users who
apply schema with their own migration tool can take the SQL from
'lockstep migrate print --dialect mysql|postgres|sqlite'.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		newMigrateUpCmd(c),
		newMigrateDownCmd(c),
		newMigrateStatusCmd(c),
		newMigratePrintCmd(c),
		newMigrateTextIndexCmd(c),
	)
	return cmd
}

// withMigrator opens the database and runs fn with its migrator. A
// migration that fails is reported on several lines (migrationFailure).
func (c *app) withMigrator(ctx context.Context, fn func(m *migrate.Migrator) error) error {
	d, err := c.OpenDriver(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	m, err := migrate.New(d)
	if err != nil {
		return err
	}
	err = fn(m)
	var me *migrate.MigrationError
	if errors.As(err, &me) {
		return migrationFailure(me, d.Dialect())
	}
	return err
}

// migrationFailure reports a failed migration on lines of its own: which
// migration, which statement of its file (where it starts, and its first
// line: the whole CREATE TABLE flattened into one line is unreadable),
// what the database said, and what is left applied.
func migrationFailure(me *migrate.MigrationError, dialect string) error {
	verb := "migrate up"
	if me.Down {
		verb = "migrate down"
	}
	e := &detailedError{headline: fmt.Sprintf("%s: migration %04d_%s failed", verb, me.Migration.Version, me.Migration.Name)}
	var se *migrate.StatementError
	if !errors.As(me.Err, &se) {
		e.details = append(e.details, "the database said: "+oneLine(me.Err))
		return e
	}
	e.details = append(e.details, statementDetails(se, me.File())...)
	switch {
	case dialect == dsn.MySQL && se.Index > 1:
		// MySQL and MariaDB commit each DDL statement as it runs: the
		// migration's transaction cannot take the earlier ones back.
		e.details = append(e.details, fmt.Sprintf("MySQL commits each schema change at once: statements 1 to %d of this migration stayed applied, "+
			"and the migration is not recorded: undo them by hand (the SQL of %04d_%s in 'lockstep migrate print --down' shows how) before running %s again",
			se.Index-1, me.Migration.Version, me.Migration.Name, verb))
	case dialect != dsn.MySQL:
		e.details = append(e.details, "nothing of this migration was applied: its transaction was rolled back")
	}
	return e
}

// statementDetails are the lines that say which statement of file the
// database refused, how it starts, and what the database said.
func statementDetails(se *migrate.StatementError, file string) []string {
	return []string{
		fmt.Sprintf("statement %d of %d, line %d of %s:", se.Index, se.Count, se.Line, file),
		"  " + outSafe(migrate.FirstLine(se.Statement, 100), false),
		"the database said: " + oneLine(se.Err),
	}
}

func newMigrateUpCmd(c *app) *cobra.Command {
	return &cobra.Command{
		Use:   "up",
		Short: "Apply every pending migration",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.withMigrator(cmd.Context(), func(m *migrate.Migrator) error {
				done, err := m.Up(cmd.Context())
				for _, mig := range done {
					fmt.Fprintf(c.Stdout, "applied  %04d_%s\n", mig.Version, mig.Name)
				}
				if err != nil {
					return err
				}
				if len(done) == 0 {
					fmt.Fprintf(c.Stdout, "schema is up to date (version %d)\n", m.Latest())
				} else {
					fmt.Fprintf(c.Stdout, "schema is at version %d\n", m.Latest())
				}
				return nil
			})
		},
	}
}

func newMigrateDownCmd(c *app) *cobra.Command {
	var steps int
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Revert the last applied migration (or --steps N of them)",
		Long: `Revert the last applied migration, or the last N with --steps N.

Reverting the first migration drops lockstep's tables and every job and run
in them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if steps < 1 {
				return fmt.Errorf("--steps must be at least 1, got %d", steps)
			}
			return c.withMigrator(cmd.Context(), func(m *migrate.Migrator) error {
				done, err := m.Down(cmd.Context(), steps)
				for _, mig := range done {
					fmt.Fprintf(c.Stdout, "reverted %04d_%s\n", mig.Version, mig.Name)
				}
				if err != nil {
					return err
				}
				if len(done) == 0 {
					fmt.Fprintln(c.Stdout, "nothing to revert: no migration is applied")
					return nil
				}
				v, err := m.Version(cmd.Context())
				if err != nil {
					return err
				}
				fmt.Fprintf(c.Stdout, "schema is at version %d\n", v)
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&steps, "steps", 1, "number of migrations to revert")
	return cmd
}

// statusJSON is one line of `migrate status --json`.
type statusJSON struct {
	Version   int        `json:"version"`
	Name      string     `json:"name"`
	Applied   bool       `json:"applied"`
	AppliedAt *time.Time `json:"applied_at"`
}

func newMigrateStatusCmd(c *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List migrations and whether each is applied",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.withMigrator(cmd.Context(), func(m *migrate.Migrator) error {
				st, err := m.Status(cmd.Context())
				if err != nil {
					return err
				}
				if asJSON {
					out := make([]statusJSON, 0, len(st))
					for _, s := range st {
						j := statusJSON{Version: s.Version, Name: s.Name, Applied: s.Applied}
						if s.Applied && !s.AppliedAt.IsZero() {
							at := s.AppliedAt.UTC()
							j.AppliedAt = &at
						}
						out = append(out, j)
					}
					return clienv.JSON(c.Stdout, out)
				}
				tw := clienv.Table(c.Stdout)
				fmt.Fprintln(tw, "VERSION\tNAME\tSTATE\tAPPLIED_AT")
				for _, s := range st {
					state, at := "pending", "-"
					if s.Applied {
						state = "applied"
						if !s.AppliedAt.IsZero() {
							at = s.AppliedAt.UTC().Format(time.RFC3339)
						}
					}
					fmt.Fprintf(tw, "%04d\t%s\t%s\t%s\n", s.Version, s.Name, state, at)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	return cmd
}

// migrationsFS returns a dialect's embedded migrations without opening a
// database.
func migrationsFS(dialect string) (fs.FS, error) {
	switch dialect {
	case dsn.MySQL, "mariadb":
		return mysql.Migrations(), nil
	case dsn.Postgres, "postgresql":
		return postgres.Migrations(), nil
	case dsn.SQLite:
		return sqlite.Migrations(), nil
	}
	return nil, fmt.Errorf("unknown dialect %q: use mysql, postgres or sqlite", dialect)
}

// catalogOf is a dialect's statement catalogue without a connection,
// for the bookkeeping statements of a printed script (which are the same
// on MariaDB and MySQL). The dialect is one migrationsFS knows.
func catalogOf(dialect string) *catalog.Catalog {
	switch dialect {
	case dsn.MySQL:
		return mysql.Catalog(false)
	case "mariadb":
		return mysql.Catalog(true)
	case dsn.Postgres, "postgresql":
		return postgres.Catalog()
	}
	return sqlite.Catalog()
}

func newMigratePrintCmd(c *app) *cobra.Command {
	var dialect string
	var down bool
	cmd := &cobra.Command{
		Use:   "print",
		Short: "Print the migrations' SQL, for your own migration tool (needs no database)",
		Long: `Print the SQL of every migration for a dialect, in order (with --down, the
reverting SQL in reverse order), for users who apply schema with their own
migration tool. It connects to nothing. Without --dialect, the dialect of
--dsn is used. MySQL and MariaDB share one schema.

The script includes lockstep's bookkeeping, which 'lockstep work', 'serve'
and every other command read: the CREATE TABLE of lockstep_migrations
first, and after each migration the INSERT that records it (with --down,
the DELETE that forgets it). Applied statement by statement to an empty
database, it leaves it as 'lockstep migrate up' would.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d := strings.ToLower(dialect)
			if d == "" {
				p, err := dsn.Parse(c.DSN)
				if err != nil {
					return errors.Join(errors.New("no --dialect given and --dsn is not usable"), err)
				}
				d = p.Dialect
			}
			fsys, err := migrationsFS(d)
			if err != nil {
				return err
			}
			ms, err := migrate.Load(fsys)
			if err != nil {
				return fmt.Errorf("load %s migrations: %w", d, err)
			}
			script, err := migrate.Script(ms, catalogOf(d), down)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(c.Stdout, script)
			return err
		},
	}
	cmd.Flags().StringVar(&dialect, "dialect", "", "mysql (also MariaDB), postgres or sqlite; default: the dialect of --dsn")
	cmd.Flags().BoolVar(&down, "down", false, "print the reverting SQL instead")
	return cmd
}
