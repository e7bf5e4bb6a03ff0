// Command lockstep is the command-line tool of the lockstep job queue:
// schema migrations, enqueueing and inspecting jobs and runs, worker
// processes (the exec kind runs a command per job), the dashboard with its
// lock monitor and /metrics, a self-contained demo on embedded SQLite, and
// the lock-order lab.
//
// Each command lives in its own file and is added to the root in
// newRootCmd; commands share the global flags through *cli.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the exit code. Errors are
// reported as one line on stderr: "lockstep: <error>".
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "lockstep: %s\n", oneLine(err))
		return 1
	}
	return 0
}

// oneLine renders err on one line without a repeated "lockstep: " prefix
// (the library's own errors start with it).
func oneLine(err error) string {
	msg := strings.TrimSpace(err.Error())
	for strings.HasPrefix(msg, "lockstep: ") {
		msg = strings.TrimPrefix(msg, "lockstep: ")
	}
	var b strings.Builder
	for _, line := range strings.FieldsFunc(msg, func(r rune) bool { return r == '\n' || r == '\r' }) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if b.Len() > 0 {
			if strings.HasSuffix(b.String(), ":") {
				b.WriteString(" ")
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(line)
	}
	return b.String()
}
