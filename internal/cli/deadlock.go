package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
	"github.com/lockstep-queue/lockstep/internal/dsn"
	"github.com/lockstep-queue/lockstep/lockdiag/deadlock"
)

// newDeadlockCmd is `lockstep deadlock`. It is lock diagnostics for the
// databases the queue runs on (package lockdiag/deadlock, which the
// dashboard's lock monitor decodes with too), not a lab experiment: it
// reads any MySQL/MariaDB server's reports, about the application's own
// tables, so it is a queue command here rather than one of lab/labcli's.
func newDeadlockCmd(c *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "deadlock",
		Short: "Decode InnoDB deadlock reports",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newDeadlockDecodeCmd(c))
	return cmd
}

func newDeadlockDecodeCmd(c *app) *cobra.Command {
	var asJSON, aggregate bool
	cmd := &cobra.Command{
		Use:   "decode [FILE|-]",
		Short: "Decode SHOW ENGINE INNODB STATUS output or an error log of deadlocks",
		Long: `Decode InnoDB deadlock reports: the LATEST DETECTED DEADLOCK section of
SHOW ENGINE INNODB STATUS (also as the mysql client prints it, with \n
escapes), or an error log written with innodb_print_all_deadlocks=ON holding
many of them. Both MySQL 8's layout and MariaDB's (CONFLICTING WITH) are read.

For each transaction it prints the statement, what it holds, what it waits
for (index, record with its fields decoded, lock mode: next-key, rec-not-gap,
gap or insert-intention), the transaction rolled back, and whether the
deadlock is the lock-order pattern of two statements taking the same
secondary index and PRIMARY in opposite order, with the fix.

Input is FILE, or stdin when FILE is - or absent. With --dsn and no FILE it
reads SHOW ENGINE INNODB STATUS from that MySQL/MariaDB server (PROCESS
privilege needed); with --dsn, record fields are named after the columns
information_schema lists for each index (otherwise they are positional).

With more than one report (an error log) the reports are grouped by table,
index pair and statement shape, most frequent first (--aggregate=false
prints each report instead).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			live := cmd.Flags().Changed("dsn")
			var db *sql.DB
			if live {
				d, err := c.OpenDriver(ctx)
				if err != nil {
					return err
				}
				defer func() { _ = d.Close() }()
				if d.Dialect() != dsn.MySQL {
					return fmt.Errorf("deadlock decode --dsn needs a MySQL or MariaDB server, got %s", d.Dialect())
				}
				db = d.DB()
			}
			text, source, err := c.deadlockInput(ctx, cmd.InOrStdin(), db, args)
			if err != nil {
				return err
			}
			reports, perr := deadlock.ParseString(text)
			if len(reports) == 0 {
				if errors.Is(perr, deadlock.ErrNoReport) && db != nil && len(args) == 0 {
					fmt.Fprintln(c.Stdout, "no deadlock: SHOW ENGINE INNODB STATUS has no LATEST DETECTED DEADLOCK section (none since the server started)")
					return nil
				}
				return fmt.Errorf("decode %s: %w", source, perr)
			}
			if perr != nil {
				// Keep what decoded: one garbled block in a long error log
				// should not hide the others.
				fmt.Fprintf(c.Stderr, "warning: %s: some reports were skipped: %v\n", source, perr)
			}
			if db != nil {
				if err := deadlock.NameFields(reports, infoSchemaColumns(ctx, db)); err != nil {
					return err
				}
			}
			if !cmd.Flags().Changed("aggregate") {
				aggregate = len(reports) > 1
			}
			var groups []*deadlock.Group
			if aggregate {
				groups = deadlock.Aggregate(reports)
			}
			if asJSON {
				return clienv.JSON(c.Stdout, struct {
					Reports []*deadlock.Report `json:"reports"`
					Groups  []*deadlock.Group  `json:"groups,omitempty"`
				}{reports, groups})
			}
			if !aggregate {
				for i, r := range reports {
					if i > 0 {
						fmt.Fprintln(c.Stdout, "\n"+strings.Repeat("=", 72))
					}
					if err := r.WriteText(c.Stdout); err != nil {
						return err
					}
				}
				return nil
			}
			if err := deadlock.WriteAggregate(c.Stdout, len(reports), groups); err != nil {
				return err
			}
			for i, g := range groups {
				fmt.Fprintf(c.Stdout, "\n%s\nGroup #%d, first occurrence:\n", strings.Repeat("=", 72), i+1)
				if err := g.Example.WriteText(c.Stdout); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the decoded reports (and groups) as JSON")
	cmd.Flags().BoolVar(&aggregate, "aggregate", false, "group reports by table, index pair and statement shape (default: on when there is more than one report)")
	return cmd
}

// deadlockInput returns the text to decode and a name for it in errors.
func (c *app) deadlockInput(ctx context.Context, stdin io.Reader, db *sql.DB, args []string) (string, string, error) {
	switch {
	case len(args) == 1 && args[0] != "-":
		b, err := os.ReadFile(args[0])
		if err != nil {
			return "", "", fmt.Errorf("read deadlock report: %w", err)
		}
		return string(b), args[0], nil
	case len(args) == 0 && db != nil:
		s, err := innodbStatus(ctx, db)
		return s, "SHOW ENGINE INNODB STATUS", err
	default:
		b, err := io.ReadAll(stdin)
		if err != nil {
			return "", "", fmt.Errorf("read deadlock report from stdin: %w", err)
		}
		return string(b), "stdin", nil
	}
}

func innodbStatus(ctx context.Context, db *sql.DB) (string, error) {
	var typ, name, status string
	err := db.QueryRowContext(ctx, "SHOW ENGINE INNODB STATUS").Scan(&typ, &name, &status)
	if err != nil {
		if strings.Contains(err.Error(), "1227") {
			return "", fmt.Errorf("SHOW ENGINE INNODB STATUS needs the PROCESS privilege: %w", err)
		}
		return "", fmt.Errorf("SHOW ENGINE INNODB STATUS: %w", err)
	}
	return status, nil
}

// infoSchemaColumns names index record fields the way InnoDB lays them
// out: a clustered record is the key columns, DB_TRX_ID, DB_ROLL_PTR, then
// the other stored columns; a secondary record is the index's columns and
// then whatever primary-key columns it does not already hold.
func infoSchemaColumns(ctx context.Context, db *sql.DB) deadlock.ColumnsFunc {
	return func(table, index string) ([]string, error) {
		schema, name, ok := strings.Cut(table, ".")
		if !ok {
			return nil, nil
		}
		pk, err := indexColumns(ctx, db, schema, name, "PRIMARY")
		if err != nil {
			return nil, err
		}
		if index == "PRIMARY" || index == "GEN_CLUST_INDEX" {
			if len(pk) == 0 {
				pk = []string{"DB_ROW_ID"}
			}
			rows, err := db.QueryContext(ctx, `SELECT COLUMN_NAME FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND EXTRA NOT LIKE '%VIRTUAL%' ORDER BY ORDINAL_POSITION`, schema, name)
			if err != nil {
				return nil, fmt.Errorf("columns of %s: %w", table, err)
			}
			defer func() { _ = rows.Close() }()
			out := append(append([]string{}, pk...), "DB_TRX_ID", "DB_ROLL_PTR")
			for rows.Next() {
				var col string
				if err := rows.Scan(&col); err != nil {
					return nil, err
				}
				if !contains(pk, col) {
					out = append(out, col)
				}
			}
			return out, rows.Err()
		}
		cols, err := indexColumns(ctx, db, schema, name, index)
		if err != nil || len(cols) == 0 {
			return nil, err
		}
		for _, k := range pk {
			if !contains(cols, k) {
				cols = append(cols, k)
			}
		}
		return cols, nil
	}
}

func indexColumns(ctx context.Context, db *sql.DB, schema, table, index string) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT COLUMN_NAME FROM information_schema.STATISTICS
WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = ? ORDER BY SEQ_IN_INDEX`, schema, table, index)
	if err != nil {
		return nil, fmt.Errorf("columns of index %s of %s.%s: %w", index, schema, table, err)
	}
	defer func() { _ = rows.Close() }()
	var out []string
	for rows.Next() {
		var col string
		if err := rows.Scan(&col); err != nil {
			return nil, err
		}
		out = append(out, col)
	}
	return out, rows.Err()
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
