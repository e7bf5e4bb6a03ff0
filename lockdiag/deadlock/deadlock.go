// Package deadlock decodes InnoDB deadlock reports: the LATEST DETECTED
// DEADLOCK section of SHOW ENGINE INNODB STATUS, and error logs written
// with innodb_print_all_deadlocks=ON, in both MySQL 8's layout (HOLDS THE
// LOCK(S) / WAITING FOR THIS LOCK TO BE GRANTED per transaction) and
// MariaDB's (WAITING FOR THIS LOCK TO BE GRANTED, then CONFLICTING WITH: the
// other transaction's whole lock bitmap on that page).
//
// It decodes the record dumps (signed integers are stored with the sign bit
// flipped, so 0x800000000000012c is 300), recognises the lock-order pattern
// of two statements taking the same secondary index and PRIMARY in opposite
// order, and groups many reports by table, index pair and statement shape.
package deadlock

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Format names the server family whose layout a report uses.
const (
	FormatMySQL   = "mysql"
	FormatMariaDB = "mariadb"
)

// Kind is what part of an index a record lock covers.
type Kind string

// Lock kinds, named as the lab's other tools name them.
const (
	NextKey         Kind = "next-key"
	RecNotGap       Kind = "rec-not-gap"
	Gap             Kind = "gap"
	InsertIntention Kind = "insert-intention"
	TableLock       Kind = "table"
)

// Report is one detected deadlock.
type Report struct {
	// Format is FormatMySQL or FormatMariaDB (MariaDB reports say
	// "MariaDB thread id" and CONFLICTING WITH; the rest is MySQL's).
	Format string `json:"format"`
	// Time is the timestamp printed with the report, as printed.
	Time string `json:"time,omitempty"`
	// Line is the 1-based input line the report starts on.
	Line         int            `json:"line"`
	Transactions []*Transaction `json:"transactions"`
	// Victim is the number of the transaction InnoDB rolled back.
	Victim  int      `json:"victim"`
	Pattern *Pattern `json:"pattern,omitempty"`
}

// Transaction is one transaction of a report, numbered as InnoDB numbers
// them: (1), (2), ...
type Transaction struct {
	Number      int    `json:"number"`
	TrxID       uint64 `json:"trx_id"`
	ThreadID    uint64 `json:"thread_id,omitempty"`
	Active      string `json:"active,omitempty"`
	State       string `json:"state,omitempty"`
	LockStructs int    `json:"lock_structs,omitempty"`
	RowLocks    int    `json:"row_locks,omitempty"`
	UndoEntries int    `json:"undo_entries,omitempty"`
	Isolation   string `json:"isolation,omitempty"`
	Query       string `json:"query,omitempty"`
	// Holds is what the report shows the transaction holding. On MariaDB
	// it is derived: the records of the other transaction's CONFLICTING
	// WITH lock whose heap numbers match the waited-for lock.
	Holds []*Lock `json:"holds,omitempty"`
	Waits *Lock   `json:"waits,omitempty"`
	// Conflicts is MariaDB's CONFLICTING WITH list as printed (whole
	// bitmaps), kept for completeness; Holds is the useful view of it.
	Conflicts []*Lock `json:"conflicts,omitempty"`
}

// Lock is one lock struct: a table lock, or record locks on one index page.
type Lock struct {
	Table   string `json:"table"` // schema.table, unquoted
	Index   string `json:"index,omitempty"`
	Space   uint64 `json:"space,omitempty"`
	Page    uint64 `json:"page,omitempty"`
	TrxID   uint64 `json:"trx_id"`
	Mode    string `json:"mode"` // X, S, IX, IS, AUTO-INC
	Kind    Kind   `json:"kind"`
	Waiting bool   `json:"waiting,omitempty"`
	// Derived marks a held lock reconstructed from MariaDB's CONFLICTING
	// WITH rather than printed as held.
	Derived bool      `json:"derived,omitempty"`
	Records []*Record `json:"records,omitempty"`
}

// Record is one locked index record.
type Record struct {
	HeapNo   uint64 `json:"heap_no"`
	InfoBits int    `json:"info_bits,omitempty"`
	// Supremum is the page's upper pseudo-record: a lock on it is a lock
	// on the gap after the page's last record.
	Supremum bool    `json:"supremum,omitempty"`
	Fields   []Field `json:"fields,omitempty"`
}

// Field is one field of a record dump, decoded.
type Field struct {
	Pos  int    `json:"pos"`
	Name string `json:"name,omitempty"`
	Len  int    `json:"len"`
	Hex  string `json:"hex,omitempty"`
	Null bool   `json:"null,omitempty"`
	// Truncated: InnoDB printed only the first bytes of a long field.
	Truncated bool `json:"truncated,omitempty"`
	// Type is the decoder's reading of the bytes: int, string, bytes,
	// null, trx_id, roll_ptr or supremum. Without the column's type it is a
	// guess: an unsigned column is read as signed.
	Type  string `json:"type"`
	Value string `json:"value"`
}

// Parse reads every deadlock report in r. It returns the reports it could
// decode; if some report is malformed it also returns an error naming it
// (with the reports that did decode), and if there is no report at all the
// error says so.
func Parse(r io.Reader) ([]*Report, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("deadlock: read input: %w", err)
	}
	return ParseString(string(b))
}

// ErrNoReport is returned when the input holds no deadlock report.
var ErrNoReport = errors.New("deadlock: no deadlock report in the input (expected LATEST DETECTED DEADLOCK, a \"Transactions deadlock detected\" log block, or \"*** (1) TRANSACTION:\")")

// ParseString is Parse on a string.
func ParseString(s string) ([]*Report, error) {
	p := &parser{}
	for _, ln := range normalize(s) {
		p.line(ln)
	}
	p.finish(true)
	if len(p.reports) == 0 && len(p.errs) == 0 {
		return nil, ErrNoReport
	}
	return p.reports, errors.Join(p.errs...)
}

// Transaction returns the transaction numbered n, or nil.
func (r *Report) Transaction(n int) *Transaction {
	for _, t := range r.Transactions {
		if t.Number == n {
			return t
		}
	}
	return nil
}

// firstLine is the statement's first line, shortened for one-line output.
func firstLine(q string, max int) string {
	q, _, _ = strings.Cut(q, "\n")
	q = strings.TrimSpace(q)
	if r := []rune(q); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return q
}
