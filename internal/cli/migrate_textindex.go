package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/internal/dsn"
	"github.com/lockstep-queue/lockstep/migrate"
)

func newMigrateTextIndexCmd(c *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "text-index",
		Short: "Create, drop, check or print the job search's optional text index",
		Long: `Create, drop, check or print the job search's optional text index.

Without it, a search (lockstep jobs --search, the dashboard's search box)
reads windows of ids, newest first, and a rare match deep in a big table
takes several pages to reach. With it, a search the newest window does not
answer goes on through the index, over every job, in one page.

PostgreSQL: a pg_trgm GIN index on args and metadata, built CONCURRENTLY
(writes go on); it finds any substring of three characters or more.
MySQL/MariaDB: a FULLTEXT index on args and metadata; adding it rebuilds
the table and holds back writes while it does. It finds words (letters,
digits, '_') by their beginning; a match inside a word is found in the
newest window only. SQLite has no text index.

Every insert pays for the index: docs/operate.md has the measured cost.
'lockstep migrate up' never creates it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	apply := func(up bool) *cobra.Command {
		use, short, done := "up", "Create the text index (nothing to do if it exists)", "created"
		if !up {
			use, short, done = "down", "Drop the text index (nothing to do if it does not exist)", "dropped"
		}
		return &cobra.Command{
			Use: use, Short: short, Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				d, err := c.OpenDriver(cmd.Context())
				if err != nil {
					return err
				}
				defer func() { _ = d.Close() }()
				had, err := migrate.HasTextIndex(cmd.Context(), d)
				if err != nil {
					return err
				}
				if err := migrate.TextIndex(cmd.Context(), d, up); err != nil {
					return textIndexFailure(err, use)
				}
				if had == up {
					fmt.Fprintf(c.Stdout, "text index lockstep_jobs_text: nothing to do (it %s)\n", map[bool]string{true: "exists", false: "does not exist"}[had])
					return nil
				}
				fmt.Fprintf(c.Stdout, "text index lockstep_jobs_text: %s\n", done)
				return nil
			},
		}
	}
	status := &cobra.Command{
		Use: "status", Short: "Say whether the text index exists", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := c.OpenDriver(cmd.Context())
			if err != nil {
				return err
			}
			defer func() { _ = d.Close() }()
			if _, err := migrate.TextIndexSQL(d.Migrations(), true); err != nil {
				return err
			}
			have, err := migrate.HasTextIndex(cmd.Context(), d)
			if err != nil {
				return err
			}
			if have {
				fmt.Fprintln(c.Stdout, "text index lockstep_jobs_text: present (searches go on through it past the newest window)")
			} else {
				fmt.Fprintln(c.Stdout, "text index lockstep_jobs_text: absent (searches read windows of ids; 'lockstep migrate text-index up' creates it)")
			}
			return nil
		},
	}
	var dialect string
	var down bool
	print := &cobra.Command{
		Use: "print", Short: "Print the text index's SQL, for your own migration tool (needs no database)", Args: cobra.NoArgs,
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
			body, err := migrate.TextIndexSQL(fsys, !down)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(c.Stdout, body)
			return err
		},
	}
	print.Flags().StringVar(&dialect, "dialect", "", "mysql (also MariaDB) or postgres; default: the dialect of --dsn")
	print.Flags().BoolVar(&down, "down", false, "print the SQL that drops it instead")
	cmd.AddCommand(apply(true), apply(false), status, print)
	return cmd
}

// textIndexFailure reports a refused text-index statement on lines of its
// own, as a failed migration is.
func textIndexFailure(err error, verb string) error {
	var se *migrate.StatementError
	if !errors.As(err, &se) {
		return err
	}
	return &detailedError{
		headline: "migrate text-index " + verb + ": failed",
		details:  statementDetails(se, "text_index."+verb+".sql"),
	}
}
