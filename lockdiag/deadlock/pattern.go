package deadlock

import (
	"fmt"
	"regexp"
	"strings"
)

// PatternOppositeIndexOrder is the claim/cancel deadlock: two statements
// on one table lock the same secondary index and PRIMARY in opposite order.
const PatternOppositeIndexOrder = "opposite-index-order"

// Pattern is a recognised deadlock shape, explained.
type Pattern struct {
	Name      string `json:"name"`
	Table     string `json:"table"`
	Secondary string `json:"secondary_index"`
	// SecondaryFirst is the transaction that found its rows through the
	// secondary index: it holds that index's record and waits for PRIMARY.
	SecondaryFirst int `json:"secondary_first"`
	// PrimaryFirst holds PRIMARY and waits for the secondary record,
	// because it changes a column of that index.
	PrimaryFirst int `json:"primary_first"`
	// Row is the primary-key value both records belong to, when the two
	// waits name the same row.
	Row string `json:"row,omitempty"`
	// ByID is set when the secondary-first statement names its row by
	// primary key: its plan, not its SQL, chose the secondary index.
	ByID        bool   `json:"by_id,omitempty"`
	Explanation string `json:"explanation"`
	Fix         string `json:"fix"`
}

var (
	reSetClause = regexp.MustCompile(`(?is)\bSET\s+(.*?)\s+WHERE\b`)
	reHint      = regexp.MustCompile(`(?i)\b(?:FORCE|USE)\s+INDEX\s*\(\s*` + "`?" + `(\w+)`)
)

// detectPattern looks for a pair of transactions where one holds a
// secondary index record and waits for PRIMARY while the other holds
// PRIMARY and waits for that secondary index, on the same table.
func detectPattern(r *Report) *Pattern {
	for _, s := range r.Transactions {
		for _, p := range r.Transactions {
			if s == p || s.Waits == nil || p.Waits == nil {
				continue
			}
			sw, pw := s.Waits, p.Waits
			if sw.Kind == TableLock || pw.Kind == TableLock || sw.Table != pw.Table {
				continue
			}
			if sw.Index != "PRIMARY" || pw.Index == "PRIMARY" {
				continue
			}
			sec := pw.Index
			// The report shows (or MariaDB's CONFLICTING WITH lets us
			// derive) what each holds. With only two transactions and no
			// holds printed, each must hold what the other waits for.
			inferred := len(r.Transactions) == 2 && len(s.Holds) == 0 && len(p.Holds) == 0
			if !inferred && (!holdsIndex(s, sw.Table, sec) || !holdsIndex(p, sw.Table, "PRIMARY")) {
				continue
			}
			return explain(r, s, p, sec)
		}
	}
	return nil
}

func holdsIndex(t *Transaction, table, index string) bool {
	for _, l := range t.Holds {
		if l.Kind != TableLock && l.Table == table && l.Index == index {
			return true
		}
	}
	return false
}

func firstRecord(l *Lock) *Record {
	if l == nil || len(l.Records) == 0 {
		return nil
	}
	return l.Records[0]
}

func explain(r *Report, s, p *Transaction, sec string) *Pattern {
	pat := &Pattern{Name: PatternOppositeIndexOrder, Table: s.Waits.Table, Secondary: sec,
		SecondaryFirst: s.Number, PrimaryFirst: p.Number}
	pkRec, secRec := firstRecord(s.Waits), firstRecord(p.Waits)
	pkVal, secPK := primaryKeyValue("PRIMARY", pkRec), primaryKeyValue(sec, secRec)
	if pkVal != "" && pkVal == secPK {
		pat.Row = pkVal
	}
	pkCol := "id"
	if pkRec != nil && len(pkRec.Fields) > 0 && pkRec.Fields[0].Name != "" {
		pkCol = pkRec.Fields[0].Name
	}
	pat.ByID = namesRowByKey(s.Query, pkCol)

	recText := func(rec *Record) string {
		if rec == nil {
			return "record"
		}
		return "record " + rec.Key()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The same two indexes of %s, %s and PRIMARY, were locked in opposite order.\n", pat.Table, sec)
	fmt.Fprintf(&b, "Transaction (%d) %s found its rows through the secondary index %s: it locked the %s %s first and then needed the PRIMARY %s.",
		s.Number, quoteStmt(s.Query), sec, sec, recText(secRec), recText(pkRec))
	if pat.ByID {
		fmt.Fprintf(&b, " Its SQL names the row by primary key, so it was the optimizer's plan, not the statement, that went through %s.", sec)
	}
	b.WriteString("\n")
	how := "locked the PRIMARY " + recText(pkRec) + " first"
	if m := reHint.FindStringSubmatch(p.Query); m != nil && m[1] != "PRIMARY" && m[1] != sec {
		how = fmt.Sprintf("found its rows through %s, so it locked the PRIMARY %s before touching %s", m[1], recText(pkRec), sec)
	}
	changes := setColumns(p.Query)
	why := "because it changes a column of " + sec
	if len(changes) > 0 {
		why += " (it sets " + strings.Join(changes, ", ") + ")"
	}
	fmt.Fprintf(&b, "Transaction (%d) %s %s and then needed the %s %s %s.\n", p.Number, quoteStmt(p.Query), how, sec, recText(secRec), why)
	row := ""
	if pat.Row != "" {
		row = fmt.Sprintf(" of the same row (%s %s)", pkCol, pat.Row)
	}
	fmt.Fprintf(&b, "Each holds the record%s the other waits for; InnoDB broke the cycle by rolling back (%d) with error 1213.", row, r.Victim)
	if pat.ByID {
		fmt.Fprintf(&b, "\nIt happens only when the optimizer picks %s for (%d) and the two statements meet on the same row, which is why it is intermittent.", sec, s.Number)
	} else {
		fmt.Fprintf(&b, "\nIt happens only when the optimizer picks %s for (%d)'s plan (EXPLAIN it under several data distributions) and the two statements meet on the same row, which is why it is intermittent.", sec, s.Number)
	}
	pat.Explanation = b.String()

	var fix strings.Builder
	if pat.ByID {
		fmt.Fprintf(&fix, "Pin (%d) to the primary key: add FORCE INDEX(PRIMARY) to it, so it locks PRIMARY before %s like (%d), and check with EXPLAIN that key=PRIMARY. ", s.Number, sec, p.Number)
		fmt.Fprintf(&fix, "Every multi-row writer should also read its target ids with a non-locking SELECT and then update by PRIMARY KEY in ascending id order.")
	} else {
		fmt.Fprintf(&fix, "Make (%d) lock in the same order as (%d): first read the target ids with a non-locking SELECT (… ORDER BY %s), then UPDATE one row at a time by PRIMARY KEY in ascending %s order, ", s.Number, p.Number, pkCol, pkCol)
		fmt.Fprintf(&fix, "re-checking the expected state in the UPDATE's WHERE (e.g. AND status IN (…)) and looking at rows affected. ")
		fmt.Fprintf(&fix, "Pinning (%d)'s plan with FORCE INDEX to an index that (%d) does not change works only until that index gains such a column (a (run_id, status) index still deadlocks); FORCE INDEX(PRIMARY) fixes the order but locks the whole table.", s.Number, p.Number)
	}
	fix.WriteString(" Keep retrying on 1213 only as a safety net.")
	pat.Fix = fix.String()
	return pat
}

func quoteStmt(q string) string {
	if q == "" {
		return "(statement not shown)"
	}
	return "«" + firstLine(q, 100) + "»"
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
		if lhs != "" {
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
