package deadlock

import (
	"strings"
)

// SchemaSource gives the definition of a table named "schema.table" as the
// report prints it. A nil table with a nil error means it does not know
// the table. It is the seam for a live server (information_schema) and
// for CREATE TABLE statements (ParseSchema).
type SchemaSource interface {
	LookupTable(name string) (*Table, error)
	// SourceName says where the definitions come from, for the output:
	// "dsn", "schema file".
	SourceName() string
}

// Table is what the decoder needs of a table's definition.
type Table struct {
	Name        string        `json:"name"` // as given: "t" or "db.t"
	Columns     []*Column     `json:"columns"`
	Indexes     []*Index      `json:"indexes"`
	ForeignKeys []*ForeignKey `json:"foreign_keys,omitempty"`
}

// Column is one column's type.
type Column struct {
	Name string `json:"name"`
	// Type is the base type, lower case: int, bigint, varchar, datetime…
	Type     string `json:"type"`
	Unsigned bool   `json:"unsigned,omitempty"`
	// Length is CHAR/VARCHAR/BINARY length or DECIMAL precision; Scale
	// is DECIMAL's scale; FSP is DATETIME/TIMESTAMP/TIME's fractional
	// digits.
	Length int `json:"length,omitempty"`
	Scale  int `json:"scale,omitempty"`
	FSP    int `json:"fsp,omitempty"`
	// Binary: a binary string (BINARY, VARBINARY, BLOB, CHARACTER SET
	// binary), shown as hex.
	Binary bool `json:"binary,omitempty"`
	// Values are ENUM/SET members.
	Values []string `json:"values,omitempty"`
	// Virtual columns are not stored in the clustered index.
	Virtual bool `json:"virtual,omitempty"`
	NotNull bool `json:"not_null,omitempty"`
}

// Index is one index and its columns, in order.
type Index struct {
	Name    string   `json:"name"`
	Primary bool     `json:"primary,omitempty"`
	Unique  bool     `json:"unique,omitempty"`
	Columns []string `json:"columns"`
	// Prefix[i] is the prefix length of Columns[i] (`col`(10)), 0 for
	// the whole column.
	Prefix []int `json:"prefix,omitempty"`
}

// ForeignKey is a FOREIGN KEY constraint.
type ForeignKey struct {
	Name       string   `json:"name,omitempty"`
	Columns    []string `json:"columns"`
	RefTable   string   `json:"ref_table"`
	RefColumns []string `json:"ref_columns"`
}

// Column returns the column named n (case-insensitive), or nil.
func (t *Table) Column(n string) *Column {
	for _, c := range t.Columns {
		if strings.EqualFold(c.Name, n) {
			return c
		}
	}
	return nil
}

// Index returns the index named n (case-insensitive; PRIMARY for the
// primary key), or nil.
func (t *Table) Index(n string) *Index {
	for _, ix := range t.Indexes {
		if strings.EqualFold(ix.Name, n) || (ix.Primary && strings.EqualFold(n, "PRIMARY")) {
			return ix
		}
	}
	return nil
}

// Primary is the primary key, or nil.
func (t *Table) Primary() *Index {
	for _, ix := range t.Indexes {
		if ix.Primary {
			return ix
		}
	}
	return nil
}

// clustered is the index InnoDB clusters the table by: the primary key,
// else the first UNIQUE index whose columns are all NOT NULL, else none
// (a hidden GEN_CLUST_INDEX on DB_ROW_ID).
func (t *Table) clustered() *Index {
	if pk := t.Primary(); pk != nil {
		return pk
	}
	for _, ix := range t.Indexes {
		if !ix.Unique {
			continue
		}
		ok := true
		for _, c := range ix.Columns {
			if col := t.Column(c); col == nil || !col.NotNull {
				ok = false
			}
		}
		if ok {
			return ix
		}
	}
	return nil
}

// slot is one field of an index record as InnoDB lays it out.
type slot struct {
	name   string
	col    *Column // nil for DB_TRX_ID, DB_ROLL_PTR, DB_ROW_ID
	sys    string
	prefix int
}

// layout is the fields of a record of index: for the clustered index the
// key columns, DB_TRX_ID, DB_ROLL_PTR, then every other stored column; for
// a secondary index its columns, then the clustered key's columns it does
// not already hold. ok is false when the table has no such index.
func (t *Table) layout(index string) (out []slot, keyLen int, ok bool) {
	cl := t.clustered()
	var clCols []slot
	if cl == nil {
		clCols = []slot{{name: "DB_ROW_ID", sys: "row_id"}}
	} else {
		for i, c := range cl.Columns {
			clCols = append(clCols, slot{name: c, col: t.Column(c), prefix: prefixAt(cl, i)})
		}
	}
	isCl := (cl != nil && strings.EqualFold(cl.Name, index)) || strings.EqualFold(index, "PRIMARY") && cl != nil && cl.Primary ||
		(cl == nil && strings.EqualFold(index, "GEN_CLUST_INDEX"))
	if isCl {
		out = append(out, clCols...)
		keyLen = len(out)
		out = append(out, slot{name: "DB_TRX_ID", sys: "trx_id"}, slot{name: "DB_ROLL_PTR", sys: "roll_ptr"})
		for _, c := range t.Columns {
			if c.Virtual || inSlots(clCols, c.Name) {
				continue
			}
			out = append(out, slot{name: c.Name, col: c})
		}
		return out, keyLen, true
	}
	ix := t.Index(index)
	if ix == nil {
		return nil, 0, false
	}
	for i, c := range ix.Columns {
		out = append(out, slot{name: c, col: t.Column(c), prefix: prefixAt(ix, i)})
	}
	for _, s := range clCols {
		// A column the index holds whole is not repeated.
		if j := slotIndex(out, s.name); j < 0 || out[j].prefix != 0 {
			out = append(out, s)
		}
	}
	return out, len(out), true
}

func prefixAt(ix *Index, i int) int {
	if i < len(ix.Prefix) {
		return ix.Prefix[i]
	}
	return 0
}

func inSlots(ss []slot, name string) bool { return slotIndex(ss, name) >= 0 }

func slotIndex(ss []slot, name string) int {
	for i, s := range ss {
		if strings.EqualFold(s.name, name) {
			return i
		}
	}
	return -1
}

// lookupDef asks src for a table's definition. One with no columns says
// nothing about the table (no record decodes by it), so it counts as none:
// a table the source does not have must be decoded as with no schema, not
// as a table without a primary key clustered by DB_ROW_ID.
func lookupDef(src SchemaSource, name string) (*Table, error) {
	t, err := src.LookupTable(name)
	if err != nil {
		return nil, err
	}
	if t != nil && len(t.Columns) == 0 {
		return nil, nil
	}
	return t, nil
}

// ReferenceSource is a SchemaSource that can also list the tables whose
// foreign keys reference a table: a parent's S lock then has a known cause.
type ReferenceSource interface {
	ReferencedBy(table string) ([]string, error)
}

// ReferencedBy implements ReferenceSource.
func (s *Schema) ReferencedBy(table string) ([]string, error) {
	var out []string
	for _, t := range s.Tables {
		for _, fk := range t.ForeignKeys {
			if bareTable(fk.RefTable) == bareTable(table) {
				out = append(out, t.Name)
				break
			}
		}
	}
	return out, nil
}

// ReferencedBy implements ReferenceSource when f.Refs is set.
func (f SchemaFunc) ReferencedBy(table string) ([]string, error) {
	if f.Refs == nil {
		return nil, nil
	}
	return f.Refs(table)
}

// Schema is a set of table definitions read from CREATE TABLE statements.
type Schema struct {
	Tables []*Table
	// Source names where they came from, for the output.
	Source string
}

// SourceName implements SchemaSource.
func (s *Schema) SourceName() string {
	if s.Source == "" {
		return "schema file"
	}
	return s.Source
}

// LookupTable implements SchemaSource: "db.t" matches a table declared as
// `db`.`t`, or as `t` alone (a dump of one database rarely qualifies its
// names).
func (s *Schema) LookupTable(name string) (*Table, error) {
	_, bare, ok := strings.Cut(name, ".")
	if !ok {
		bare = name
	}
	var byBare *Table
	for _, t := range s.Tables {
		if strings.EqualFold(t.Name, name) {
			return t, nil
		}
		tn := t.Name
		if _, b, ok := strings.Cut(tn, "."); ok {
			tn = b
		}
		if byBare == nil && strings.EqualFold(tn, bare) {
			byBare = t
		}
	}
	return byBare, nil
}

// SchemaFunc adapts a function to SchemaSource.
type SchemaFunc struct {
	Name string
	Func func(table string) (*Table, error)
	// Refs lists the tables referencing a table (optional).
	Refs func(table string) ([]string, error)
}

// LookupTable implements SchemaSource.
func (f SchemaFunc) LookupTable(name string) (*Table, error) { return f.Func(name) }

// SourceName implements SchemaSource.
func (f SchemaFunc) SourceName() string { return f.Name }
