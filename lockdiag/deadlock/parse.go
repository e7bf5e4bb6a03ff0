package deadlock

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// section is the part of a transaction the parser is reading.
type section int

const (
	secNone      section = iota
	secHeader            // TRANSACTION line, LOCK WAIT line, thread, statement
	secHolds             // MySQL: *** (n) HOLDS THE LOCK(S):
	secWaits             // *** (n) WAITING FOR THIS LOCK TO BE GRANTED:
	secConflicts         // MariaDB: *** CONFLICTING WITH:
)

var (
	reTrxStart  = regexp.MustCompile(`^\*\*\* \((\d{1,4})\) TRANSACTION:\s*$`)
	reHolds     = regexp.MustCompile(`^\*\*\* \((\d{1,4})\) HOLDS THE LOCK\(S\):\s*$`)
	reWaitsNum  = regexp.MustCompile(`^\*\*\* \((\d{1,4})\) WAITING FOR THIS LOCK TO BE GRANTED:\s*$`)
	reWaits     = regexp.MustCompile(`^\*\*\* WAITING FOR THIS LOCK TO BE GRANTED:\s*$`)
	reConflicts = regexp.MustCompile(`^\*\*\* CONFLICTING WITH:\s*$`)
	reRollBack  = regexp.MustCompile(`^\*\*\* WE ROLL BACK TRANSACTION \((\d{1,4})\)\s*$`)
	reTimeLine  = regexp.MustCompile(`^(\d{4}-\d\d-\d\d[ T]\s*\d{1,2}:\d\d:\d\d)(?:\s+(?:0x)?[0-9a-fA-F]+)?\s*$`)
	reSeparator = regexp.MustCompile(`^(?:-{4,}|={4,})\s*$`)

	reTrxLine  = regexp.MustCompile(`^TRANSACTION (\d+), (ACTIVE(?: \(PREPARED\))?(?: \d+ sec)?|not started|COMMITTED IN MEMORY)\s*(.*)$`)
	reLockWait = regexp.MustCompile(`(\d+) lock struct\(s\), heap size \d+, (\d+) row lock\(s\)(?:, undo log entries (\d+))?`)
	reThread   = regexp.MustCompile(`^(?:MySQL|MariaDB) thread id (\d+)`)
	reIsoLevel = regexp.MustCompile(`(?i)isolation level ((?:READ UNCOMMITTED|READ COMMITTED|REPEATABLE READ|SERIALIZABLE))`)

	reRecLocks = regexp.MustCompile("^RECORD LOCKS space id (\\d+) page no (\\d+) n bits \\d+ index `?([^` ]+)`? of table (\\S+)(?: /\\* Partition .*?\\*/)? trx id (\\d+) lock(?:_| )mode (\\S+)( locks rec but not gap| locks gap before rec)?( insert intention)?( waiting)?\\s*$")
	reTblLock  = regexp.MustCompile(`^TABLE LOCK table (\S+)(?: /\* Partition .*?\*/)? trx id (\d+) lock mode (\S+)( waiting)?\s*$`)
	reRecord   = regexp.MustCompile(`^Record lock, heap no (\d+)(?: PHYSICAL RECORD: n_fields (\d+); (?:compact|redundant) format(?:; info bits (\d+))?)?\s*$`)
	reFieldNo  = regexp.MustCompile(`^\s*(\d+):\s`)
	reField    = regexp.MustCompile(`^\s*(\d+): (?:(SQL NULL);*|len (\d+); hex ([0-9a-fA-F]*)(?:\.\.\.)?; asc (.*))$`)
)

type parser struct {
	reports []*Report
	errs    []error

	cur     *Report
	trx     *Transaction // the transaction whose section is being read
	sec     section
	lock    *Lock
	rec     *Record
	badLine int // first malformed line of cur, 0 if none
	badMsg  string
}

func (p *parser) fail(ln line, format string, args ...any) {
	if p.cur != nil && p.badLine == 0 {
		p.badLine = ln.no
		p.badMsg = fmt.Sprintf(format, args...)
	}
}

func (p *parser) start(ln line) {
	p.finish(false)
	p.cur = &Report{Format: FormatMySQL, Line: ln.no, Time: ln.ts}
}

// finish closes the current report: complete when its WE ROLL BACK line
// was read, else a truncated one.
func (p *parser) finish(atEOF bool) {
	r := p.cur
	if r == nil {
		return
	}
	p.cur, p.trx, p.sec, p.lock, p.rec = nil, nil, secNone, nil, nil
	bad, msg := p.badLine, p.badMsg
	p.badLine, p.badMsg = 0, ""
	if len(r.Transactions) == 0 {
		// A LATEST DETECTED DEADLOCK header with nothing under it is
		// not a report; neither is a log line announcing one that was
		// cut off before its first transaction.
		if atEOF || bad != 0 {
			p.errs = append(p.errs, fmt.Errorf("deadlock: report at line %d has no transactions", r.Line))
		}
		return
	}
	switch {
	case bad != 0:
		p.errs = append(p.errs, fmt.Errorf("deadlock: report at line %d: line %d: %s", r.Line, bad, msg))
		return
	case r.Victim == 0:
		p.errs = append(p.errs, fmt.Errorf("deadlock: report at line %d ends without its \"*** WE ROLL BACK TRANSACTION\" line (truncated?)", r.Line))
		return
	case r.Transaction(r.Victim) == nil:
		p.errs = append(p.errs, fmt.Errorf("deadlock: report at line %d rolls back transaction (%d), which it does not list", r.Line, r.Victim))
		return
	}
	if r.Format == FormatMariaDB {
		deriveHolds(r)
	}
	for _, t := range r.Transactions {
		t.Query = strings.TrimSpace(t.Query)
		for _, l := range t.allLocks() {
			decodeLock(l)
		}
	}
	r.Pattern = detectPattern(r)
	p.reports = append(p.reports, r)
}

func (t *Transaction) allLocks() []*Lock {
	out := append([]*Lock{}, t.Holds...)
	if t.Waits != nil {
		out = append(out, t.Waits)
	}
	return append(out, t.Conflicts...)
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

func (p *parser) line(ln line) {
	t := ln.text
	switch {
	case strings.Contains(t, "LATEST DETECTED DEADLOCK"),
		strings.Contains(t, "Transactions deadlock detected"):
		p.start(ln)
		return
	case p.cur == nil && !strings.HasPrefix(t, "*** ("):
		return // outside any report: the rest of the status output
	}
	if m := reTrxStart.FindStringSubmatch(t); m != nil {
		n := atoi(m[1])
		if p.cur == nil || p.cur.Victim != 0 || (n == 1 && len(p.cur.Transactions) > 0) {
			p.start(ln)
		}
		if p.cur.Time == "" {
			p.cur.Time = ln.ts
		}
		if p.cur.Transaction(n) != nil {
			p.fail(ln, "transaction (%d) listed twice", n)
			return
		}
		p.trx = &Transaction{Number: n}
		p.cur.Transactions = append(p.cur.Transactions, p.trx)
		p.sec, p.lock, p.rec = secHeader, nil, nil
		return
	}
	if p.cur == nil {
		return
	}
	if p.cur.Time == "" {
		if m := reTimeLine.FindStringSubmatch(t); m != nil && len(p.cur.Transactions) == 0 {
			p.cur.Time = m[1]
			return
		}
		p.cur.Time = ln.ts
	}
	if m := reRollBack.FindStringSubmatch(t); m != nil {
		p.cur.Victim = atoi(m[1])
		p.finish(false)
		return
	}
	if reSeparator.MatchString(t) {
		if len(p.cur.Transactions) > 0 {
			p.finish(false) // the status output's next section begins
		}
		return
	}
	if m := reHolds.FindStringSubmatch(t); m != nil {
		p.enter(ln, atoi(m[1]), secHolds)
		return
	}
	if m := reWaitsNum.FindStringSubmatch(t); m != nil {
		p.enter(ln, atoi(m[1]), secWaits)
		return
	}
	if reWaits.MatchString(t) || reConflicts.MatchString(t) {
		p.cur.Format = FormatMariaDB
		if p.trx == nil {
			p.fail(ln, "%q before any transaction", strings.TrimSpace(t))
			return
		}
		s := secWaits
		if reConflicts.MatchString(t) {
			s = secConflicts
		}
		p.enter(ln, p.trx.Number, s)
		return
	}
	if strings.HasPrefix(t, "*** ") {
		p.fail(ln, "unknown section %q", strings.TrimSpace(t))
		return
	}
	switch p.sec {
	case secHeader:
		p.headerLine(ln)
	case secHolds, secWaits, secConflicts:
		p.lockLine(ln)
	}
}

func (p *parser) enter(ln line, n int, s section) {
	t := p.cur.Transaction(n)
	if t == nil {
		p.fail(ln, "section for transaction (%d), which the report does not list", n)
		return
	}
	p.trx, p.sec, p.lock, p.rec = t, s, nil, nil
}

func (p *parser) headerLine(ln line) {
	t := p.trx
	s := strings.TrimSpace(ln.text)
	if m := reIsoLevel.FindStringSubmatch(s); m != nil {
		t.Isolation = strings.ToUpper(m[1])
	}
	switch {
	case s == "" || isElision(s):
	case strings.HasPrefix(s, "TRANSACTION "):
		m := reTrxLine.FindStringSubmatch(s)
		if m == nil {
			p.fail(ln, "cannot read transaction line %q", s)
			return
		}
		id, err := strconv.ParseUint(m[1], 10, 64)
		if err != nil {
			p.fail(ln, "transaction id %q: %v", m[1], err)
			return
		}
		t.TrxID, t.Active, t.State = id, m[2], strings.TrimSpace(strings.TrimPrefix(m[3], ","))
	case strings.HasPrefix(s, "mysql tables in use"):
	case strings.Contains(s, "heap size") && reLockWait.MatchString(s):
		m := reLockWait.FindStringSubmatch(s)
		t.LockStructs, t.RowLocks, t.UndoEntries = atoi(m[1]), atoi(m[2]), atoi(m[3])
	case reThread.MatchString(s):
		m := reThread.FindStringSubmatch(s)
		id, err := strconv.ParseUint(m[1], 10, 64)
		if err != nil {
			p.fail(ln, "thread id %q: %v", m[1], err)
			return
		}
		t.ThreadID = id
		if strings.HasPrefix(s, "MariaDB") {
			p.cur.Format = FormatMariaDB
		}
	case strings.HasPrefix(s, "Trx read view") || strings.HasPrefix(s, "Trx #rec lock"):
	default:
		// Whatever else follows the thread line is the statement, which
		// may span lines.
		if t.Query != "" {
			t.Query += "\n"
		}
		t.Query += strings.TrimRight(ln.text, " \t")
	}
}

func (p *parser) lockLine(ln line) {
	s := strings.TrimRight(ln.text, " \t")
	trim := strings.TrimSpace(s)
	switch {
	case trim == "" || isElision(trim):
		return
	case strings.HasPrefix(trim, "RECORD LOCKS "):
		m := reRecLocks.FindStringSubmatch(trim)
		if m == nil {
			p.fail(ln, "cannot read record lock line %q", trim)
			return
		}
		var nums [3]uint64
		for i, v := range []string{m[1], m[2], m[5]} {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				p.fail(ln, "number %q: %v", v, err)
				return
			}
			nums[i] = n
		}
		l := &Lock{Space: nums[0], Page: nums[1], Index: m[3], Table: unquoteTable(m[4]), TrxID: nums[2],
			Mode: m[6], Kind: lockKind(m[7], m[8]), Waiting: m[9] != ""}
		p.addLock(l)
	case strings.HasPrefix(trim, "TABLE LOCK "):
		m := reTblLock.FindStringSubmatch(trim)
		if m == nil {
			p.fail(ln, "cannot read table lock line %q", trim)
			return
		}
		id, err := strconv.ParseUint(m[2], 10, 64)
		if err != nil {
			p.fail(ln, "trx id %q: %v", m[2], err)
			return
		}
		p.addLock(&Lock{Table: unquoteTable(m[1]), TrxID: id, Mode: m[3], Kind: TableLock, Waiting: m[4] != ""})
	case strings.HasPrefix(trim, "Record lock,"):
		m := reRecord.FindStringSubmatch(trim)
		if m == nil {
			p.fail(ln, "cannot read record line %q", trim)
			return
		}
		if p.lock == nil || p.lock.Kind == TableLock {
			p.fail(ln, "record without a RECORD LOCKS line before it")
			return
		}
		heap, err := strconv.ParseUint(m[1], 10, 64)
		if err != nil {
			p.fail(ln, "heap no %q: %v", m[1], err)
			return
		}
		p.rec = &Record{HeapNo: heap, InfoBits: atoi(m[3])}
		p.lock.Records = append(p.lock.Records, p.rec)
	case reFieldNo.MatchString(s):
		m := reField.FindStringSubmatch(s)
		if m == nil {
			p.fail(ln, "cannot read record field %q", trim)
			return
		}
		if p.rec == nil {
			p.fail(ln, "record field without a \"Record lock\" line before it")
			return
		}
		f, err := parseField(m)
		if err != nil {
			p.fail(ln, "%v", err)
			return
		}
		p.rec.Fields = append(p.rec.Fields, f)
	default:
		// Anything else (another thread's log line in an error log, a
		// "TOO DEEP" note) is not part of a lock; skipping it keeps
		// the rest of the report.
	}
}

func (p *parser) addLock(l *Lock) {
	p.rec = nil
	p.lock = l
	switch p.sec {
	case secHolds:
		p.trx.Holds = append(p.trx.Holds, l)
	case secWaits:
		if p.trx.Waits == nil {
			p.trx.Waits = l
		}
	case secConflicts:
		p.trx.Conflicts = append(p.trx.Conflicts, l)
	}
}

func parseField(m []string) (Field, error) {
	f := Field{Pos: atoi(m[1])}
	if m[2] != "" {
		f.Null, f.Type, f.Value = true, "null", "NULL"
		return f, nil
	}
	n, err := strconv.Atoi(m[3])
	if err != nil {
		return f, fmt.Errorf("field length %q: %v", m[3], err)
	}
	if len(m[4])%2 != 0 {
		return f, fmt.Errorf("field %d: odd number of hex digits", f.Pos)
	}
	f.Len, f.Hex = n, strings.ToLower(m[4])
	// Long fields are cut: MySQL prints 30 bytes then "(total N bytes)".
	f.Truncated = len(f.Hex)/2 < n || strings.Contains(m[5], "(total ")
	return f, nil
}

func lockKind(which, insert string) Kind {
	switch {
	case insert != "":
		return InsertIntention
	case strings.Contains(which, "rec but not gap"):
		return RecNotGap
	case strings.Contains(which, "gap before rec"):
		return Gap
	}
	return NextKey
}

// unquoteTable turns `db`.`t` into db.t.
func unquoteTable(s string) string {
	return strings.ReplaceAll(s, "`", "")
}
