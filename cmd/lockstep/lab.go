package main

import "github.com/spf13/cobra"

// newLabCmd is the lock-order lab: tools that prove, under load or from the
// declarations, that the queue's statements keep one lock order.
func newLabCmd(c *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Lock-order lab: prove and explore lock orders",
		Long: `The lock-order lab: tools that prove and explore the lock order every
lockstep statement follows.

  catalog    print every statement with its access path and what it locks
  planguard  EXPLAIN every statement and check it takes its declared path
  soak       run worker pools, enqueuers, cancellers and a dead worker at
             once against a scratch database, then check that the server
             counted no deadlock and that no job was lost or finished twice`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		newLabCatalogCmd(c),
		newLabPlanguardCmd(c),
		newLabSoakCmd(c),
	)
	return cmd
}
