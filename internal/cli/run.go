// Package cli is the lockstep command line: the root command and its
// global flags, and the queue's commands — schema migrations, enqueueing
// and inspecting jobs and runs, worker processes (the exec kind runs a
// command per job), the dashboard with its lock monitor and /metrics, a
// self-contained demo on embedded SQLite, and InnoDB deadlock decoding.
// cmd/lockstep is a few lines over Run.
//
// Each command group lives in its own file and is added to the root in
// newRootCmd; commands share the global flags through *app. What is
// shared with commands built elsewhere is in clienv.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
)

// Run executes the command line args, with the commands and kinds of job
// of exts added (cmd/lockstep adds the lab's), and returns the exit code.
// Errors are reported as one line on stderr: "lockstep: <error>".
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, exts ...clienv.Extension) int {
	root := newRootCmd(stdout, stderr, exts)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "lockstep: %s\n", oneLine(err))
		var de *detailedError
		if errors.As(err, &de) {
			for _, line := range de.details {
				fmt.Fprintf(stderr, "  %s\n", line)
			}
		}
		return 1
	}
	return 0
}

// detailedError is an error whose details are read more easily on lines
// of their own than joined into one (a failed migration: its statement,
// and what the database said): Run prints its headline as every error,
// then each detail indented below it.
type detailedError struct {
	headline string
	details  []string
}

func (e *detailedError) Error() string { return e.headline }

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
