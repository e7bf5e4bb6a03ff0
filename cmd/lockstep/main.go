// Command lockstep is the command-line tool of the lockstep job queue. The
// commands are in internal/cli; main only wires the process to them: its
// arguments, its streams, the signals that stop it, and its exit code.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/lockstep-queue/lockstep/internal/cli"
)

func main() {
	// The first SIGINT or SIGTERM cancels the context (work and serve stop
	// gracefully); they watch for a second one themselves.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
