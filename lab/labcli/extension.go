// Package labcli is the command line of the lock-order lab, `lockstep lab
// …`: the commands that prove, under load or from the declarations, that
// the queue's statements keep one lock order, and that explore the
// claim/cancel deadlock on the attempt table. cmd/lockstep mounts it into
// the one lockstep binary through Extension, so that the queue's own
// command line (internal/cli) imports no lab package; what the lab's
// commands share with the queue's — the global flags, opening the
// database, the output — is internal/cli/clienv.
package labcli

import (
	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
)

// Extension is the lab's part of the lockstep binary: the lab command, and
// the chaos test's ledger kind of job, which `lab chaos` runs in
// `lockstep work --kind ledger` processes it starts.
func Extension() clienv.Extension {
	return clienv.Extension{
		Commands:  []func(*clienv.Env) *cobra.Command{Command},
		WorkKinds: []clienv.WorkKind{ledgerKind()},
	}
}
