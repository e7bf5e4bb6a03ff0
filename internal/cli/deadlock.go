package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	gomysql "github.com/go-sql-driver/mysql"
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
	cmd.AddCommand(newDeadlockDecodeCmd(c, false), newDeadlockDecodeCmd(c, true))
	return cmd
}

const deadlockLong = `Decode InnoDB deadlock reports: the LATEST DETECTED DEADLOCK section of
SHOW ENGINE INNODB STATUS (also as the mysql client prints it, with \n
escapes), or an error log written with innodb_print_all_deadlocks=ON holding
many of them, from MySQL 5.0 to 9.x and MariaDB 10 to 11. Pasted reports
are read too: indented, quoted ("> "), fenced, with CR/LF line ends, blank
lines between lines, collapsed spaces, or cut off (every complete
transaction is decoded, with a warning).

For each transaction it prints the statement, what it holds (printed, or
inferred and marked so where the report does not print it: MySQL 5.7's
transaction (1), MariaDB's CONFLICTING WITH), what it waits for (index,
record with its key decoded, lock mode: next-key, rec-not-gap, gap or
insert-intention), the victim, the waits-for graph and the pattern, with a
fix for the report's own table and index; or says it recognises none.

Keys are decoded with the columns' types from, in order: the live server
(--dsn, information_schema), a schema file (--schema FILE: CREATE TABLE
statements or SHOW CREATE TABLE output), else inferred from the bytes with
the uncertainty shown. A table the report names that neither has (dropped
since the deadlock, as 'lab repro' drops its table) is said to be not
found, and its keys are inferred.

Input is FILE, or stdin when FILE is - or absent. With --dsn and no FILE it
reads SHOW ENGINE INNODB STATUS from that MySQL/MariaDB server (PROCESS
privilege needed).`

func newDeadlockDecodeCmd(c *app, aggregateCmd bool) *cobra.Command {
	var asJSON, aggregate bool
	var schemaFile string
	use, short, long := "decode [FILE|-]", "Decode SHOW ENGINE INNODB STATUS output or an error log of deadlocks", deadlockLong+`

With more than one report (an error log) the reports are grouped by table,
index pair, pattern and statement shape, most frequent first
(--aggregate=false prints each report instead).`
	if aggregateCmd {
		use, short = "aggregate [FILE|-]", "Group the deadlocks of an error log by table, indexes, pattern and statement shape"
		long = `Read every deadlock report in an error log (innodb_print_all_deadlocks=ON)
and group them by table, index pair, pattern and statement shape (literals,
negative ones too, become ?), most frequent first, with how often each
statement was rolled back and when the group was first and last seen.

` + deadlockLong
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var db *sql.DB
			if cmd.Flags().Changed("dsn") {
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
			var opt deadlock.Options
			if schemaFile != "" {
				b, err := os.ReadFile(schemaFile)
				if err != nil {
					return fmt.Errorf("read --schema file: %w", err)
				}
				sc, err := deadlock.ParseSchema(string(b))
				if err != nil {
					return fmt.Errorf("--schema %s: %w", schemaFile, err)
				}
				opt.Schema = sc
			}
			if db != nil {
				// The live schema comes first; the file fills in tables
				// the server does not have.
				opt.Schema = liveSchema(ctx, db, opt.Schema)
			}
			text, source, err := c.deadlockInput(ctx, cmd.InOrStdin(), db, args)
			if err != nil {
				return err
			}
			reports, perr := deadlock.Decode(text, opt)
			if len(reports) == 0 {
				if errors.Is(perr, deadlock.ErrNoReport) && db != nil && len(args) == 0 {
					fmt.Fprintln(c.Stdout, "no deadlock: SHOW ENGINE INNODB STATUS has no LATEST DETECTED DEADLOCK section (none since the server started)")
					return nil
				}
				return deadlockInputError(source, perr)
			}
			if perr != nil {
				// Keep what decoded: one garbled block in a long error log
				// should not hide the others.
				fmt.Fprintf(c.Stderr, "warning: %s: %v\n", source, describeDecodeErrors(perr))
			}
			if !cmd.Flags().Changed("aggregate") {
				aggregate = aggregateCmd || len(reports) > 1
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
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the decoded reports (and groups) as JSON, every field")
	cmd.Flags().StringVar(&schemaFile, "schema", "", "a file of CREATE TABLE statements (or SHOW CREATE TABLE output) for the reports' tables: keys are decoded with their column types")
	if !aggregateCmd {
		cmd.Flags().BoolVar(&aggregate, "aggregate", false, "group reports by table, index pair, pattern and statement shape (default: on when there is more than one report)")
	}
	return cmd
}

// deadlockInputError says in the user's words why nothing decoded.
func deadlockInputError(source string, err error) error {
	if errors.Is(err, deadlock.ErrNoReport) {
		return fmt.Errorf("%s: no deadlock report in the input: expected the LATEST DETECTED DEADLOCK section of SHOW ENGINE INNODB STATUS, an error log with \"Transactions deadlock detected\", or a report starting \"*** (1) TRANSACTION:\"", source)
	}
	return fmt.Errorf("%s: no report could be decoded: %v", source, describeDecodeErrors(err))
}

// describeDecodeErrors lists each unreadable report by its line and what
// was expected there.
func describeDecodeErrors(err error) string {
	var parts []string
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		var pe *deadlock.ParseError
		var se *deadlock.SchemaError
		switch {
		case errors.As(e, &pe):
			got := ""
			if pe.Got != "" {
				got = fmt.Sprintf(" but it holds %q", firstRunes(pe.Got, 80))
			}
			parts = append(parts, fmt.Sprintf("the report starting at line %d is skipped: line %d should be %s%s", pe.Report, pe.Line, pe.Expected, got))
		case errors.As(e, &se):
			parts = append(parts, fmt.Sprintf("could not read the definition of %s (%v); its keys were decoded from the bytes alone", se.Table, se.Err))
		default:
			parts = append(parts, e.Error())
		}
	}
	walk(err)
	return strings.Join(parts, "; ")
}

func firstRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
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
		// 1227: access denied, this statement needs PROCESS.
		var me *gomysql.MySQLError
		if errors.As(err, &me) && me.Number == 1227 {
			return "", fmt.Errorf("SHOW ENGINE INNODB STATUS needs the PROCESS privilege: %w", err)
		}
		return "", fmt.Errorf("SHOW ENGINE INNODB STATUS: %w", err)
	}
	return status, nil
}
