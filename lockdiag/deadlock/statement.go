package deadlock

import (
	"regexp"
	"strings"
)

// What the decoder reads from a statement's text: its kind, the table it
// writes, an index hint, the columns it sets and tests. It is a scan of the
// text, not a SQL parser; it says "" when unsure.

var (
	reLeadComment = regexp.MustCompile(`^\s*(?:/\*.*?\*/\s*)*`)
	reStmtTable   = regexp.MustCompile("(?is)^\\s*(?:INSERT|REPLACE)\\s+(?:LOW_PRIORITY\\s+|DELAYED\\s+|HIGH_PRIORITY\\s+|IGNORE\\s+)*(?:INTO\\s+)?([`\"\\w.$]+)|^\\s*UPDATE\\s+(?:LOW_PRIORITY\\s+|IGNORE\\s+)*([`\"\\w.$]+)|^\\s*DELETE\\s+(?:LOW_PRIORITY\\s+|QUICK\\s+|IGNORE\\s+)*FROM\\s+([`\"\\w.$]+)|^\\s*SELECT\\b.*?\\bFROM\\s+([`\"\\w.$]+)")
	reSetClause   = regexp.MustCompile(`(?is)\bSET\s+(.*?)(?:\s+WHERE\b|\s+ORDER\s+BY\b|\s+LIMIT\b|$)`)
	reHint        = regexp.MustCompile("(?i)\\b(FORCE|USE)\\s+(?:INDEX|KEY)\\s*(?:FOR\\s+\\w+\\s*)?\\(\\s*`?(\\w+)")
	reWhere       = regexp.MustCompile(`(?is)\bWHERE\b(.*?)(?:\bORDER\s+BY\b|\bLIMIT\b|\bFOR\s+UPDATE\b|\bFOR\s+SHARE\b|\bLOCK\s+IN\s+SHARE\s+MODE\b|$)`)
	reInsSelect   = regexp.MustCompile(`(?is)^\s*(?:INSERT|REPLACE)\b.*\bSELECT\b.*\bFROM\b`)
	reIdent       = regexp.MustCompile("`?([A-Za-z_$][\\w$]*)`?")
)

func stmtKind(q string) string {
	q = strings.TrimSpace(reLeadComment.ReplaceAllString(q, ""))
	w, _, _ := strings.Cut(q, " ")
	w = strings.ToLower(strings.TrimRight(w, "\n\t("))
	switch w {
	case "insert", "update", "delete", "select", "replace":
		return w
	}
	return ""
}

// stmtTable is the table a statement writes (or, for SELECT, the first it
// reads), bare and unquoted, lower case.
func stmtTable(q string) string {
	q = reLeadComment.ReplaceAllString(q, "")
	m := reStmtTable.FindStringSubmatch(q)
	if m == nil {
		return ""
	}
	for _, s := range m[1:] {
		if s != "" {
			return bareTable(s)
		}
	}
	return ""
}

func bareTable(s string) string {
	s = strings.NewReplacer("`", "", `"`, "").Replace(s)
	if i := strings.LastIndex(s, "."); i >= 0 {
		s = s[i+1:]
	}
	return strings.ToLower(s)
}

// writesTable: the statement changes rows (INSERT, UPDATE, DELETE,
// REPLACE) of a table named like full ("db.t").
func writesTable(q, full string) bool {
	k := stmtKind(q)
	return (k == "insert" || k == "update" || k == "delete" || k == "replace") && stmtTable(q) == bareTable(full)
}

// forcedIndex is the index a FORCE/USE INDEX hint names, and whether it
// was FORCE.
func forcedIndex(q string) (string, bool) {
	m := reHint.FindStringSubmatch(q)
	if m == nil {
		return "", false
	}
	return m[2], strings.EqualFold(m[1], "FORCE")
}

func whereClause(q string) string {
	m := reWhere.FindStringSubmatch(q)
	if m == nil {
		return ""
	}
	return strings.TrimSpace(strings.Join(strings.Fields(m[1]), " "))
}

// mentions: the text names column c as a word.
func mentions(text, c string) bool {
	if c == "" {
		return false
	}
	re, err := regexp.Compile(`(?i)(?:^|[^\w$])` + "`?" + regexp.QuoteMeta(c) + "`?" + `(?:$|[^\w$])`)
	return err == nil && re.MatchString(text)
}

// namesRowByKey reports a statement whose WHERE names one row by the
// primary key column: WHERE id = 300, WHERE id=? AND ...
func namesRowByKey(q, col string) bool {
	re, err := regexp.Compile(`(?is)\bWHERE\b.*?(?:^|[\s(.` + "`" + `])` + regexp.QuoteMeta(col) + "`?" + `\s*=\s*(?:\?|-?\d+|'[^']*'|:\w+|\$\d+)`)
	if err != nil {
		return false
	}
	return re.MatchString(q)
}

// setColumns lists the columns an UPDATE's SET clause assigns.
func setColumns(q string) []string {
	if stmtKind(q) != "update" {
		return nil
	}
	m := reSetClause.FindStringSubmatch(q)
	if m == nil {
		return nil
	}
	var cols []string
	depth, start := 0, 0
	body := m[1]
	add := func(part string) {
		lhs, _, ok := strings.Cut(part, "=")
		if !ok {
			return
		}
		lhs = strings.Trim(strings.TrimSpace(lhs), "`")
		if i := strings.LastIndex(lhs, "."); i >= 0 {
			lhs = strings.Trim(lhs[i+1:], "`")
		}
		if lhs != "" && reIdent.MatchString(lhs) {
			cols = append(cols, lhs)
		}
	}
	inStr := false
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '\'':
			inStr = !inStr
		case inStr:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			add(body[start:i])
			start = i + 1
		}
	}
	add(body[start:])
	return cols
}

func quoteStmt(q string) string {
	if q == "" {
		return "(statement not shown)"
	}
	return "«" + firstLine(q, 100) + "»"
}
