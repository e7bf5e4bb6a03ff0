package deadlock

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSchema reads the CREATE TABLE statements in s: a dump, SHOW CREATE
// TABLE output (also as the mysql client's table or \G form prints it), or
// statements typed by hand. It reads what the decoder needs — columns with
// type, UNSIGNED, length, scale and fractional seconds, the primary key,
// the other indexes and their columns, foreign keys — and skips whatever
// else (options, CHECKs, partitioning, other statements). It returns an
// error only when it finds no CREATE TABLE at all.
func ParseSchema(s string) (*Schema, error) {
	if strings.Count(s, `\n`) > strings.Count(s, "\n") {
		s = strings.NewReplacer(`\n`, "\n", `\t`, "\t").Replace(s)
	}
	toks := tokenize(s)
	sc := &Schema{}
	for i := 0; i < len(toks); i++ {
		if !toks[i].is("CREATE") {
			continue
		}
		j := i + 1
		if j < len(toks) && toks[j].is("TEMPORARY") {
			j++
		}
		if j >= len(toks) || !toks[j].is("TABLE") {
			continue
		}
		j++
		if j+2 < len(toks) && toks[j].is("IF") && toks[j+1].is("NOT") && toks[j+2].is("EXISTS") {
			j += 3
		}
		name, j := qualifiedName(toks, j)
		if name == "" || j >= len(toks) || toks[j].text != "(" {
			continue
		}
		end := matching(toks, j)
		t := &Table{Name: name}
		for _, def := range splitTop(toks[j+1 : end]) {
			parseDefinition(t, def)
		}
		finishTable(t)
		sc.Tables = append(sc.Tables, t)
		i = end
	}
	if len(sc.Tables) == 0 {
		return nil, fmt.Errorf("no CREATE TABLE statement found (give the output of SHOW CREATE TABLE for each table in the report)")
	}
	return sc, nil
}

// ParseColumnType reads a column type as information_schema's COLUMN_TYPE
// prints it ("bigint unsigned", "datetime(6)", "enum('a','b')").
func ParseColumnType(name, typ string) *Column {
	c := &Column{Name: name}
	parseColumnType(c, tokenize(typ))
	return c
}

type token struct {
	text string
	// quoted: a `name`, "name" or 'string' (text without the quotes).
	quote byte
}

func (t token) is(kw string) bool { return t.quote == 0 && strings.EqualFold(t.text, kw) }

// tokenize splits SQL into identifiers, numbers, quoted names and
// strings, and single punctuation characters, dropping comments.
func tokenize(s string) []token {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '|':
			// '|' is the mysql client's table border around SHOW CREATE
			// TABLE output.
			i++
		case c == '-' && strings.HasPrefix(s[i:], "-- "), c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '/' && strings.HasPrefix(s[i:], "/*"):
			if strings.HasPrefix(s[i:], "/*!") {
				// A versioned comment is SQL the server runs: read it.
				i += 3
				for i < len(s) && s[i] >= '0' && s[i] <= '9' {
					i++
				}
				continue
			}
			e := strings.Index(s[i+2:], "*/")
			if e < 0 {
				return out
			}
			i += e + 4
		case c == '*' && strings.HasPrefix(s[i:], "*/"):
			i += 2
		case c == '`' || c == '"' || c == '\'':
			var b strings.Builder
			j := i + 1
			for ; j < len(s); j++ {
				if s[j] == '\\' && c != '`' && j+1 < len(s) {
					j++
					b.WriteByte(s[j])
					continue
				}
				if s[j] == c {
					if j+1 < len(s) && s[j+1] == c {
						b.WriteByte(c)
						j++
						continue
					}
					break
				}
				b.WriteByte(s[j])
			}
			out = append(out, token{text: b.String(), quote: c})
			i = j + 1
		case isWordByte(c):
			j := i
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			out = append(out, token{text: s[i:j]})
			i = j
		default:
			out = append(out, token{text: s[i : i+1]})
			i++
		}
	}
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func qualifiedName(toks []token, i int) (string, int) {
	if i >= len(toks) || (toks[i].quote == 0 && !isWordByte(toks[i].text[0])) || toks[i].quote == '\'' {
		return "", i
	}
	name := toks[i].text
	i++
	if i+1 < len(toks) && toks[i].text == "." && toks[i].quote == 0 {
		name += "." + toks[i+1].text
		i += 2
	}
	return name, i
}

// matching returns the index of the ')' closing the '(' at i, or len.
func matching(toks []token, i int) int {
	depth := 0
	for j := i; j < len(toks); j++ {
		if toks[j].quote != 0 {
			continue
		}
		switch toks[j].text {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return len(toks)
}

// splitTop splits on commas outside parentheses.
func splitTop(toks []token) [][]token {
	var out [][]token
	depth, start := 0, 0
	for j, t := range toks {
		if t.quote != 0 {
			continue
		}
		switch t.text {
		case "(":
			depth++
		case ")":
			depth--
		case ",":
			if depth == 0 {
				out = append(out, toks[start:j])
				start = j + 1
			}
		}
	}
	return append(out, toks[start:])
}

func parseDefinition(t *Table, d []token) {
	if len(d) == 0 {
		return
	}
	i := 0
	if d[0].is("CONSTRAINT") {
		i = 1
		if i < len(d) && !d[i].is("PRIMARY") && !d[i].is("UNIQUE") && !d[i].is("FOREIGN") && !d[i].is("CHECK") {
			i++ // the constraint's name
		}
	}
	if i >= len(d) {
		return
	}
	switch {
	case d[i].is("PRIMARY"):
		cols, prefix, _ := indexColumns(d, i)
		t.Indexes = append(t.Indexes, &Index{Name: "PRIMARY", Primary: true, Unique: true, Columns: cols, Prefix: prefix})
	case d[i].is("UNIQUE"), d[i].is("KEY") && d[i].quote == 0, d[i].is("INDEX"), d[i].is("FULLTEXT"), d[i].is("SPATIAL"):
		if d[i].is("FULLTEXT") || d[i].is("SPATIAL") {
			return // not a B-tree InnoDB locks records of
		}
		unique := d[i].is("UNIQUE")
		j := i + 1
		if j < len(d) && (d[j].is("KEY") || d[j].is("INDEX")) {
			j++
		}
		name := ""
		if j < len(d) && d[j].text != "(" {
			name = d[j].text
		}
		cols, prefix, _ := indexColumns(d, j)
		if len(cols) == 0 {
			return
		}
		if name == "" {
			name = cols[0] // MySQL names an unnamed index after its first column
		}
		t.Indexes = append(t.Indexes, &Index{Name: name, Unique: unique, Columns: cols, Prefix: prefix})
	case d[i].is("FOREIGN"):
		cols, _, j := indexColumns(d, i)
		fk := &ForeignKey{Columns: cols}
		for ; j < len(d); j++ {
			if d[j].is("REFERENCES") {
				fk.RefTable, j = qualifiedName(d, j+1)
				fk.RefColumns, _, _ = indexColumns(d, j-1)
				break
			}
		}
		if fk.RefTable != "" {
			t.ForeignKeys = append(t.ForeignKeys, fk)
		}
	case d[i].is("CHECK"), d[i].is("PERIOD"):
	default:
		if d[0].quote == '\'' {
			return
		}
		c := &Column{Name: d[0].text}
		rest := parseColumnType(c, d[1:])
		for k := 0; k < len(rest); k++ {
			switch {
			case rest[k].is("NOT") && k+1 < len(rest) && rest[k+1].is("NULL"):
				c.NotNull = true
			case rest[k].is("PRIMARY"):
				c.NotNull = true
				t.Indexes = append(t.Indexes, &Index{Name: "PRIMARY", Primary: true, Unique: true, Columns: []string{c.Name}})
			case rest[k].is("UNIQUE"):
				t.Indexes = append(t.Indexes, &Index{Name: c.Name, Unique: true, Columns: []string{c.Name}})
			case rest[k].is("VIRTUAL"):
				c.Virtual = true
			case rest[k].is("REFERENCES"):
				ref, j := qualifiedName(rest, k+1)
				refCols, _, _ := indexColumns(rest, j-1)
				t.ForeignKeys = append(t.ForeignKeys, &ForeignKey{Columns: []string{c.Name}, RefTable: ref, RefColumns: refCols})
			case rest[k].is("CHARACTER") || rest[k].is("CHARSET"):
				for m := k + 1; m < len(rest) && m <= k+3; m++ {
					if rest[m].is("binary") {
						c.Binary = true
					}
				}
			case rest[k].text == "(":
				k = matching(rest, k)
			}
		}
		t.Columns = append(t.Columns, c)
	}
}

// indexColumns reads the first parenthesised column list at or after i:
// names with optional prefix lengths and ASC/DESC; functional parts are
// skipped. It returns the index after the list.
func indexColumns(d []token, i int) (cols []string, prefix []int, next int) {
	for i < len(d) && !(d[i].text == "(" && d[i].quote == 0) {
		i++
	}
	if i >= len(d) {
		return nil, nil, i
	}
	end := matching(d, i)
	for _, part := range splitTop(d[i+1 : min(end, len(d))]) {
		if len(part) == 0 || part[0].text == "(" && part[0].quote == 0 {
			continue
		}
		cols = append(cols, part[0].text)
		p := 0
		if len(part) >= 3 && part[1].text == "(" {
			p, _ = strconv.Atoi(part[2].text)
		}
		prefix = append(prefix, p)
	}
	return cols, prefix, end + 1
}

// parseColumnType reads a type and its arguments, UNSIGNED and a binary
// character set; it returns the tokens after the type.
func parseColumnType(c *Column, d []token) []token {
	if len(d) == 0 {
		return nil
	}
	c.Type = strings.ToLower(d[0].text)
	rest := d[1:]
	var args []token
	if len(rest) > 0 && rest[0].text == "(" && rest[0].quote == 0 {
		end := matching(rest, 0)
		args = rest[1:min(end, len(rest))]
		rest = rest[min(end+1, len(rest)):]
	}
	var nums []int
	for _, a := range args {
		if a.quote == '\'' {
			c.Values = append(c.Values, a.text)
		} else if n, err := strconv.Atoi(a.text); err == nil {
			nums = append(nums, n)
		}
	}
	switch c.Type {
	case "datetime", "timestamp", "time":
		if len(nums) > 0 {
			c.FSP = nums[0]
		}
	case "decimal", "numeric", "dec", "fixed":
		c.Type = "decimal"
		c.Length, c.Scale = 10, 0
		if len(nums) > 0 {
			c.Length = nums[0]
		}
		if len(nums) > 1 {
			c.Scale = nums[1]
		}
	case "bool", "boolean":
		c.Type = "tinyint"
	case "integer":
		c.Type = "int"
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		c.Binary = true
		fallthrough
	default:
		if len(nums) > 0 {
			c.Length = nums[0]
		}
	}
	for len(rest) > 0 && (rest[0].is("UNSIGNED") || rest[0].is("ZEROFILL") || rest[0].is("SIGNED")) {
		if !rest[0].is("SIGNED") {
			c.Unsigned = true
		}
		rest = rest[1:]
	}
	return rest
}

// finishTable applies MySQL's rules the statements leave implicit: primary
// key columns are NOT NULL.
func finishTable(t *Table) {
	if pk := t.Primary(); pk != nil {
		for _, n := range pk.Columns {
			if c := t.Column(n); c != nil {
				c.NotNull = true
			}
		}
	}
}
