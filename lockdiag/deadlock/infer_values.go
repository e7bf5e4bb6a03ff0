package deadlock

import (
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// literals are the numbers and strings the report's statements name;
// they confirm one reading of a field's bytes or choose between two.
type literals struct {
	nums map[string]bool
	strs map[string]bool
}

var (
	reLitStr = regexp.MustCompile(`'((?:[^'\\]|\\.|'')*)'`)
	reLitNum = regexp.MustCompile(`(?:^|[^\w.])(-?\s*\d+(?:\.\d+)?)\b`)
)

func literalsOf(r *Report) literals {
	h := literals{nums: map[string]bool{}, strs: map[string]bool{}}
	for _, t := range r.Transactions {
		q := t.Query
		for _, m := range reLitStr.FindAllStringSubmatch(q, -1) {
			h.strs[strings.ReplaceAll(m[1], "''", "'")] = true
		}
		q = reLitStr.ReplaceAllString(q, "''")
		for _, m := range reLitNum.FindAllStringSubmatch(q, -1) {
			h.nums[strings.ReplaceAll(m[1], " ", "")] = true
		}
	}
	return h
}

// inferField reads a field without its column's type, and says in
// Note what else the bytes could be.
func inferField(f *Field, h literals) {
	b, err := hex.DecodeString(f.Hex)
	if err != nil {
		f.Type, f.Value = "bytes", "0x"+f.Hex
		return
	}
	if f.Truncated {
		if isText(b) || isTextPrefix(b) {
			f.Type, f.Value = "string", quote(strings.ToValidUTF8(string(b), "")+"…")
		} else {
			f.Type, f.Value = "bytes", "0x"+f.Hex+"…"
		}
		return
	}
	n := len(b)
	if n == 1 {
		inferByte(f, b[0], h)
		return
	}
	if !isText(b) {
		switch {
		case n == 3 && (b[0] == 0x8f || b[0] == 0x8e) && validDate(b):
			d := dateString(b)
			i := strconv.FormatInt(flipSigned(b), 10)
			if h.strs[d] || !h.nums[i] && strings.HasPrefix(d, "20") {
				f.Type, f.Value, f.Note = "date", d, "read as a DATE (no schema); as a MEDIUMINT it would be "+i
			} else {
				f.Type, f.Value, f.Note = "int", i, "read as a MEDIUMINT (no schema); as a DATE it would be "+d
			}
			return
		case (n >= 5 && n <= 8) && (b[0] == 0x99 || b[0] == 0x9a) && validDatetime2(b):
			fsp := map[int]int{5: 0, 6: 2, 7: 4, 8: 6}[n]
			d := datetime2String(b, fsp)
			if n < 8 || h.strs[d] || datetimeInLiterals(d, h) {
				f.Type, f.Value, f.Note = "datetime", d, fmt.Sprintf("read as a DATETIME(%d) (no schema)", fsp)
				return
			}
			f.Note = "as a DATETIME(6) it would be " + d
		case n == 6:
			f.Type, f.Value = "uint", strconv.FormatUint(beUintBytes(b), 10)
			f.Note = "a 6-byte field: a DB_ROW_ID or transaction id (no schema)"
			return
		}
		if n == 2 || n == 3 || n == 4 || n == 8 {
			inferInt(f, b, h)
			return
		}
	}
	if isText(b) {
		s := string(b)
		if t := strings.TrimRight(s, " "); t != s && t != "" {
			s = t
			f.Note = "trailing spaces trimmed (CHAR padding)"
		}
		f.Type, f.Value = "string", quote(s)
		return
	}
	f.Type, f.Value = "bytes", "0x"+f.Hex
}

// inferInt reads an integer of 2, 3, 4 or 8 bytes. InnoDB flips the sign
// bit of signed columns and stores unsigned ones as they are: with the
// top bit set the signed reading is a small positive number, with it clear
// the unsigned reading is (most ids are unsigned; a negative id is rare).
// A literal in a statement decides when it names one of the two.
func inferInt(f *Field, b []byte, h literals) {
	signed := strconv.FormatInt(flipSigned(b), 10)
	unsigned := strconv.FormatUint(beUintBytes(b), 10)
	width := map[int]string{2: "SMALLINT", 3: "MEDIUMINT", 4: "INT", 8: "BIGINT"}[len(b)]
	extra := f.Note
	switch {
	case h.nums[signed] && !h.nums[unsigned]:
		f.Type, f.Value, f.Note = "int", signed, "read as a signed "+width+": the statement names "+signed
	case h.nums[unsigned] && !h.nums[signed]:
		f.Type, f.Value, f.Note = "uint", unsigned, "read as "+width+" UNSIGNED: the statement names "+unsigned
	case b[0]&0x80 != 0:
		f.Type, f.Value = "int", signed
		f.Note = ""
	default:
		f.Type, f.Value = "uint", unsigned
		f.Note = fmt.Sprintf("top bit clear: read as %s UNSIGNED (a signed column would hold %s)", width, signed)
		if len(b) == 4 && beUintBytes(b) >= 946684800 && beUintBytes(b) < 2208988800 {
			f.Note += "; as a TIMESTAMP it would be " + time.Unix(int64(beUintBytes(b)), 0).UTC().Format("2006-01-02 15:04:05") + " UTC"
		}
	}
	if extra != "" {
		f.Note = strings.TrimPrefix(f.Note+"; "+extra, "; ")
	}
}

// inferByte: a 1-byte field is a TINYINT far more often than a 1-character
// string, so it is a number with its ASCII beside it, unless a statement
// names the character and not the number.
func inferByte(f *Field, c byte, h literals) {
	signed := strconv.FormatInt(flipSigned([]byte{c}), 10)
	unsigned := strconv.Itoa(int(c))
	ch := ""
	if c >= 0x20 && c < 0x7f {
		ch = string(rune(c))
	}
	switch {
	case ch != "" && h.strs[ch] && !h.nums[signed] && !h.nums[unsigned]:
		f.Type, f.Value, f.Note = "string", quote(ch), "read as a 1-character string: the statement names '"+ch+"'; as a TINYINT it would be "+unsigned
		return
	case h.nums[signed] && !h.nums[unsigned]:
		f.Type, f.Value, f.Note = "int", signed, "read as a signed TINYINT: the statement names "+signed
	case h.nums[unsigned] && !h.nums[signed]:
		f.Type, f.Value, f.Note = "uint", unsigned, "read as TINYINT UNSIGNED: the statement names "+unsigned
	case c&0x80 != 0:
		f.Type, f.Value = "int", signed
	default:
		f.Type, f.Value = "uint", unsigned
		f.Note = "top bit clear: read as TINYINT UNSIGNED (a signed column would hold " + signed + ")"
	}
	if ch != "" {
		f.Note = strings.TrimPrefix(f.Note+"; ASCII '"+ch+"'", "; ")
	}
}

func validDate(b []byte) bool {
	v := beUintBytes(b) ^ 0x800000
	m, d := v>>5&15, v&31
	return m >= 1 && m <= 12 && d >= 1 && d <= 31
}

func validDatetime2(b []byte) bool {
	v := beUintBytes(b[:5]) - 0x8000000000
	ymd, hms := v>>17, v&(1<<17-1)
	ym := ymd >> 5
	return ym%13 >= 1 && ymd&31 >= 1 && hms>>12 < 24 && hms>>6&63 < 60 && hms&63 < 60
}

func datetimeInLiterals(d string, h literals) bool {
	for s := range h.strs {
		if len(s) >= 10 && strings.HasPrefix(d, s) {
			return true
		}
	}
	return false
}

// isTextPrefix: a cut field may end in the middle of a UTF-8 sequence.
func isTextPrefix(b []byte) bool {
	for i := 0; i < 4 && i < len(b); i++ {
		if isText(b[:len(b)-i]) {
			return len(b)-i > 0
		}
	}
	return false
}
