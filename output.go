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
	out.mu.Lock()
	out.b = b
	out.mu.Unlock()
	return nil
}

func (o *jobOutput) bytes() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b
}
