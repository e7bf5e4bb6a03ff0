package labcli

import (
	"database/sql"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
	"github.com/lockstep-queue/lockstep/lab/attempt"
	"github.com/lockstep-queue/lockstep/lab/explain"
	"github.com/lockstep-queue/lockstep/lab/repro"
)

func parseIsolation(s string) (sql.IsolationLevel, error) {
	switch s {
	case "repeatable-read", "rr":
		return sql.LevelRepeatableRead, nil
	case "read-committed", "rc":
		return sql.LevelReadCommitted, nil
	}
	return 0, fmt.Errorf("unknown isolation %q (want read-committed or repeatable-read)", s)
}

// reproOptions resolves the scenario flags shared by repro and locks.
func reproOptions(variant, claimPlan, isolation string) (repro.Options, error) {
	cancel, err := attempt.LookupCancel(variant)
	if err != nil {
		return repro.Options{}, err
	}
	claim, err := attempt.LookupClaim(claimPlan)
	if err != nil {
		return repro.Options{}, err
	}
	level, err := parseIsolation(isolation)
	if err != nil {
		return repro.Options{}, err
	}
	return repro.Options{Cancel: cancel, Claim: claim, Isolation: level}, nil
}

func newReproCmd(c *clienv.Env) *cobra.Command {
	var variant, claimPlan, isolation string
	var keep bool
	cmd := &cobra.Command{
		Use:   "repro",
		Short: "Reproduce the claim/cancel deadlock, step by step, on its own table",
		Long: `Reproduce the claim/cancel deadlock deterministically. The lab creates the
attempt table (1,000 rows, 10 runs, two PENDING per run) in the database
--dsn names, then plays two sessions:

  A  holds PRIMARY 300 with SELECT … FOR UPDATE (the claim's first lock,
     taken early to widen the gap between its two locks), then claims 300;
  B  cancels run 3 with the chosen --variant.

B's lock wait is confirmed from the server's lock table before A goes on,
and the timeline is printed session by session. With an unsafe cancel it
ends in ERROR 1213; with ids-then-primary it does not.

Variants: range-status, range-run, composite, ids-then-primary, range.
Needs MySQL or MariaDB, and the right to read the lock table (MariaDB:
the PROCESS privilege; MySQL: SELECT on performance_schema).
The table is dropped afterwards (--keep leaves it).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			opts, err := reproOptions(variant, claimPlan, isolation)
			if err != nil {
				return err
			}
			opts.Keep = keep
			sessions, err := c.OpenDriver(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = sessions.Close() }()
			observer, err := c.OpenDriver(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = observer.Close() }()
			res, err := repro.Run(ctx, sessions.DB(), observer.DB(), opts)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.Stdout, "variant %s (%s), claim plan %s, %s\n", opts.Cancel.Name, opts.Cancel.About, opts.Claim.Name, isolation)
			return res.WriteText(c.Stdout)
		},
	}
	cmd.Flags().StringVar(&variant, "variant", "range", "the cancel: range-status, range-run, composite, ids-then-primary or range (no hint)")
	cmd.Flags().StringVar(&claimPlan, "claim-plan", "default", "the claim: default (as written) or primary (FORCE INDEX (PRIMARY))")
	cmd.Flags().StringVar(&isolation, "isolation", "repeatable-read", "repeatable-read (InnoDB's default) or read-committed")
	cmd.Flags().BoolVar(&keep, "keep", false, "leave the attempt table in place")
	return cmd
}

func newExplainCmd(c *clienv.Env) *cobra.Command {
	var statement string
	var extra []string
	var keep bool
	cmd := &cobra.Command{
		Use:   "explain",
		Short: "EXPLAIN a statement on the attempt table under several data distributions",
		Long: `EXPLAIN a statement (default: the claim/cancel deadlock's cancel of run 3)
on the attempt table under its distributions — its own data, a fresh run of
100 PENDING, 5 PENDING / 95 DONE, 2 PENDING / 998 DONE — and any added with
--distribution NAME:RUNSIZE:PENDING (run 3's size and PENDING count among 99
other runs of 100 DONE attempts). Statistics are refreshed after each load.
The table is created in the database --dsn names and dropped afterwards.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			dists := attempt.Distributions()
			for _, e := range extra {
				d, err := attempt.ParseDistribution(e)
				if err != nil {
					return err
				}
				dists = append(dists, d)
			}
			stmt := explain.DefaultStatement
			if statement != "" {
				stmt = attempt.Stmt{SQL: statement}
			}
			drv, err := c.OpenDriver(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = drv.Close() }()
			if drv.Dialect() != "mysql" {
				return fmt.Errorf("lab explain: the attempt table is InnoDB's; point --dsn at MySQL or MariaDB")
			}
			rows, err := explain.Run(ctx, drv.DB(), stmt, dists, keep)
			if err != nil {
				return err
			}
			return explain.WriteText(c.Stdout, stmt, rows)
		},
	}
	cmd.Flags().StringVar(&statement, "statement", "", "the statement to explain, on table attempt (default: the claim/cancel deadlock's cancel of run 3)")
	cmd.Flags().StringSliceVar(&extra, "distribution", nil, "add a distribution NAME:RUNSIZE:PENDING (repeatable)")
	cmd.Flags().BoolVar(&keep, "keep", false, "leave the attempt table in place")
	return cmd
}
