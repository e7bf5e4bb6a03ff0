package labcli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
	"github.com/lockstep-queue/lockstep/internal/dsn"
	"github.com/lockstep-queue/lockstep/lab/planguard"
	"github.com/lockstep-queue/lockstep/migrate"
)

func newPlanguardCmd(c *clienv.Env) *cobra.Command {
	var synthetic, verbose, asJSON bool
	var only, dists []string
	cmd := &cobra.Command{
		Use:   "planguard",
		Short: "EXPLAIN every queue statement and check it takes its declared access path",
		Long: `EXPLAIN every statement in lockstep's statement catalogue and check that the
database plans it the way the catalogue declares: the index that finds its
rows, no full scan, and a claim that neither sorts nor reads past its LIMIT.
On MySQL/MariaDB the index a statement finds rows through is part of what it
locks, so a different plan is a different lock order; on PostgreSQL (which
locks tuples) only claims and the id-ordered locking reads must match, and
other deviations are printed as notes.

By default it explains against the data the database holds now and changes
nothing (a claim is measured inside a transaction that is rolled back).

With --synthetic it loads five distributions in turn into the queue's tables
(near-empty, a fresh run, runs almost done, 1,000,000 mostly DONE, a large
backlog), refreshing statistics after each. That replaces the tables'
contents, so it refuses a database whose lockstep_jobs is not empty: point it
at a scratch database. A database without lockstep's tables is migrated
first, as 'lockstep migrate up' would; one with an older schema is refused
('lockstep migrate up' it first).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			drv, err := c.OpenDriver(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = drv.Close() }()
			if drv.Dialect() == dsn.SQLite {
				// planguard's own refusal, before the schema's: migrating
				// would not make SQLite a database it can check.
				return fmt.Errorf("planguard: SQLite has no row-level lock order to guard (SQLite serialises writers with BEGIN IMMEDIATE): point --dsn at MySQL, MariaDB or PostgreSQL")
			}
			if err := planguardSchema(ctx, c, drv, synthetic); err != nil {
				return err
			}
			for _, name := range only {
				if _, ok := drv.Catalog().Lookup(name); !ok {
					return fmt.Errorf("planguard: no statement %q in the %s catalogue (have: %s)", name, drv.Catalog().Dialect(), strings.Join(drv.Catalog().Names(), ", "))
				}
			}
			opts := planguard.Options{Statements: only}
			var rep *planguard.Report
			chosen, err := pickDistributions(dists)
			if err != nil {
				return err
			}
			if synthetic {
				rep, err = planguard.CheckDistributions(ctx, drv, chosen, opts)
			} else {
				rep, err = planguard.Check(ctx, drv, opts)
			}
			if err != nil {
				return err
			}
			if asJSON {
				if err := clienv.JSON(c.Stdout, rep); err != nil {
					return err
				}
			} else if err := rep.WriteText(c.Stdout, verbose); err != nil {
				return err
			}
			if len(rep.Failed()) > 0 {
				// Non-zero exit after the report, which says which.
				return errors.New("planguard: some statements are not planned as the catalogue declares")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&synthetic, "synthetic", false, "load the five distributions into an empty scratch database and check under each")
	cmd.Flags().StringSliceVar(&dists, "distribution", nil, "with --synthetic, load only these distributions (repeatable; default all five)")
	cmd.Flags().StringSliceVar(&only, "statement", nil, "check only these catalogue statements (repeatable)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "also list statements that were not explained, and why")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// planguardSchema makes sure the database has lockstep's tables at this
// binary's version. --synthetic wants a scratch database and fills it
// itself, so an empty one (as README's command line meets it) is migrated
// here rather than refused; one with an older or newer schema is refused,
// since migrating it would change more than a scratch database.
func planguardSchema(ctx context.Context, c *clienv.Env, drv driver.Driver, synthetic bool) error {
	st, err := c.SchemaState(ctx, drv)
	if err != nil {
		return err
	}
	if !synthetic || st.Current != 0 {
		return c.SchemaProblem(st)
	}
	m, err := migrate.New(drv)
	if err != nil {
		return err
	}
	if _, err := m.Up(ctx); err != nil {
		return fmt.Errorf("planguard: migrate the scratch database: %w", err)
	}
	fmt.Fprintf(c.Stderr, "planguard: created lockstep's tables in %s (schema version %d)\n", c.Where(), m.Latest())
	return nil
}

func pickDistributions(names []string) ([]planguard.Distribution, error) {
	all := planguard.Default()
	if len(names) == 0 {
		return all, nil
	}
	var out []planguard.Distribution
	for _, n := range names {
		found := false
		for _, d := range all {
			if d.Name == n {
				out, found = append(out, d), true
			}
		}
		if !found {
			var have []string
			for _, d := range all {
				have = append(have, d.Name)
			}
			return nil, fmt.Errorf("planguard: no distribution %q (have: %s)", n, strings.Join(have, ", "))
		}
	}
	return out, nil
}
