package labcli

import (
	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
)

// Command is the lock-order lab, `lockstep lab`, on the environment the
// root command fills in from the global flags.
func Command(c *clienv.Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Lock-order lab: prove and explore lock orders",
		Long: `The lock-order lab: tools that prove and explore the lock order every
lockstep statement follows.

  audit      flag statements of yours whose lock paths can cross
  chaos      kill worker processes with SIGKILL while they work, then check
             that no job was lost, finished twice or run again needlessly
  catalog    print every statement with its access path and what it locks
  explain    EXPLAIN a statement on the attempt table under its distributions
  locks      print the lock table while the attempt table's cancel waits, or now
  planguard  EXPLAIN every statement and check it takes its declared path
  race       race the attempt table's claim against its cancel for N rounds, count deadlocks
  repro      reproduce the claim/cancel deadlock step by step, on its own table
  soak       run worker pools, enqueuers, cancellers and a dead worker at
             once against a scratch database, then check that the server
             counted no deadlock and that no job was lost or finished twice`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	// The lab's commands work on tables of their own (the attempt table)
	// or check the schema themselves (planguard): none needs lockstep's
	// tables before it starts.
	clienv.SetDatabaseUse(cmd, clienv.DatabaseAny)
	cmd.AddCommand(
		newAuditCmd(c),
		newCatalogCmd(c),
		newChaosCmd(c),
		newExplainCmd(c),
		newLocksCmd(c),
		newPlanguardCmd(c),
		newRaceCmd(c),
		newReproCmd(c),
		newSoakCmd(c),
	)
	return cmd
}
