package deadlock

import (
	"errors"
	"fmt"
)

// ErrNoReport is returned when the input holds no deadlock report.
var ErrNoReport = errors.New("deadlock: no deadlock report in the input (expected LATEST DETECTED DEADLOCK, a \"Transactions deadlock detected\" log block, or \"*** (1) TRANSACTION:\")")

// ParseError is a report the reader could not decode: the line, what it
// holds and what was expected there.
type ParseError struct {
	// Report is the line the report starts on; Line the offending one.
	Report, Line int
	Got          string
	Expected     string
}

func (e *ParseError) Error() string {
	got := e.Got
	if r := []rune(got); len(r) > 80 {
		got = string(r[:79]) + "…"
	}
	if got == "" {
		return fmt.Sprintf("deadlock: report at line %d: line %d: expected %s", e.Report, e.Line, e.Expected)
	}
	return fmt.Sprintf("deadlock: report at line %d: line %d: expected %s, got %q", e.Report, e.Line, e.Expected, got)
}

// SchemaError is a schema source that failed for a table; the report was
// decoded without it.
type SchemaError struct {
	Table string
	Err   error
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("deadlock: schema of %s: %v (its keys were decoded without it)", e.Table, e.Err)
}

func (e *SchemaError) Unwrap() error { return e.Err }

func joinErrors(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(errs...)
}
