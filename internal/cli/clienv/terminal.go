package clienv

import (
	"io"

	"golang.org/x/term"
)

// IsTerminal reports whether w is a terminal, where output redrawn in
// place (a progress bar) is read as it is drawn. A file, a pipe or a
// device that is not a terminal (/dev/null) keeps every frame: in a log,
// a redrawn bar is thousands of lines of carriage returns.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}
