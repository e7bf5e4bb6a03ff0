package labcli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
)

func catalogOf(dialect string) (*catalog.Catalog, error) {
	switch dialect {
	case "mariadb":
		return mysql.Catalog(true), nil
	case "galera":
		return mysql.GaleraCatalog(), nil
	case "mysql":
		return mysql.Catalog(false), nil
	case "postgres":
		return postgres.Catalog(), nil
	case "sqlite":
		return sqlite.Catalog(), nil
	}
	return nil, fmt.Errorf("catalog: unknown dialect %q (want mariadb, galera, mysql, postgres or sqlite)", dialect)
}

func newCatalogCmd(c *clienv.Env) *cobra.Command {
	var dialect string
	var withSQL bool
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Print the statement catalogue: every statement, its access path and what it locks",
		Long: `Print the statement catalogue of a dialect as a Markdown table: every
statement the queue issues, the index it finds its rows through, the indexes
it changes, and what it locks in which order. With --sql, each statement's
text follows the table. No database is needed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cat, err := catalogOf(dialect)
			if err != nil {
				return err
			}
			var keep func(catalog.Statement) bool
			if dialect == "galera" {
				// Only what a Galera node adds: the rest is MariaDB's.
				base := mysql.Catalog(true)
				keep = func(st catalog.Statement) bool {
					_, ok := base.Lookup(string(st.Name))
					return !ok
				}
			}
			return writeCatalog(c.Stdout, cat, keep, withSQL)
		},
	}
	cmd.Flags().StringVar(&dialect, "dialect", "mariadb", "mariadb, galera (what a Galera node adds to mariadb), mysql, postgres or sqlite")
	cmd.Flags().BoolVar(&withSQL, "sql", false, "also print each statement's SQL")
	return cmd
}

func writeCatalog(w io.Writer, cat *catalog.Catalog, keep func(catalog.Statement) bool, withSQL bool) error {
	if _, err := io.WriteString(w, cat.MarkdownOf(keep)); err != nil {
		return err
	}
	if !withSQL {
		return nil
	}
	for _, s := range cat.All() {
		if keep != nil && !keep(s) {
			continue
		}
		if _, err := fmt.Fprintf(w, "\n%s:\n    %s\n", s.Name, s.SQL); err != nil {
			return err
		}
	}
	return nil
}
