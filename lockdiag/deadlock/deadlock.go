// Package deadlock decodes InnoDB deadlock reports as people paste them:
// the LATEST DETECTED DEADLOCK section of SHOW ENGINE INNODB STATUS and
// error logs written with innodb_print_all_deadlocks=ON, from MySQL 5.0 to
// 9.x and MariaDB 10 to 11, with or without logger prefixes, indented,
// quoted, reflowed or cut off.
//
// It decodes the record dumps with the columns' types when it has them
// (from a live server or CREATE TABLE statements) and otherwise infers
// them, saying how sure it is; infers the locks a report does not print
// (MySQL 5.7's transaction (1), MariaDB's CONFLICTING WITH), builds the
// waits-for graph, names the deadlock's pattern with a fix for the user's
// own table, and groups many reports by shape.
package deadlock

import (
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
	// "MariaDB thread id" or CONFLICTING WITH; the rest is MySQL's).
	Format string `json:"format"`
	// Time is the timestamp printed with the report, as printed.
	Time string `json:"time,omitempty"`
	// Line is the 1-based input line the report starts on.
	Line         int            `json:"line"`
	Transactions []*Transaction `json:"transactions"`
	// Victim is the number of the transaction InnoDB rolled back; 0 when
	// the report does not say (cut off, or MariaDB's "(0)").
	Victim int `json:"victim"`
	// TooDeep: InnoDB gave up searching the waits-for graph ("TOO DEEP OR
	// LONG SEARCH") and rolled back the one transaction it prints.
	TooDeep bool `json:"too_deep,omitempty"`
	// Truncated: the report ends before its WE ROLL BACK line.
	Truncated bool `json:"truncated,omitempty"`
	// Warnings say what the report is missing or what was guessed.
	Warnings []string `json:"warnings,omitempty"`
	// Graph is the waits-for graph: who waits for whom, and for what.
	Graph []*Edge `json:"graph,omitempty"`
	// Pattern is the recognised shape; nil when none is recognised.
	Pattern *Pattern `json:"pattern,omitempty"`
	// SchemaSource says where column types came from: "dsn", "schema
	// file" or "" (inferred from the bytes).
	SchemaSource string `json:"schema_source,omitempty"`
	// TablesNotFound are the report's tables the schema source was asked
	// for and does not have (dropped or renamed since the deadlock, or a
	// schema file without them): their keys are inferred from the bytes,
	// as with no schema, never read as a table without a primary key.
	TablesNotFound []string `json:"tables_not_found,omitempty"`

	// lookedIn names the schema source asked, and foundDefs says it had
	// some of the tables, for the text output.
	lookedIn  string
	foundDefs bool
}

// Transaction is one transaction of a report, numbered as InnoDB numbers
// them: (1), (2), ...
type Transaction struct {
	Number int    `json:"number"`
	TrxID  uint64 `json:"trx_id"`
	// TrxIDPrinted is the id as printed when it is not plain decimal
	// (hex on MySQL 5.5, "0 1234" on 5.0/5.1).
	TrxIDPrinted string `json:"trx_id_printed,omitempty"`
	ThreadID     uint64 `json:"thread_id,omitempty"`
	Active       string `json:"active,omitempty"`
	State        string `json:"state,omitempty"`
	LockStructs  int    `json:"lock_structs,omitempty"`
	RowLocks     int    `json:"row_locks,omitempty"`
	UndoEntries  int    `json:"undo_entries,omitempty"`
	Isolation    string `json:"isolation,omitempty"`
	Query        string `json:"query,omitempty"`
	// Holds is what the transaction holds: printed (MySQL 8's HOLDS THE
	// LOCK(S)) or inferred (Lock.Inferred) where the report does not
	// print it.
	Holds []*Lock `json:"holds,omitempty"`
	Waits *Lock   `json:"waits,omitempty"`
	// Conflicts is MariaDB's CONFLICTING WITH list as printed (whole
	// bitmaps), kept for completeness; Holds is the useful view of it.
	Conflicts []*Lock `json:"conflicts,omitempty"`

	idText string // the id as printed, resolved once the report's base is known
}

// Lock is one lock struct: a table lock, or record locks on one index page.
type Lock struct {
	Table     string `json:"table"` // schema.table, unquoted
	Index     string `json:"index,omitempty"`
	Partition string `json:"partition,omitempty"`
	Space     uint64 `json:"space,omitempty"`
	Page      uint64 `json:"page,omitempty"`
	TrxID     uint64 `json:"trx_id"`
	Mode      string `json:"mode"` // X, S, IX, IS, AUTO-INC
	Kind      Kind   `json:"kind"`
	Waiting   bool   `json:"waiting,omitempty"`
	// Inferred marks a held lock the report does not print as held;
	// InferredFrom says what it was read from.
	Inferred     bool      `json:"inferred,omitempty"`
	InferredFrom string    `json:"inferred_from,omitempty"`
	Records      []*Record `json:"records,omitempty"`

	idText string
	// modeKnown: an inferred lock whose mode and kind were printed
	// (MariaDB's CONFLICTING WITH), only its holding is read into it.
	modeKnown bool
}

// Record is one locked index record.
type Record struct {
	HeapNo   uint64 `json:"heap_no"`
	NFields  int    `json:"n_fields,omitempty"`
	InfoBits int    `json:"info_bits,omitempty"`
	// Deleted: info bit 32, the record is delete-marked (deleted by a
	// transaction not yet purged, or the old entry of a changed key).
	Deleted bool `json:"deleted,omitempty"`
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
	// Type is the decoder's reading of the bytes: int, uint, decimal,
	// float, date, datetime, timestamp, time, year, string, bytes, enum,
	// set, null, trx_id, roll_ptr, row_id or supremum.
	Type string `json:"type"`
	// Value is the reading, strings in single quotes.
	Value string `json:"value"`
	// ColumnType is the column's declared type when a schema gave it.
	ColumnType string `json:"column_type,omitempty"`
	// Note says how uncertain an inferred reading is, and the other
	// readings the bytes allow.
	Note string `json:"note,omitempty"`
}

// Options are what Decode may use beyond the report itself.
type Options struct {
	// Schema gives the column types and index columns of the report's
	// tables; nil means infer them from the bytes.
	Schema SchemaSource
}

// Parse reads every deadlock report in r, inferring column types.
func Parse(r io.Reader) ([]*Report, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("deadlock: read input: %w", err)
	}
	return ParseString(string(b))
}

// ParseString is Decode without a schema.
func ParseString(s string) ([]*Report, error) {
	return Decode(s, Options{})
}

// Decode reads every deadlock report in s. It returns the reports it
// could decode; if some report is malformed it also returns an error
// naming its line (errors.As a *ParseError), with the reports that did
// decode. With no report at all the error is ErrNoReport. A schema source
// that fails is reported as a *SchemaError, after decoding without it.
func Decode(s string, opt Options) ([]*Report, error) {
	p := &parser{}
	for _, ln := range normalise(s) {
		p.line(ln)
	}
	p.finish(true)
	if len(p.reports) == 0 && len(p.errs) == 0 {
		return nil, ErrNoReport
	}
	errs := p.errs
	for _, r := range p.reports {
		if err := r.complete(opt.Schema); err != nil {
			errs = append(errs, err)
		}
	}
	return p.reports, joinErrors(errs)
}

// complete turns a parsed report into a decoded one: keys, inferred
// holds, graph and pattern.
func (r *Report) complete(src SchemaSource) error {
	var serr error
	for _, t := range r.Transactions {
		t.Query = strings.TrimSpace(t.Query)
	}
	resolveIDs(r)
	serr = decodeKeys(r, src)
	inferHolds(r)
	r.Graph = buildGraph(r)
	r.Pattern = detectPattern(r, src)
	return serr
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

// PatternName is the recognised pattern's name, or PatternNotRecognised.
func (r *Report) PatternName() string {
	if r.Pattern == nil {
		return PatternNotRecognised
	}
	return r.Pattern.Name
}

func (t *Transaction) allLocks() []*Lock {
	out := append([]*Lock{}, t.Holds...)
	if t.Waits != nil {
		out = append(out, t.Waits)
	}
	return append(out, t.Conflicts...)
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
