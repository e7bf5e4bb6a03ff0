package deadlock

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// supremumHex is "supremum": the page's upper pseudo-record.
const supremumHex = "73757072656d756d"

// decodeKeys decodes every record of every lock of r, with the tables'
// definitions from src when it has them, else by inference from the bytes
// and the statements' literals.
func decodeKeys(r *Report, src SchemaSource) error {
	var errs []error
	tables := map[string]*Table{}
	if src != nil {
		r.lookedIn = src.SourceName()
	}
	lookup := func(name string) *Table {
		if src == nil {
			return nil
		}
		if t, ok := tables[name]; ok {
			return t
		}
		t, err := lookupDef(src, name)
		switch {
		case err != nil:
			errs = append(errs, &SchemaError{Table: name, Err: err})
		case t == nil:
			// Said in the output: the user gave a source and should know
			// why this table's keys are inferred anyway.
			r.TablesNotFound = append(r.TablesNotFound, name)
		default:
			r.foundDefs = true
		}
		tables[name] = t
		return t
	}
	used := false
	h := literalsOf(r)
	for _, t := range r.Transactions {
		for _, l := range t.allLocks() {
			if l.Kind == TableLock {
				continue
			}
			tab := lookup(l.Table)
			var lay []slot
			keyLen := -1
			if tab != nil {
				var ok bool
				if lay, keyLen, ok = tab.layout(l.Index); ok {
					used = true
				} else {
					lay, keyLen = nil, -1
				}
			}
			for _, rec := range l.Records {
				decodeRecord(l.Index, rec, lay, keyLen, h)
			}
		}
	}
	if used {
		r.SchemaSource = src.SourceName()
	}
	return errors.Join(errs...)
}

func decodeRecord(index string, r *Record, lay []slot, keyLen int, h literals) {
	if r.HeapNo == 1 && len(r.Fields) == 1 && r.Fields[0].Hex == supremumHex {
		r.Supremum = true
		r.Fields[0].Type, r.Fields[0].Value = "supremum", "supremum"
		return
	}
	if lay != nil && !layoutFits(lay, r.Fields) {
		lay = nil
	}
	trxPos := -1
	switch {
	case lay != nil:
		for i, s := range lay {
			if s.sys == "trx_id" {
				trxPos = i
			}
		}
	case isClusteredName(index):
		trxPos = systemColumns(r.Fields)
	}
	for i := range r.Fields {
		f := &r.Fields[i]
		var s *slot
		if lay != nil && i < len(lay) {
			s = &lay[i]
			f.Name = s.name
		}
		switch {
		case f.Null:
			f.Type, f.Value = "null", "NULL"
		case i == trxPos:
			f.Type, f.Value, f.Name = "trx_id", strconv.FormatUint(beUint(f.Hex), 10), "DB_TRX_ID"
		case i == trxPos+1 && trxPos >= 0:
			f.Type, f.Value, f.Name = "roll_ptr", "0x"+f.Hex, "DB_ROLL_PTR"
		case s != nil && s.sys == "row_id", s == nil && i == 0 && strings.EqualFold(index, "GEN_CLUST_INDEX") && f.Len == 6:
			f.Type, f.Value, f.Name = "row_id", strconv.FormatUint(beUint(f.Hex), 10), "DB_ROW_ID"
		case s != nil && s.col != nil:
			decodeTyped(f, s.col, s.prefix, h)
		default:
			inferField(f, h)
		}
	}
}

// layoutFits: a schema that does not match the record (an older table
// version, the wrong table) would decode garbage; fall back to inference.
func layoutFits(lay []slot, fs []Field) bool {
	if len(fs) > len(lay) {
		return false
	}
	for i, f := range fs {
		s := lay[i]
		if f.Null || f.Truncated {
			continue
		}
		switch {
		case s.sys == "trx_id" || s.sys == "row_id":
			if f.Len != 6 {
				return false
			}
		case s.sys == "roll_ptr":
			if f.Len != 7 {
				return false
			}
		case s.col != nil:
			if w := fixedWidth(s.col); w > 0 && f.Len != w {
				return false
			}
		}
	}
	return true
}

func isClusteredName(index string) bool {
	return strings.EqualFold(index, "PRIMARY") || strings.EqualFold(index, "GEN_CLUST_INDEX")
}

// systemColumns finds DB_TRX_ID in a clustered-index record: the columns
// are the key, then the 6-byte transaction id and the 7-byte roll pointer,
// then the rest. Without the schema the key's width is unknown, so take the
// first 6-byte field followed by a 7-byte one.
func systemColumns(fs []Field) int {
	for i := 1; i+1 < len(fs); i++ {
		if fs[i].Len == 6 && fs[i+1].Len == 7 && !fs[i].Null && !fs[i+1].Null && !fs[i].Truncated && len(fs[i].Hex) == 12 {
			return i
		}
	}
	return -1
}

func beUint(h string) uint64 {
	b, err := hex.DecodeString(h)
	if err != nil || len(b) > 8 {
		return 0
	}
	var u uint64
	for _, c := range b {
		u = u<<8 | uint64(c)
	}
	return u
}

// Values returns the record's decoded field values, in order.
func (r *Record) Values() []string {
	out := make([]string, len(r.Fields))
	for i, f := range r.Fields {
		out[i] = f.Value
	}
	return out
}

// KeyFields is the record's key: for a clustered record the fields before
// DB_TRX_ID (the primary key), for a secondary index record every field
// (the index columns, then the primary key's).
func (r *Record) KeyFields() []Field {
	if r.Supremum {
		return r.Fields
	}
	for i, f := range r.Fields {
		if f.Type == "trx_id" {
			return r.Fields[:i]
		}
	}
	return r.Fields
}

// KeyValues is KeyFields' values as plain text: strings unquoted, as a
// person writes them in a WHERE clause or a sidecar.
func (r *Record) KeyValues() []string {
	var out []string
	for _, f := range r.KeyFields() {
		out = append(out, f.Plain())
	}
	return out
}

// Plain is the value without SQL quoting.
func (f Field) Plain() string {
	v := f.Value
	if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
		return strings.ReplaceAll(v[1:len(v)-1], "''", "'")
	}
	return v
}

// Key is the record's key as a tuple.
func (r *Record) Key() string {
	if r.Supremum {
		return "supremum"
	}
	var parts []string
	for _, f := range r.KeyFields() {
		parts = append(parts, f.label())
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// String is the whole record: key, then the other columns, marked when
// delete-marked.
func (r *Record) String() string {
	if r.Supremum {
		return "supremum (the gap after the page's last record)"
	}
	if len(r.Fields) == 0 {
		return "(fields not printed)"
	}
	parts := make([]string, 0, len(r.Fields))
	for _, f := range r.Fields {
		parts = append(parts, f.label())
	}
	s := "(" + strings.Join(parts, ", ") + ")"
	if r.Deleted {
		s += " [delete-marked]"
	}
	return s
}

func (f Field) label() string {
	if f.Name != "" {
		return f.Name + "=" + f.Value
	}
	return f.Value
}

// notes lists the fields' notes, for the text output.
func (r *Record) notes() []string {
	var out []string
	for _, f := range r.Fields {
		if f.Note != "" {
			n := f.Name
			if n == "" {
				n = fmt.Sprintf("field %d", f.Pos)
			}
			out = append(out, n+": "+f.Note)
		}
	}
	return out
}
