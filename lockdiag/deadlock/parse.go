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

// The patterns match the whitespace-collapsed text of a line. Markdown may
// have eaten or escaped the asterisks, so they are optional.
const stars = `^(?:\\?\*){0,3} ?`

var (
	reTrxStart     = regexp.MustCompile(stars + `\((\d{1,4})\) ?TRANSACTION:?$`)
	reTrxUnnumber  = regexp.MustCompile(`^(?:\\?\*){3} ?TRANSACTION:?$`)
	reHolds        = regexp.MustCompile(stars + `\((\d{1,4})\) ?HOLDS THE LOCK(?:\(S\)|S)?:?$`)
	reWaitsNum     = regexp.MustCompile(stars + `\((\d{1,4})\) ?WAITING FOR THIS LOCK TO BE GRANTED:?$`)
	reWaits        = regexp.MustCompile(stars + `WAITING FOR THIS LOCK TO BE GRANTED:?$`)
	reConflicts    = regexp.MustCompile(stars + `CONFLICTING WITH:?$`)
	reRollBack     = regexp.MustCompile(stars + `WE ROLL BACK TRANSACTION ?\((\d{1,4})\)`)
	reTooDeep      = regexp.MustCompile(`TOO DEEP OR LONG SEARCH IN THE LOCK TABLE WAITS-FOR GRAPH`)
	reTimeLine     = regexp.MustCompile(`^` + reTS + `(?: (?:0x)?[0-9a-fA-F]+)?$`)
	reSeparator    = regexp.MustCompile(`^(?:-{4,}|={4,})$`)
	reDeadlockHead = regexp.MustCompile(`(?i)LATEST DETECTED DEADLOCK|transactions deadlock detected`)

	reTrxLine  = regexp.MustCompile(`^TRANSACTION (\d+ \d+|[0-9A-Fa-f]+)(?:,? (.*))?$`)
	reActive   = regexp.MustCompile(`^(ACTIVE(?: \(PREPARED\))?(?: \d+ sec)?|not started|COMMITTED IN MEMORY)(.*)$`)
	reOldProc  = regexp.MustCompile(`^,? ?(?:process no \d+, )?(?:OS thread id \d+,? ?)?`)
	reLockWait = regexp.MustCompile(`(\d+) lock struct\(s\), heap size \d+(?:, (\d+) row lock\(s\))?(?:, undo log entries (\d+))?`)
	reThread   = regexp.MustCompile(`^(MySQL|MariaDB) thread id (\d+)`)
	reIsoLevel = regexp.MustCompile(`(?i)isolation level ((?:READ UNCOMMITTED|READ COMMITTED|REPEATABLE READ|SERIALIZABLE))`)

	reTrxIDPart = `(\d+ \d+|[0-9A-Fa-f]+)`
	reRecLocks  = regexp.MustCompile("^RECORD LOCKS space id (\\d+) page no (\\d+) n bits \\d+ index [`\"]?(.+?)[`\"]? of table (\\S+?)(?: /\\* Partition [`\"]?(.+?)[`\"]? \\*/)? trx id " + reTrxIDPart + " lock[_ ]mode (\\S+)( locks rec but not gap| locks gap before rec)?( insert intention)?( waiting)?$")
	reTblLock   = regexp.MustCompile(`^TABLE LOCK table (\S+?)(?: /\* Partition .+? \*/)? trx id ` + reTrxIDPart + ` lock mode (\S+)( waiting)?$`)
	reRecord    = regexp.MustCompile(`^Record lock, heap no (\d+)(?: PHYSICAL RECORD: n_fields (\d+); (?:compact|redundant) format(?:; info bits (\d+))?)?;?(.*)$`)
	reFieldHead = regexp.MustCompile(`^\d+: ?(?:len|SQL NULL)`)
	reInfoTail  = regexp.MustCompile(`^(?:info )?bits (\d+);?(.*)$`)
	// The first word of a statement; a line after the thread line that
	// starts otherwise is the thread line's wrapped tail ("root updating").
	reSQLStart = regexp.MustCompile(`(?i)^(?:\(|/\*|select|insert|update|delete|replace|with|call|commit|rollback|set|lock|load|alter|create|drop|truncate|do|handler|begin|start|xa|savepoint|release|analyze|optimize|grant|rename|prepare|execute)\b`)
)

type parser struct {
	reports []*Report
	errs    []error

	cur  *Report
	trx  *Transaction // the transaction whose section is being read
	sec  section
	lock *Lock
	rec  *Record
	bad  *ParseError // first malformed line of cur
	// pending is a RECORD LOCKS / TABLE LOCK line that did not read
	// whole: a reflowed paste may have wrapped it onto the next line.
	pending *line
	// infoCut: the record line was wrapped inside "info bits N".
	infoCut    bool
	sawThread  bool // the current transaction's thread line was read
	lastWasBad bool // the last non-blank line of the input failed to read
}

func (p *parser) fail(ln line, expected string) {
	if p.cur != nil && p.bad == nil {
		p.bad = &ParseError{Report: p.cur.Line, Line: ln.no, Got: ln.text, Expected: expected}
	}
	p.lastWasBad = true
}

func (p *parser) start(ln line) {
	p.finish(false)
	p.cur = &Report{Format: FormatMySQL, Line: ln.no, Time: ln.ts}
}

// finish closes the current report: complete when its WE ROLL BACK line
// was read, else cut off.
func (p *parser) finish(atEOF bool) {
	r := p.cur
	if r == nil {
		return
	}
	if p.pending != nil {
		pl := *p.pending
		p.pending = nil
		if !atEOF {
			p.fail(pl, "a whole RECORD LOCKS or TABLE LOCK line (space id, page no, index, table, trx id, lock mode)")
		}
	}
	bad := p.bad
	// A line that failed to read at the very end of the input is where
	// the paste was cut, not garbage: keep what came before it.
	if bad != nil && atEOF && p.lastWasBad {
		bad = nil
	}
	p.cur, p.trx, p.sec, p.lock, p.rec, p.bad = nil, nil, secNone, nil, nil, nil
	if len(r.Transactions) == 0 {
		// A LATEST DETECTED DEADLOCK header with nothing under it is
		// not a report; neither is a log line announcing one that was
		// cut off before its first transaction.
		if atEOF || bad != nil {
			p.errs = append(p.errs, &ParseError{Report: r.Line, Line: r.Line, Expected: "a \"*** (1) TRANSACTION:\" section after the deadlock header; the report has no transactions"})
		}
		return
	}
	if bad != nil {
		p.errs = append(p.errs, bad)
		return
	}
	switch {
	case r.Victim == -1:
		r.Victim = 0 // MariaDB printed "(0)": it does not say which
	case r.Victim > 0 && r.Transaction(r.Victim) != nil:
	case r.Victim > 0:
		p.errs = append(p.errs, &ParseError{Report: r.Line, Line: r.Line,
			Expected: fmt.Sprintf("the rolled-back transaction (%d) among the report's transactions", r.Victim)})
		return
	case r.TooDeep && len(r.Transactions) == 1:
		// "WE WILL ROLL BACK FOLLOWING TRANSACTION": the one printed.
		r.Victim = r.Transactions[0].Number
	default:
		r.Truncated = true
		// Keep every transaction whose locks were printed; one cut off
		// in its header says nothing about locks.
		last := r.Transactions[len(r.Transactions)-1]
		if last.Waits == nil && len(last.Holds) == 0 && len(r.Transactions) > 1 {
			r.Transactions = r.Transactions[:len(r.Transactions)-1]
		}
		r.Warnings = append(r.Warnings, fmt.Sprintf("the report at line %d is cut off after transaction (%d): it has no \"*** WE ROLL BACK TRANSACTION\" line, so the victim is unknown and anything after it is missing",
			r.Line, r.Transactions[len(r.Transactions)-1].Number))
	}
	p.reports = append(p.reports, r)
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

func (p *parser) line(ln line) {
	if ln.foreign {
		return
	}
	t := ln.text
	if t == "" {
		return
	}
	p.lastWasBad = false
	if p.pending != nil {
		pl := *p.pending
		p.pending = nil
		joined := pl
		joined.text = pl.text + " " + t
		if p.lockHeader(joined, true) {
			return
		}
		p.fail(pl, "a whole RECORD LOCKS or TABLE LOCK line (space id, page no, index, table, trx id, lock mode)")
	}
	switch {
	case reDeadlockHead.MatchString(t):
		if p.cur == nil || len(p.cur.Transactions) > 0 || p.cur.Victim != 0 {
			p.start(ln)
		}
		return
	case reTooDeep.MatchString(t):
		if p.cur == nil || len(p.cur.Transactions) > 0 {
			p.start(ln)
		}
		p.cur.TooDeep = true
		return
	}
	if m := reTrxStart.FindStringSubmatch(t); m != nil {
		p.newTrx(ln, atoi(m[1]))
		return
	}
	if reTrxUnnumber.MatchString(t) {
		p.newTrx(ln, 1)
		return
	}
	if p.cur == nil {
		return // outside any report: the rest of the status output
	}
	if p.cur.Time == "" && len(p.cur.Transactions) == 0 {
		if m := reTimeLine.FindStringSubmatch(t); m != nil {
			p.cur.Time = m[1]
			return
		}
	}
	if m := reRollBack.FindStringSubmatch(t); m != nil {
		if p.cur.Victim = atoi(m[1]); p.cur.Victim == 0 {
			p.cur.Victim = -1
		}
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
		if p.trx == nil {
			p.fail(ln, "a \"*** (n) TRANSACTION:\" section before it")
			return
		}
		s := secWaits
		if reConflicts.MatchString(t) {
			s = secConflicts
			p.cur.Format = FormatMariaDB
		}
		p.enter(ln, p.trx.Number, s)
		return
	}
	if strings.HasPrefix(t, "*** ") {
		p.fail(ln, "a known section (\"*** (n) TRANSACTION:\", \"HOLDS THE LOCK(S):\", \"WAITING FOR THIS LOCK TO BE GRANTED:\", \"CONFLICTING WITH:\" or \"WE ROLL BACK TRANSACTION (n)\")")
		return
	}
	switch p.sec {
	case secHeader:
		p.headerLine(ln)
	case secHolds, secWaits, secConflicts:
		p.lockLine(ln)
	}
}

func (p *parser) newTrx(ln line, n int) {
	if p.cur == nil || p.cur.Victim != 0 || (n == 1 && len(p.cur.Transactions) > 0) {
		p.start(ln)
	}
	if p.cur.Time == "" {
		p.cur.Time = ln.ts
	}
	if p.cur.Transaction(n) != nil {
		p.fail(ln, fmt.Sprintf("transaction (%d) listed once", n))
		return
	}
	p.trx = &Transaction{Number: n}
	p.cur.Transactions = append(p.cur.Transactions, p.trx)
	p.sec, p.lock, p.rec, p.sawThread = secHeader, nil, nil, false
}

func (p *parser) enter(ln line, n int, s section) {
	t := p.cur.Transaction(n)
	if t == nil {
		p.fail(ln, fmt.Sprintf("a section of a transaction the report lists, not of (%d)", n))
		return
	}
	p.trx, p.sec, p.lock, p.rec = t, s, nil, nil
}

func (p *parser) headerLine(ln line) {
	t := p.trx
	s := ln.text
	if m := reIsoLevel.FindStringSubmatch(s); m != nil {
		t.Isolation = strings.ToUpper(m[1])
	}
	switch {
	case isElision(s):
	case strings.HasPrefix(s, "TRANSACTION ") && t.idText == "" && !p.sawThread:
		m := reTrxLine.FindStringSubmatch(s)
		if m == nil {
			p.fail(ln, "a transaction line like \"TRANSACTION 1234, ACTIVE 0 sec starting index read\"")
			return
		}
		t.idText = m[1]
		rest := m[2]
		if a := reActive.FindStringSubmatch(rest); a != nil {
			t.Active = a[1]
			rest = a[2]
		}
		rest = reOldProc.ReplaceAllString(rest, "")
		t.State = strings.TrimSpace(strings.Trim(strings.TrimSpace(rest), ","))
	case strings.HasPrefix(s, "mysql tables in use"):
	case strings.Contains(s, "lock struct(s)") && reLockWait.MatchString(s):
		m := reLockWait.FindStringSubmatch(s)
		t.LockStructs, t.RowLocks, t.UndoEntries = atoi(m[1]), atoi(m[2]), atoi(m[3])
	case reThread.MatchString(s) && !p.sawThread:
		m := reThread.FindStringSubmatch(s)
		id, err := strconv.ParseUint(m[2], 10, 64)
		if err != nil {
			p.fail(ln, "a thread id that fits 64 bits")
			return
		}
		t.ThreadID, p.sawThread = id, true
		if m[1] == "MariaDB" {
			p.cur.Format = FormatMariaDB
		}
	case strings.HasPrefix(s, "Trx read view") || strings.HasPrefix(s, "Trx #rec lock") ||
		strings.HasPrefix(s, "Trx total rec lock") || strings.HasPrefix(s, "Trx has approximately"):
	case t.Query == "" && p.sawThread && !reSQLStart.MatchString(s) && len(strings.Fields(s)) <= 4 && !strings.ContainsAny(s, "=(`'"):
		// The thread line wrapped by a paste: "… localhost" / "root updating".
	default:
		// Whatever else follows the thread line is the statement, which
		// may span lines.
		if t.Query != "" {
			t.Query += "\n"
		}
		t.Query += ln.raw
	}
}

// lockHeader reads a RECORD LOCKS or TABLE LOCK line; quiet: report
// nothing when it does not read (the caller decides).
func (p *parser) lockHeader(ln line, quiet bool) bool {
	t := ln.text
	switch {
	case strings.HasPrefix(t, "RECORD LOCKS "):
		m := reRecLocks.FindStringSubmatch(t)
		if m == nil {
			return false
		}
		space, err1 := strconv.ParseUint(m[1], 10, 64)
		page, err2 := strconv.ParseUint(m[2], 10, 64)
		if err1 != nil || err2 != nil {
			if !quiet {
				p.fail(ln, "space id and page no that fit 64 bits")
			}
			return true
		}
		p.addLock(&Lock{Space: space, Page: page, Index: m[3], Table: unquoteTable(m[4]), Partition: m[5], idText: m[6],
			Mode: m[7], Kind: lockKind(m[8], m[9]), Waiting: m[10] != ""})
		return true
	case strings.HasPrefix(t, "TABLE LOCK "):
		m := reTblLock.FindStringSubmatch(t)
		if m == nil {
			return false
		}
		p.addLock(&Lock{Table: unquoteTable(m[1]), idText: m[2], Mode: m[3], Kind: TableLock, Waiting: m[4] != ""})
		return true
	}
	return false
}

func (p *parser) lockLine(ln line) {
	t := ln.text
	if p.infoCut {
		p.infoCut = false
		if m := reInfoTail.FindStringSubmatch(t); m != nil && p.rec != nil {
			p.rec.InfoBits = atoi(m[1])
			p.rec.Deleted = p.rec.InfoBits&32 != 0
			if rest := strings.TrimSpace(m[2]); rest != "" {
				p.fields(ln, rest)
			}
			return
		}
	}
	switch {
	case isElision(t):
		return
	case strings.HasPrefix(t, "RECORD LOCKS ") || strings.HasPrefix(t, "TABLE LOCK "):
		if !p.lockHeader(ln, false) {
			// Maybe wrapped: try it joined with the next line.
			l := ln
			p.pending = &l
			p.lastWasBad = true
		}
	case strings.HasPrefix(t, "Record lock,"):
		m := reRecord.FindStringSubmatch(t)
		if m == nil {
			p.fail(ln, "a record line like \"Record lock, heap no 2 PHYSICAL RECORD: n_fields 3; compact format; info bits 0\"")
			return
		}
		if p.lock == nil || p.lock.Kind == TableLock {
			p.fail(ln, "a RECORD LOCKS line before the record")
			return
		}
		heap, err := strconv.ParseUint(m[1], 10, 64)
		if err != nil {
			p.fail(ln, "a heap no that fits 64 bits")
			return
		}
		bits := atoi(m[3])
		p.rec = &Record{HeapNo: heap, NFields: atoi(m[2]), InfoBits: bits, Deleted: bits&32 != 0}
		p.lock.Records = append(p.lock.Records, p.rec)
		rest := strings.TrimSpace(m[4])
		switch {
		case rest == "info" || rest == "info bits" || rest == "; info" || rest == "; info bits":
			p.infoCut = true
		case rest != "":
			p.fields(ln, rest)
		}
	case reFieldHead.MatchString(t):
		p.fields(ln, t)
	default:
		// Anything else (a "TOO DEEP" note, another thread's line in an
		// error log, a record's text wrapped by a paste) is not part of a
		// lock; skipping it keeps the rest of the report.
	}
}

func (p *parser) fields(ln line, t string) {
	if p.rec == nil {
		p.fail(ln, "a \"Record lock, heap no N\" line before the record's fields")
		return
	}
	fs, err := parseFields(t)
	if err != nil {
		p.fail(ln, err.Error())
		return
	}
	p.rec.Fields = append(p.rec.Fields, fs...)
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

// unquoteTable turns `db`.`t` (and 5.0's `db/t`) into db.t.
func unquoteTable(s string) string {
	s = strings.NewReplacer("`", "", `"`, "").Replace(s)
	if !strings.Contains(s, ".") {
		s = strings.Replace(s, "/", ".", 1)
	}
	return s
}
