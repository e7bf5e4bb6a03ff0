package driver

import "context"

// StatementTrace observes the catalogue statements an executor issues on
// behalf of one context, the way net/http/httptrace observes a request. It
// is how a test pauses an operation between two of its statements — holding
// the locks taken so far — to interleave another one deterministically, and
// how a caller counts or times statements by name.
type StatementTrace struct {
	// Before is called before each statement runs, with the statement's
	// catalogue name, and with "commit" before the executor commits a
	// transaction it opened itself. A non-nil error aborts the operation
	// (its transaction is rolled back) and is returned wrapped.
	Before func(ctx context.Context, name string) error
}

// TraceCommit is the name Before receives before an executor's own commit.
const TraceCommit = "commit"

type traceKey struct{}

// WithStatementTrace returns a context whose executor calls report to tr.
func WithStatementTrace(ctx context.Context, tr *StatementTrace) context.Context {
	return context.WithValue(ctx, traceKey{}, tr)
}

// ContextStatementTrace returns the trace attached to ctx, or nil.
func ContextStatementTrace(ctx context.Context) *StatementTrace {
	tr, _ := ctx.Value(traceKey{}).(*StatementTrace)
	return tr
}

// TraceBefore calls the context's trace, if any, before statement name.
func TraceBefore(ctx context.Context, name string) error {
	if tr := ContextStatementTrace(ctx); tr != nil && tr.Before != nil {
		return tr.Before(ctx, name)
	}
	return nil
}
