package execjob

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockstep-queue/lockstep"
)

// Output is what a successful run records as its job's output when
// Worker.OutputBytes is set: the end of the command's standard output and
// of its standard error, each at most OutputBytes, as valid UTF-8 without
// NUL bytes (invalid bytes become U+FFFD). A stream that was cut starts
// with a line saying how many bytes were dropped before it, as in
// "[lockstep: 1234 earlier bytes dropped]\n". An empty stream is left out,
// and a run that wrote nothing records no output.
type Output struct {
	Stdout string `json:"stdout,omitempty"`
	Stderr string `json:"stderr,omitempty"`
}

// droppedMarker starts a stream's text when its beginning was dropped.
func droppedMarker(n int64) string {
	return fmt.Sprintf("[lockstep: %d earlier bytes dropped]\n", n)
}

// recordOutput records the streams' tails as the job's output. Encoded,
// they must fit in the client's Config.MaxArgsBytes, and JSON writes a
// control character or <, > and & in six bytes: what does not fit is cut
// by halves until it does. Outside a client's job (Work called directly)
// there is nowhere to record it.
func (w *Worker) recordOutput(ctx context.Context, stdout, stderr *tailBuffer) error {
	for keep := w.OutputBytes; keep > 0; keep /= 2 {
		o := Output{Stdout: stdout.text(keep), Stderr: stderr.text(keep)}
		if o == (Output{}) {
			return nil
		}
		err := lockstep.RecordOutput(ctx, o)
		if err == nil || errors.Is(err, lockstep.ErrNoJobContext) {
			return nil
		}
	}
	return nil
}
