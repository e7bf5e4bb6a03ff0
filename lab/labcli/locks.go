package labcli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
	"github.com/lockstep-queue/lockstep/lab/repro"
	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
)

func newLocksCmd(c *clienv.Env) *cobra.Command {
	var variant, claimPlan, isolation string
	var live bool
	cmd := &cobra.Command{
		Use:   "locks",
		Short: "Print the lock table while the attempt table's cancel waits (or, with --live, now)",
		Long: `Print the server's lock table — transaction, table, index, lock mode,
GRANTED or WAITING, lock data — at the moment the cancel of the claim/cancel
deadlock waits for the claim's PRIMARY 300 lock (the scenario of 'lab repro',
chosen by --variant and --claim-plan), or, with --live, for whatever the
sessions of the --dsn database hold and wait for now.

Sources: performance_schema.data_locks on MySQL 8+, which lists every
lock (table IX locks and the cancel's idx_status locks too); INNODB_LOCKS,
INNODB_LOCK_WAITS and INNODB_TRX on MariaDB, which list only locks that are
part of a wait; pg_locks on PostgreSQL (--live only). MariaDB needs the
PROCESS privilege, MySQL SELECT on performance_schema.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			drv, err := c.OpenDriver(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = drv.Close() }()
			flavor, err := lockview.Detect(ctx, drv.DB())
			if err != nil {
				return err
			}
			if live {
				// The monitor's own pool: it gets a connection while blocked
				// sessions hold the queue's, and on PostgreSQL it plans the
				// pg_locks queries without the queue pool's settings.
				db := drv.DB()
				monitor, err := c.OpenMonitorDB(ctx)
				if err != nil {
					return err
				}
				if monitor != nil {
					defer func() { _ = monitor.Close() }()
					db = monitor
				}
				locks, err := lockview.Locks(ctx, db, flavor)
				if err != nil {
					return err
				}
				return writeLocks(c.Stdout, flavor, locks)
			}
			opts, err := reproOptions(variant, claimPlan, isolation)
			if err != nil {
				return err
			}
			observer, err := c.OpenDriver(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = observer.Close() }()
			var snapshot []lockview.Lock
			opts.WhileWaiting = func(ctx context.Context) error {
				var err error
				snapshot, err = lockview.Locks(ctx, observer.DB(), flavor)
				return err
			}
			res, err := repro.Run(ctx, drv.DB(), observer.DB(), opts)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.Stdout, "while session B (the cancel, %s) waits for session A (the claim, holding PRIMARY 300):\n\n", opts.Cancel.Name)
			if err := writeLocks(c.Stdout, flavor, snapshot); err != nil {
				return err
			}
			fmt.Fprintln(c.Stdout, "\nthen:")
			return res.WriteText(c.Stdout)
		},
	}
	cmd.Flags().StringVar(&variant, "variant", "range-status", "the cancel: range-status, range-run, composite, ids-then-primary or range")
	cmd.Flags().StringVar(&claimPlan, "claim-plan", "default", "the claim: default or primary")
	cmd.Flags().StringVar(&isolation, "isolation", "repeatable-read", "repeatable-read or read-committed")
	cmd.Flags().BoolVar(&live, "live", false, "print the lock table of the --dsn database's sessions now, without a scenario")
	return cmd
}

func writeLocks(w io.Writer, f lockview.Flavor, locks []lockview.Lock) error {
	tw := clienv.Table(w)
	fmt.Fprintln(tw, "TRX\tSESSION\tTABLE\tINDEX\tMODE\tSTATUS\tLOCK DATA")
	for _, l := range locks {
		status := "GRANTED"
		if !l.Granted {
			status = "WAITING"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", l.Trx, l.Session, l.Table, l.Index, l.Mode, status, l.Data)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(locks) == 0 {
		fmt.Fprintln(w, "(no locks)")
	}
	_, err := fmt.Fprintf(w, "note: %s\n", lockview.LocksNote(f))
	return err
}
