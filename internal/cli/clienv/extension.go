package clienv

import (
	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
)

// Extension is what a package outside the queue CLI adds to the lockstep
// binary: commands under the root, and kinds of job `lockstep work --kind`
// runs. The lock-order lab is added this way (lab/labcli.Extension), by
// cmd/lockstep, so that the queue CLI imports no lab package and the
// binary still has every command.
type Extension struct {
	// Commands build the extension's commands; each is given the Env the
	// root fills in from the global flags before any command runs.
	Commands []func(*Env) *cobra.Command
	// WorkKinds are the kinds of job the extension's workers run.
	WorkKinds []WorkKind
}

// WorkKind is a kind of job `lockstep work --kind NAME` runs that the queue
// CLI does not define itself.
type WorkKind struct {
	// Name is the --kind value.
	Name string
	// Help is the paragraph `lockstep work --help` gives the kind.
	Help string
	// Register adds the kind's workers to ws. It is called once the
	// database is open, because a kind may write there (the chaos test's
	// ledger does).
	Register func(d driver.Driver, ws *lockstep.Workers) error
}
