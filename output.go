package lockstep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// jobOutput holds what a running job recorded with RecordOutput.
type jobOutput struct {
	mu    sync.Mutex
	limit int
	b     []byte
	// c and jobID serve DependencyOutputs.
	c     *Client
	jobID int64
}

type outputKey struct{}

// ErrNoJobContext is returned by RecordOutput called with a context that
// is not a running job's.
var ErrNoJobContext = errors.New("not a running job's context")

// RecordOutput records v, encoded as JSON, as the output of the job whose
// context ctx is (or derives from). It is written with the job's DONE and
// shown by the CLI and the dashboard; a later call replaces an earlier
// one, and nothing is written if the job fails. The encoding must fit in
// Config.MaxArgsBytes.
func RecordOutput(ctx context.Context, v any) error {
	out, ok := ctx.Value(outputKey{}).(*jobOutput)
	if !ok {
		return fmt.Errorf("record output: %w", ErrNoJobContext)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("record output: %w", err)
	}
	if len(b) > out.limit {
		return fmt.Errorf("record output: %d bytes; the limit is %d", len(b), out.limit)
	}
	if hasNUL(b) {
		// Refused here, where the worker can react, rather than by the
		// finish, which would leave the job to be reaped and run again.
		return fmt.Errorf("record output: %w", errNUL)
	}
	out.mu.Lock()
	out.b = b
	out.mu.Unlock()
	return nil
}

// errNUL: PostgreSQL's jsonb cannot store U+0000, so no database gets it.
var errNUL = errors.New(`contains the character U+0000 ("\u0000"), which PostgreSQL's jsonb cannot store`)

// hasNUL reports whether encoded JSON holds an escaped U+0000 (an odd run
// of backslashes before "u0000"; an even run is an escaped backslash).
func hasNUL(b []byte) bool {
	for i := 0; i+6 <= len(b); i++ {
		if string(b[i:i+6]) != `\u0000` {
			continue
		}
		n := 0
		for j := i; j >= 0 && b[j] == '\\'; j-- {
			n++
		}
		if n%2 == 1 {
			return true
		}
	}
	return false
}

func (o *jobOutput) bytes() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b
}
