package labcli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
	"github.com/lockstep-queue/lockstep/lab/audit"
)

func newAuditCmd(c *clienv.Env) *cobra.Command {
	var keep bool
	cmd := &cobra.Command{
		Use:   "audit DIR",
		Short: "Audit an application's statements for lock paths that can cross",
		Long: `The lock-path checklist, automated. DIR holds statements.sql (the
statements the application issues, each named by a "-- name: NAME" comment
before it), optionally schema.sql (created in the --dsn database, which must
then be a scratch database, and dropped afterwards), and data-*.sql files,
each replacing the tables' rows with one data distribution.

Every statement is EXPLAINed under each distribution (or the data as it is,
without data files). Each writer's lock path is derived — the index it finds
rows through, the indexes it changes — and every pair of statements whose
paths can cross is reported: one finds rows through an index the other
changes after locking PRIMARY. So are range writes through an index on a
column that changes. Each finding comes with the fix.

Try it on the attempt table: lockstep lab audit --dsn mysql://…/scratch lab/attempt/sql
MySQL and MariaDB only. Exits 1 when something is flagged.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			in, err := audit.LoadDir(args[0])
			if err != nil {
				return err
			}
			drv, err := c.OpenDriver(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = drv.Close() }()
			if drv.Dialect() != "mysql" {
				return fmt.Errorf("lab audit: the lock paths it derives are InnoDB's; point --dsn at MySQL or MariaDB")
			}
			rep, err := audit.Run(ctx, drv.DB(), in, keep)
			if err != nil {
				return err
			}
			if err := rep.WriteText(c.Stdout); err != nil {
				return err
			}
			if len(rep.Findings) > 0 {
				// Non-zero exit after the report, which says what crosses.
				return errors.New("audit: lock paths can cross")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&keep, "keep", false, "leave the tables schema.sql created")
	return cmd
}
