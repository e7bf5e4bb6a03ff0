// Command lockstep-bench measures lockstep side by side with River on the
// same machine and the same database servers: throughput, the database's own
// write floor, claim cost against queue depth, and enqueue→start latency.
// BENCHMARKS.md in the repository root holds the results and the commands.
//
// Each subcommand lives in its own file and is added to the root in
// newRootCmd; subcommands share the global flags and the database servers
// through *root.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	r := newRoot(os.Stdout, os.Stderr)
	err := r.cmd.ExecuteContext(ctx)
	// Throwaway servers are stopped and their data removed even when a
	// subcommand failed or was interrupted.
	if cerr := r.close(); cerr != nil {
		fmt.Fprintf(os.Stderr, "lockstep-bench: stopping servers: %v\n", cerr)
	}
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "lockstep-bench: %v\n", err)
		os.Exit(1)
	}
}
