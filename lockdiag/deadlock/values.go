package deadlock

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// fixedWidth is the stored width of a column of fixed size, 0 when it
// varies (strings, and CHAR in a multi-byte character set).
func fixedWidth(c *Column) int {
	switch c.Type {
	case "tinyint", "year":
		return 1
	case "smallint":
		return 2
	case "mediumint", "date":
		return 3
	case "int":
		return 4
	case "bigint":
		return 8
	case "float":
		return 4
	case "double", "real":
		return 8
	case "datetime":
		return 5 + fracBytes(c.FSP)
	case "timestamp":
		return 4 + fracBytes(c.FSP)
	case "time":
		return 3 + fracBytes(c.FSP)
	case "decimal":
		return decimalBytes(c.Length, c.Scale)
	}
	return 0
}

func fracBytes(fsp int) int { return (fsp + 1) / 2 }

var digBytes = [10]int{0, 1, 1, 2, 2, 3, 3, 4, 4, 4}

func decimalBytes(m, d int) int {
	if m < d || m > 65 || d < 0 {
		return 0
	}
	i := m - d
	return i/9*4 + digBytes[i%9] + d/9*4 + digBytes[d%9]
}

// decodeTyped reads a field as its column's type says.
func decodeTyped(f *Field, c *Column, prefix int, h literals) {
	f.ColumnType = columnTypeString(c)
	b, err := hex.DecodeString(f.Hex)
	if err != nil || f.Truncated && !isStringType(c) {
		inferField(f, h)
		return
	}
	n := len(b)
	switch c.Type {
	case "tinyint", "smallint", "mediumint", "int", "bigint":
		if c.Unsigned {
			f.Type, f.Value = "uint", strconv.FormatUint(beUintBytes(b), 10)
		} else {
			f.Type, f.Value = "int", strconv.FormatInt(flipSigned(b), 10)
		}
	case "year":
		v := int(b[0])
		if v != 0 {
			v += 1900
		}
		f.Type, f.Value = "year", fmt.Sprintf("%04d", v)
	case "date":
		f.Type, f.Value = "date", dateString(b)
	case "datetime":
		if n == 8 && c.FSP == 0 {
			// Before MySQL 5.6.4: YYYYMMDDhhmmss as a signed integer.
			v := flipSigned(b)
			f.Type, f.Value = "datetime", fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d", v/1e10, v/1e8%100, v/1e6%100, v/1e4%100, v/100%100, v%100)
			return
		}
		f.Type, f.Value = "datetime", datetime2String(b, c.FSP)
	case "timestamp":
		sec := beUintBytes(b[:4])
		t := time.Unix(int64(sec), 0).UTC()
		f.Type, f.Value = "timestamp", t.Format("2006-01-02 15:04:05")+fracString(b[4:], c.FSP)
		if sec == 0 {
			f.Value = "0000-00-00 00:00:00" + fracString(b[4:], c.FSP)
		}
		f.Note = "TIMESTAMP shown in UTC"
	case "time":
		f.Type, f.Value = "time", time2String(b, c.FSP)
	case "decimal":
		v, ok := decimalString(b, c.Length, c.Scale)
		if !ok {
			inferField(f, h)
			return
		}
		f.Type, f.Value = "decimal", v
	case "float":
		f.Type, f.Value = "float", strconv.FormatFloat(float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), 'g', -1, 32)
	case "double", "real":
		f.Type, f.Value = "float", strconv.FormatFloat(math.Float64frombits(binary.LittleEndian.Uint64(b)), 'g', -1, 64)
	case "enum":
		i := int(beUintBytes(b))
		f.Type, f.Value = "enum", strconv.Itoa(i)
		if i >= 1 && i <= len(c.Values) {
			f.Value = quote(c.Values[i-1])
		}
	case "set":
		bits := beUintBytes(b)
		var on []string
		for i, v := range c.Values {
			if bits&(1<<uint(i)) != 0 {
				on = append(on, v)
			}
		}
		f.Type, f.Value = "set", quote(strings.Join(on, ","))
	case "bit":
		f.Type, f.Value = "bit", "0x"+f.Hex
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext", "nchar", "nvarchar", "national":
		if c.Binary {
			f.Type, f.Value = "bytes", "0x"+f.Hex+ellipsis(f.Truncated)
			return
		}
		s := strings.ToValidUTF8(string(b), "\uFFFD")
		if c.Type == "char" || c.Type == "nchar" {
			s = strings.TrimRight(s, " ")
		}
		f.Type, f.Value = "string", quote(s+ellipsis(f.Truncated))
		if prefix > 0 {
			f.Note = fmt.Sprintf("an index prefix: the first %d characters", prefix)
		}
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		f.Type, f.Value = "bytes", "0x"+f.Hex+ellipsis(f.Truncated)
	default:
		inferField(f, h)
	}
}

func isStringType(c *Column) bool {
	switch c.Type {
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext", "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		return true
	}
	return false
}

func columnTypeString(c *Column) string {
	s := strings.ToUpper(c.Type)
	switch {
	case c.Type == "decimal":
		s += fmt.Sprintf("(%d,%d)", c.Length, c.Scale)
	case c.FSP > 0:
		s += fmt.Sprintf("(%d)", c.FSP)
	case c.Length > 0:
		s += fmt.Sprintf("(%d)", c.Length)
	}
	if c.Unsigned {
		s += " UNSIGNED"
	}
	return s
}

func ellipsis(t bool) string {
	if t {
		return "…"
	}
	return ""
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func beUintBytes(b []byte) uint64 {
	var u uint64
	for _, c := range b {
		u = u<<8 | uint64(c)
	}
	return u
}

// flipSigned decodes a big-endian signed integer of len(b) bytes whose sign
// bit InnoDB flipped (so that byte order is numeric order).
func flipSigned(b []byte) int64 {
	if len(b) == 0 || len(b) > 8 {
		return 0
	}
	u := beUintBytes(b)
	bits := uint(len(b) * 8)
	u ^= 1 << (bits - 1)
	shift := 64 - bits
	return int64(u<<shift) >> shift
}

// dateString: DATE is 3 bytes, day | month<<5 | year<<9, sign bit flipped.
func dateString(b []byte) string {
	v := beUintBytes(b) ^ 0x800000
	return fmt.Sprintf("%04d-%02d-%02d", v>>9, v>>5&15, v&31)
}

// datetime2String: MySQL 5.6.4+ DATETIME is 5 bytes (sign, year*13+month,
// day, hour, minute, second) plus the fraction, big-endian, offset by
// 0x8000000000.
func datetime2String(b []byte, fsp int) string {
	if len(b) < 5 {
		return "0x" + hex.EncodeToString(b)
	}
	v := beUintBytes(b[:5]) - 0x8000000000
	ymd, hms := v>>17, v&(1<<17-1)
	ym := ymd >> 5
	return fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d", ym/13, ym%13, ymd&31, hms>>12, hms>>6&63, hms&63) + fracString(b[5:], fsp)
}

func time2String(b []byte, fsp int) string {
	if len(b) < 3 {
		return "0x" + hex.EncodeToString(b)
	}
	v := int64(beUintBytes(b[:3])) - 0x800000
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	return fmt.Sprintf("%s%02d:%02d:%02d", sign, v>>12&0x3ff, v>>6&63, v&63) + fracString(b[3:], fsp)
}

// fracString: 1 byte holds 2 digits, 2 bytes 4, 3 bytes 6.
func fracString(b []byte, fsp int) string {
	if len(b) == 0 || fsp <= 0 {
		return ""
	}
	v := beUintBytes(b)
	var micro uint64
	switch len(b) {
	case 1:
		micro = v * 10000
	case 2:
		micro = v * 100
	default:
		micro = v
	}
	s := fmt.Sprintf("%06d", micro%1000000)
	if fsp < 6 {
		s = s[:fsp]
	}
	return "." + s
}

// decimalString reads MySQL's binary DECIMAL: the integer and fraction
// parts in groups of 9 digits per 4 bytes (fewer bytes for the leftover),
// sign bit flipped, every byte inverted when negative.
func decimalString(b []byte, m, d int) (string, bool) {
	if decimalBytes(m, d) != len(b) || len(b) == 0 {
		return "", false
	}
	buf := append([]byte(nil), b...)
	neg := buf[0]&0x80 == 0
	buf[0] ^= 0x80
	if neg {
		for i := range buf {
			buf[i] = ^buf[i]
		}
	}
	read := func(digits int) string {
		var s strings.Builder
		lead := digits % 9
		if lead > 0 {
			n := digBytes[lead]
			fmt.Fprintf(&s, "%0*d", lead, beUintBytes(buf[:n]))
			buf = buf[n:]
		}
		for i := 0; i < digits/9; i++ {
			fmt.Fprintf(&s, "%09d", beUintBytes(buf[:4]))
			buf = buf[4:]
		}
		return s.String()
	}
	ip := strings.TrimLeft(read(m-d), "0")
	if ip == "" {
		ip = "0"
	}
	// The fraction: whole groups first, then the leftover digits.
	var fp strings.Builder
	for i := 0; i < d/9; i++ {
		fmt.Fprintf(&fp, "%09d", beUintBytes(buf[:4]))
		buf = buf[4:]
	}
	if r := d % 9; r > 0 {
		fmt.Fprintf(&fp, "%0*d", r, beUintBytes(buf[:digBytes[r]]))
	}
	s := ip
	if d > 0 {
		s += "." + fp.String()
	}
	if neg {
		s = "-" + s
	}
	return s, true
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
