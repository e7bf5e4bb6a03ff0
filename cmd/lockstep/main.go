// Command lockstep is the command-line tool of the lockstep job queue. The
// queue's commands are in internal/cli and the lock-order lab's in
// lab/labcli; main mounts the lab on the queue's root, so that the one
// binary has both while the queue's package imports no lab package, and
// wires the process to them: its arguments, its streams, the signals that
// stop it, and its exit code.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/lockstep-queue/lockstep/internal/cli"
	"github.com/lockstep-queue/lockstep/lab/labcli"
)

func main() {
	// The first SIGINT or SIGTERM cancels the context (work and serve stop
	// gracefully); they watch for a second one themselves.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr, labcli.Extension())
	stop()
	os.Exit(code)
}
