package deadlock

import (
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"
)

// supremumHex is "supremum": the page's upper pseudo-record.
const supremumHex = "73757072656d756d"

// decodeLock decodes every field of every record of l.
func decodeLock(l *Lock) {
	for _, r := range l.Records {
		decodeRecord(l.Index, r)
	}
}

func decodeRecord(index string, r *Record) {
	if r.HeapNo == 1 && len(r.Fields) == 1 && r.Fields[0].Hex == supremumHex {
		r.Supremum = true
		r.Fields[0].Type, r.Fields[0].Value = "supremum", "supremum"
		return
	}
	trxPos := -1
	if index == "PRIMARY" || index == "GEN_CLUST_INDEX" {
		trxPos = systemColumns(r.Fields)
	}
	for i := range r.Fields {
		f := &r.Fields[i]
		switch {
		case f.Null:
			f.Type, f.Value = "null", "NULL"
		case i == trxPos:
			f.Type, f.Value = "trx_id", strconv.FormatUint(beUint(f.Hex), 10)
			if f.Name == "" {
				f.Name = "DB_TRX_ID"
			}
		case i == trxPos+1 && trxPos >= 0:
			f.Type, f.Value = "roll_ptr", "0x"+f.Hex
			if f.Name == "" {
				f.Name = "DB_ROLL_PTR"
			}
		default:
			f.Type, f.Value = decodeValue(f.Hex, f.Len, f.Truncated)
		}
	}
}

// systemColumns finds DB_TRX_ID in a clustered-index record: the columns
// are the key, then the 6-byte transaction id and the 7-byte roll pointer,
// then the rest. Without the schema the key's width is unknown, so take the
// first 6-byte field followed by a 7-byte one.
func systemColumns(fs []Field) int {
	if len(fs) < 3 {
		return -1
	}
	for i := 1; i+1 < len(fs); i++ {
		if fs[i].Len == 6 && fs[i+1].Len == 7 && !fs[i].Null && !fs[i+1].Null {
			return i
		}
	}
	return -1
}

// decodeValue reads a field's bytes without knowing the column's type.
// InnoDB stores signed integers big-endian with the sign bit flipped, so
// that byte order is numeric order: 0x800000000000012c is 300 and
// 0x7fffffff is -1. A field of an integer's width that is not printable
// text is taken as one; printable bytes are text; anything else stays hex.
func decodeValue(h string, n int, truncated bool) (typ, val string) {
	b, err := hex.DecodeString(h)
	if err != nil {
		return "bytes", "0x" + h
	}
	if !truncated && len(b) == n && isIntWidth(n) && !isText(b) {
		return "int", strconv.FormatInt(flipSigned(b), 10)
	}
	if isText(b) {
		s := string(b)
		if truncated {
			s += "…"
		}
		return "string", "'" + strings.ReplaceAll(s, "'", "''") + "'"
	}
	v := "0x" + h
	if truncated {
		v += "…"
	}
	return "bytes", v
}

func isIntWidth(n int) bool {
	switch n {
	case 1, 2, 3, 4, 8:
		return true
	}
	return false
}

// flipSigned decodes a big-endian signed integer of len(b) bytes whose sign
// bit InnoDB flipped.
func flipSigned(b []byte) int64 {
	var u uint64
	for _, c := range b {
		u = u<<8 | uint64(c)
	}
	bits := uint(len(b) * 8)
	u ^= 1 << (bits - 1)
	// Sign-extend from the field's width.
	shift := 64 - bits
	return int64(u<<shift) >> shift
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

// isText reports bytes that read as text: valid UTF-8 with no control
// characters. Empty is text (the empty string).
func isText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// Values returns the record's decoded field values, in order.
func (r *Record) Values() []string {
	out := make([]string, len(r.Fields))
	for i, f := range r.Fields {
		out[i] = f.Value
	}
	return out
}

// Key is the record's user-visible part as a tuple: for a clustered
// record the fields before DB_TRX_ID (the primary key), for a secondary
// index record every field (the index columns, then the primary key).
func (r *Record) Key() string {
	if r.Supremum {
		return "supremum"
	}
	var parts []string
	for _, f := range r.Fields {
		if f.Type == "trx_id" {
			break
		}
		parts = append(parts, f.label())
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// String is the whole record: key, then the other columns.
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
	return "(" + strings.Join(parts, ", ") + ")"
}

func (f Field) label() string {
	if f.Name != "" {
		return f.Name + "=" + f.Value
	}
	return f.Value
}

// primaryKeyValue is the value of the row's primary key as it appears in
// a record of index: the first field of a clustered record, the last
// field of a secondary one. It assumes a one-column primary key, which is
// the common case the pattern explanation cares about.
func primaryKeyValue(index string, r *Record) string {
	if r == nil || r.Supremum || len(r.Fields) == 0 {
		return ""
	}
	if index == "PRIMARY" {
		return r.Fields[0].Value
	}
	return r.Fields[len(r.Fields)-1].Value
}
