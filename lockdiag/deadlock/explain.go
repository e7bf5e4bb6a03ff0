package deadlock

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// The explanations say what the report proves — who holds and waits for
// which record — and label what is read into it. The fixes name the
// report's own table, index and columns.

func (d *detector) indexCols(table, index string, rec *Record) []string {
	if tab := d.table(table); tab != nil {
		if isClusteredName(index) {
			if ix := tab.clustered(); ix != nil {
				return ix.Columns
			}
		} else if ix := tab.Index(index); ix != nil {
			return ix.Columns
		}
	}
	if rec != nil {
		var out []string
		for _, f := range rec.KeyFields() {
			if f.Type == "row_id" {
				// DB_ROW_ID, InnoDB's hidden row id of a table without a
				// primary key: no column a statement can name.
				break
			}
			if f.Name == "" {
				return nil
			}
			out = append(out, f.Name)
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return nil
}

// hiddenKey: the report shows table clustered by InnoDB's hidden row id
// (GEN_CLUST_INDEX, whose records and every secondary index's end in
// DB_ROW_ID): the table has no PRIMARY KEY and no UNIQUE index on NOT NULL
// columns, so its rows have no key a statement can name, filter or order
// by. A schema that gives the table such a key now overrules the report:
// the table gained one since.
func (d *detector) hiddenKey(table, index string, rec *Record) bool {
	hidden := strings.EqualFold(index, "GEN_CLUST_INDEX")
	if rec != nil {
		for _, f := range rec.Fields {
			hidden = hidden || f.Type == "row_id"
		}
	}
	if !hidden {
		return false
	}
	tab := d.table(table)
	return tab == nil || tab.clustered() == nil
}

// newKey is what a fix calls the key of a table that has none yet.
const newKey = "the new primary key"

// keyFix is the first step of a fix whose rows have no key to name: the
// lock is on the hidden clustered index, or the fix's key would be the
// hidden row id (key, as the fix names it, is newKey or ""). A lock on a
// secondary index of such a table is named by that index's columns, and
// needs no new key. DB_ROW_ID is never a key to give: SQL cannot name it.
func (d *detector) keyFix(table, index string, rec *Record, key string) string {
	if !d.hiddenKey(table, index, rec) || !isClusteredName(index) && key != newKey && key != "" {
		return ""
	}
	return addKeyFix(table)
}

// addKeyFix says to give table a primary key: one order of its rows needs
// a key to order by.
func addKeyFix(table string) string {
	return fmt.Sprintf("%s has no PRIMARY KEY: InnoDB clusters and locks its rows by a hidden row id that no statement can name, filter or order by. Give it one first (ALTER TABLE %s ADD PRIMARY KEY (…), on NOT NULL columns that identify a row). ", table, bareTable(table))
}

// pkCol names the primary key's column(s): from the schema, the field
// names, or a statement that names the row's key value (WHERE id = 300).
func (d *detector) pkCol(table string, pkRec *Record) string {
	if cols := d.indexCols(table, "PRIMARY", pkRec); len(cols) > 0 {
		return strings.Join(cols, ", ")
	}
	if d.hiddenKey(table, "", pkRec) {
		// A statement's column equal to the row id's value is a
		// coincidence, not the key.
		return newKey
	}
	if pkRec != nil {
		if kf := pkRec.KeyFields(); len(kf) == 1 {
			v := regexp.QuoteMeta(kf[0].Plain())
			re := regexp.MustCompile("(?i)`?(\\w+)`?\\s*(?:=\\s*'?" + v + "'?\\b|IN\\s*\\([^)]*\\b" + v + "\\b)")
			for _, t := range d.r.Transactions {
				if m := re.FindStringSubmatch(t.Query); m != nil {
					return m[1]
				}
			}
		}
	}
	return "the primary key"
}

func colList(cols []string, fallback string) string {
	if len(cols) == 0 {
		return fallback
	}
	return "(" + strings.Join(cols, ", ") + ")"
}

func recText(rec *Record) string {
	if rec == nil {
		return "a record (not printed)"
	}
	if rec.Supremum {
		return "the supremum (the gap after the page's last record)"
	}
	if len(rec.Fields) == 0 {
		return fmt.Sprintf("heap no %d (fields not printed)", rec.HeapNo)
	}
	return "record " + rec.Key()
}

func lockText(l *Lock) string {
	if l.Kind == TableLock {
		return fmt.Sprintf("the %s table lock on %s", l.Mode, l.Table)
	}
	return fmt.Sprintf("%s %s lock on %s of %s, %s", l.Mode, l.Kind, l.Index, l.Table, recText(firstRecord(l)))
}

// heldOn returns t's hold on the record w waits for (or any hold on that
// index), and whether it is inferred.
func heldOn(t *Transaction, table, index string) *Lock {
	for _, h := range t.Holds {
		if h.Kind != TableLock && bareTable(h.Table) == bareTable(table) && h.Index == index {
			return h
		}
	}
	return nil
}

func inferredNote(l *Lock) string {
	if l != nil && l.Inferred {
		return " [inferred: the report does not print it; " + l.InferredFrom + "]"
	}
	return ""
}

func (d *detector) victimText() string {
	if d.r.Victim == 0 {
		return "The report does not say which transaction InnoDB rolled back."
	}
	return fmt.Sprintf("InnoDB broke the cycle by rolling back (%d) with error 1213.", d.r.Victim)
}

const retryNote = " Keep retrying the whole transaction on error 1213 only as a safety net."

func (d *detector) oppositeIndex(s, p *Transaction) *Pattern {
	sec := p.Waits.Index
	tbl := s.Waits.Table
	pat := &Pattern{Name: PatternOppositeIndexOrder, Table: tbl, Index: sec, Secondary: sec, SecondaryFirst: s.Number, PrimaryFirst: p.Number}
	pkRec, secRec := firstRecord(s.Waits), firstRecord(p.Waits)
	pkIndex := s.Waits.Index
	pk := d.pkCol(tbl, pkRec)
	if isClusteredName(pkIndex) && pkRec != nil && secRec != nil {
		if kf := pkRec.KeyFields(); len(kf) == 1 && len(secRec.KeyFields()) > 0 {
			sk := secRec.KeyFields()
			if kf[0].Plain() == sk[len(sk)-1].Plain() {
				pat.Row = kf[0].Value
			}
		}
	}
	secCols := d.indexCols(tbl, sec, secRec)
	hint, forced := forcedIndex(s.Query)
	pat.Forced = forced && strings.EqualFold(hint, sec)
	pat.ByID = isClusteredName(pkIndex) && pk != "the primary key" && pk != newKey && !strings.Contains(pk, ",") && namesRowByKey(s.Query, pk) && !pat.Forced
	sh, ph := heldOn(s, tbl, sec), heldOn(p, tbl, pkIndex)

	var b strings.Builder
	fmt.Fprintf(&b, "Two indexes of %s, %s and %s, were locked in opposite order.\n", tbl, sec, pkIndex)
	fmt.Fprintf(&b, "Transaction (%d) %s holds %s%s and waits for %s.\n", s.Number, quoteStmt(s.Query), holdText(sh, sec, secRec), inferredNote(sh), lockText(s.Waits))
	fmt.Fprintf(&b, "Transaction (%d) %s holds %s%s and waits for %s.\n", p.Number, quoteStmt(p.Query), holdText(ph, pkIndex, pkRec), inferredNote(ph), lockText(p.Waits))
	// Why (s) went through the secondary index first.
	usesSec := pat.Forced || len(secCols) > 0 && anyMentioned(whereClause(s.Query), secCols) || len(secCols) == 0 && indexNameMentioned(sec, whereClause(s.Query))
	switch {
	case pat.Forced:
		fmt.Fprintf(&b, "(%d)'s FORCE INDEX(%s) makes it find its rows through %s, locking each %s record before the row's %s record, every time it runs.", s.Number, hint, sec, sec, pkIndex)
	case pat.ByID:
		fmt.Fprintf(&b, "(%d)'s SQL names its row by %s, yet it holds %s first: its plan went through %s (EXPLAIN it), which depends on the data, so it happens only sometimes.", s.Number, pk, sec, sec)
	case usesSec:
		why := sec + "'s columns"
		if len(secCols) == 0 {
			why = "a column " + sec + " is named after"
		}
		fmt.Fprintf(&b, "(%d) found its rows through the secondary index %s (its WHERE tests %s), locking each %s record before the row's %s record; whether the optimizer picks %s depends on the data, so EXPLAIN it under several distributions.", s.Number, sec, why, sec, pkIndex, sec)
	default:
		fmt.Fprintf(&b, "The report does not show why (%d) holds %s: its current statement's plan, or an earlier statement of the same transaction, took it.", s.Number, sec)
	}
	b.WriteString("\n")
	changes := setColumns(p.Query)
	inIdx := intersect(changes, secCols)
	switch {
	case len(inIdx) > 0:
		fmt.Fprintf(&b, "(%d) locked %s first and then needed %s because it changes %s, which %s holds.", p.Number, pkIndex, sec, strings.Join(inIdx, ", "), sec)
	case len(changes) > 0 && len(secCols) == 0 && indexNameHas(sec, changes):
		fmt.Fprintf(&b, "(%d) locked %s first and then needed %s because it changes a column of %s (it sets %s).", p.Number, pkIndex, sec, sec, strings.Join(changes, ", "))
	case stmtKind(p.Query) == "delete":
		fmt.Fprintf(&b, "(%d) locked %s first and then needed %s: a DELETE removes the row's entry from every index.", p.Number, pkIndex, sec)
	default:
		fmt.Fprintf(&b, "(%d) holds %s and needs %s.", p.Number, pkIndex, sec)
	}
	b.WriteString("\n")
	row := ""
	if pat.Row != "" {
		row = fmt.Sprintf(" (both of the row %s = %s)", pk, pat.Row)
		if pk == newKey {
			row = fmt.Sprintf(" (both of the row with hidden row id %s)", pat.Row)
		}
	}
	fmt.Fprintf(&b, "Each holds the record the other waits for%s. %s", row, d.victimText())
	pat.Explanation = b.String()

	where := whereClause(s.Query)
	var fix strings.Builder
	fix.WriteString(d.keyFix(tbl, pkIndex, pkRec, pk))
	switch {
	case pat.ByID:
		fmt.Fprintf(&fix, "Pin (%d) to the primary key: add FORCE INDEX(PRIMARY) to it, so it locks %s's row by %s before %s like (%d), and check with EXPLAIN that key=PRIMARY.", s.Number, tbl, pk, sec, p.Number)
	default:
		verb := strings.ToUpper(stmtKind(s.Query))
		if verb == "" || verb == "SELECT" || verb == "INSERT" {
			verb = "UPDATE/DELETE"
		}
		fmt.Fprintf(&fix, "Make (%d) lock in the same order as (%d): first read the target ids with a non-locking SELECT %s FROM %s", s.Number, p.Number, pk, bareTable(tbl))
		if where != "" {
			fmt.Fprintf(&fix, " WHERE %s", where)
		}
		fmt.Fprintf(&fix, " ORDER BY %s, then %s one row at a time by PRIMARY KEY in ascending %s order, re-checking the condition in each statement's WHERE and looking at rows affected.", pk, verb, pk)
		if pat.Forced {
			fmt.Fprintf(&fix, " (%d)'s FORCE INDEX(%s) is what makes it take %s first; pinning it to another index that (%d) does not change also fixes the order, until that index gains such a column.", s.Number, hint, sec, p.Number)
		}
	}
	fix.WriteString(retryNote)
	pat.Fix = fix.String()
	return pat
}

// holdText describes h by the record the other transaction waits for
// (rec) when h covers it, not by whichever record its bitmap lists first.
func holdText(h *Lock, index string, rec *Record) string {
	if h != nil {
		if h.Kind != TableLock && rec != nil {
			for _, hr := range h.Records {
				if hr.HeapNo == rec.HeapNo {
					return fmt.Sprintf("%s %s lock on %s of %s, %s", h.Mode, h.Kind, h.Index, h.Table, recText(hr))
				}
			}
		}
		return lockText(h)
	}
	return fmt.Sprintf("a lock on %s, %s", index, recText(rec))
}

// heldFor is x's hold that blocks the other transaction's wait: on its
// index, covering its record when one does.
func (d *detector) heldFor(x *Transaction) *Lock {
	var w *Lock
	for _, o := range d.r.Transactions {
		if o != x && o.Waits != nil {
			w = o.Waits
		}
	}
	if w == nil {
		return nil
	}
	for _, h := range x.Holds {
		if lockConflicts(h, w) {
			return h
		}
	}
	if w.Kind == TableLock {
		return nil
	}
	return heldOn(x, w.Table, w.Index)
}

// otherWaitRecord is the record the other transaction of a two-way
// deadlock waits for: the one x's hold matters by.
func (d *detector) otherWaitRecord(x *Transaction) *Record {
	for _, o := range d.r.Transactions {
		if o != x && o.Waits != nil {
			return firstRecord(o.Waits)
		}
	}
	return nil
}

func anyMentioned(text string, cols []string) bool {
	for _, c := range cols {
		if mentions(text, c) {
			return true
		}
	}
	return false
}

// indexNameMentioned: without the schema, an index named after a column
// (idx_status, jobs_queue_index) that the WHERE tests.
func indexNameMentioned(index, where string) bool {
	for _, w := range regexp.MustCompile(`[A-Za-z]\w*`).FindAllString(where, -1) {
		if len(w) >= 3 && strings.Contains(strings.ToLower(index), strings.ToLower(w)) && !isSQLWord(w) {
			return true
		}
	}
	return false
}

func indexNameHas(index string, cols []string) bool {
	for _, c := range cols {
		if len(c) >= 3 && strings.Contains(strings.ToLower(index), strings.ToLower(c)) {
			return true
		}
	}
	return false
}

func isSQLWord(w string) bool {
	switch strings.ToLower(w) {
	case "and", "not", "null", "like", "between", "exists", "select", "from", "where", "is":
		return true
	}
	return false
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		for _, y := range b {
			if strings.EqualFold(x, y) {
				out = append(out, x)
				break
			}
		}
	}
	return out
}

func (d *detector) oppositeRow(a, b *Transaction) *Pattern {
	w := a.Waits
	pat := &Pattern{Name: PatternOppositeRowOrder, Table: w.Table, Index: w.Index}
	cols := d.indexCols(w.Table, w.Index, firstRecord(w))
	var e strings.Builder
	fmt.Fprintf(&e, "Two transactions locked records of %s's index %s in opposite order.\n", w.Table, w.Index)
	for _, x := range []*Transaction{a, b} {
		h := d.heldFor(x)
		fmt.Fprintf(&e, "Transaction (%d) %s holds %s%s and waits for %s.\n", x.Number, quoteStmt(x.Query), holdText(h, w.Index, d.otherWaitRecord(x)), inferredNote(h), lockText(x.Waits))
	}
	fmt.Fprintf(&e, "Each locked one of the two records first and then needed the other's. %s", d.victimText())
	pat.Explanation = e.String()
	key := strings.Join(cols, ", ")
	noKey := d.keyFix(w.Table, w.Index, firstRecord(w), key)
	switch {
	case noKey != "" && key == "":
		key = newKey
	case key == "":
		key = "key of " + w.Index
	}
	tables := w.Table
	if b.Waits.Table != w.Table && !sameTable(w, b.Waits) {
		tables = w.Table + " and " + b.Waits.Table
		pat.Explanation = strings.Replace(pat.Explanation, fmt.Sprintf("Two transactions locked records of %s's index %s in opposite order.", w.Table, w.Index),
			fmt.Sprintf("Two transactions locked rows of %s in opposite order.", tables), 1)
		pat.Fix = noKey + fmt.Sprintf("Lock the rows of %s in one order in every transaction: always the same table first, and within a table in ascending key order (SELECT … FOR UPDATE the first table's rows before touching the second's).", tables) + retryNote
		return pat
	}
	if noKey != "" && key == newKey {
		pat.Fix = noKey + fmt.Sprintf("Then lock the rows of %s in one order in every transaction: sort the new key's values before the statements that lock them (ascending), or lock them all up front with one SELECT … FROM %s WHERE … ORDER BY the new key's columns FOR UPDATE before changing any.",
			w.Table, bareTable(w.Table)) + retryNote
		return pat
	}
	pat.Fix = noKey + fmt.Sprintf("Lock the rows of %s in one order in every transaction: sort the %s values before the statements that lock them (ascending %s), or lock them all up front with one SELECT … FROM %s WHERE … ORDER BY %s FOR UPDATE before changing any.",
		w.Table, key, key, bareTable(w.Table), key) + retryNote
	return pat
}

func (d *detector) gapInsert(a, b *Transaction) *Pattern {
	w := a.Waits
	pat := &Pattern{Name: PatternGapInsert, Table: w.Table, Index: w.Index}
	cols := d.indexCols(w.Table, w.Index, firstRecord(w))
	var e strings.Builder
	if b.Waits.Kind == InsertIntention {
		fmt.Fprintf(&e, "Both transactions wait to insert into a gap of %s's index %s that the other has locked.\n", w.Table, w.Index)
	} else {
		fmt.Fprintf(&e, "Transaction (%d) waits to insert into a gap of %s's index %s that (%d) has locked, while (%d) waits for a record of the same index that (%d) holds.\n", a.Number, w.Table, w.Index, b.Number, b.Number, a.Number)
	}
	for _, x := range []*Transaction{a, b} {
		h := d.heldFor(x)
		fmt.Fprintf(&e, "Transaction (%d) %s holds %s%s and waits for %s.\n", x.Number, quoteStmt(x.Query), holdText(h, w.Index, d.otherWaitRecord(x)), inferredNote(h), lockText(x.Waits))
	}
	fmt.Fprintf(&e, "A gap or next-key lock (taken in REPEATABLE READ by a locking read, UPDATE or DELETE that searched that range, often one that found no row) does not conflict with another one on the same gap, so several transactions can hold one; an insert intention must wait for every gap lock on its gap. %s", d.victimText())
	pat.Explanation = e.String()
	pat.Fix = d.keyFix(w.Table, w.Index, firstRecord(w), strings.Join(cols, ", "))
	pat.Fix += fmt.Sprintf("Do not lock a range of %s's %s %s to check that a row is absent before inserting it: INSERT directly and handle the duplicate-key error (or use INSERT … ON DUPLICATE KEY UPDATE) when %s is unique; or run these transactions at READ COMMITTED, where searches take no gap locks.",
		w.Table, w.Index, colList(cols, ""), colList(cols, "the key")) + retryNote
	return pat
}

func (d *detector) shareUpgrade(a, b *Transaction, rec *Record) *Pattern {
	w := a.Waits
	pat := &Pattern{Name: PatternShareUpgrade, Table: w.Table, Index: w.Index}
	pk := d.pkCol(w.Table, rec)
	var e strings.Builder
	fmt.Fprintf(&e, "Both transactions hold a shared (S) lock on %s of %s's %s and wait to upgrade it to exclusive (X).\n", recText(rec), w.Table, w.Index)
	for _, x := range []*Transaction{a, b} {
		h := d.heldFor(x)
		fmt.Fprintf(&e, "Transaction (%d) %s holds %s%s and waits for %s.\n", x.Number, quoteStmt(x.Query), holdText(h, w.Index, d.otherWaitRecord(x)), inferredNote(h), lockText(x.Waits))
	}
	fmt.Fprintf(&e, "An S lock lets the other S lock in but keeps any X out, so neither can go on. The S locks were taken earlier in each transaction — a SELECT … LOCK IN SHARE MODE / FOR SHARE, or a foreign-key check when a child row was written; the report does not show which. %s", d.victimText())
	pat.Explanation = e.String()
	pat.Fix = d.keyFix(w.Table, w.Index, rec, pk)
	pat.Fix += fmt.Sprintf("Take the exclusive lock first: when a transaction reads a row of %s that it will change, read it with SELECT … FROM %s WHERE %s = … FOR UPDATE instead of FOR SHARE / LOCK IN SHARE MODE; if the S lock comes from inserting child rows, lock the %s row FOR UPDATE before inserting them.",
		w.Table, bareTable(w.Table), pk, bareTable(w.Table)) + retryNote
	return pat
}

func (d *detector) duplicateKey(t *Transaction, l *Lock) *Pattern {
	pat := &Pattern{Name: PatternDuplicateKey, Table: l.Table, Index: l.Index}
	cols := d.indexCols(l.Table, l.Index, firstRecord(l))
	var e strings.Builder
	fmt.Fprintf(&e, "Transaction (%d) %s is an INSERT into %s that found a duplicate key on %s: InnoDB takes a shared (S) lock on the existing record to check it, here %s.\n", t.Number, quoteStmt(t.Query), l.Table, l.Index, lockText(l))
	for _, x := range d.r.Transactions {
		h := d.heldFor(x)
		fmt.Fprintf(&e, "Transaction (%d) %s holds %s%s and waits for %s.\n", x.Number, quoteStmt(x.Query), holdText(h, x.Waits.Index, d.otherWaitRecord(x)), inferredNote(h), lockText(x.Waits))
	}
	fmt.Fprintf(&e, "The S lock of a duplicate check is kept to the end of the transaction and blocks the other's X lock or insert on the same key (typically several sessions inserting the same key while another that inserted it rolls back or deletes it). %s", d.victimText())
	pat.Explanation = e.String()
	pat.Fix = fmt.Sprintf("Make inserting the same %s value into %s a single statement that cannot half-succeed: INSERT … ON DUPLICATE KEY UPDATE (or INSERT IGNORE) instead of INSERT-then-handle-the-error, and do not insert a key that another transaction may be deleting or re-inserting at the same time; or serialise the writers of one key by locking its parent or a row named for it FOR UPDATE first.",
		colList(cols, l.Index), bareTable(l.Table)) + retryNote
	return pat
}

func (d *detector) foreignKey(t *Transaction, l *Lock) *Pattern {
	child := stmtTable(t.Query)
	pat := &Pattern{Name: PatternForeignKey, Table: l.Table, Index: l.Index}
	pk := d.pkCol(l.Table, firstRecord(l))
	var e strings.Builder
	fmt.Fprintf(&e, "Transaction (%d) %s writes %s but waits for a shared (S) lock on %s's %s (%s): that is InnoDB checking a foreign key from %s to %s, which locks the parent row.\n", t.Number, quoteStmt(t.Query), child, l.Table, l.Index, recText(firstRecord(l)), child, bareTable(l.Table))
	for _, x := range d.r.Transactions {
		h := d.heldFor(x)
		if x.Waits.Kind == TableLock {
			h = nil
		}
		fmt.Fprintf(&e, "Transaction (%d) %s holds %s%s and waits for %s.\n", x.Number, quoteStmt(x.Query), holdText(h, x.Waits.Index, d.otherWaitRecord(x)), inferredNote(h), lockText(x.Waits))
	}
	e.WriteString(d.victimText())
	pat.Explanation = e.String()
	pat.Fix = d.keyFix(l.Table, l.Index, firstRecord(l), pk)
	pat.Fix += fmt.Sprintf("Lock the parent first: in transactions that write %s rows and also change the %s row they point to, SELECT … FROM %s WHERE %s = … FOR UPDATE before writing the children, so every such transaction takes the parent's lock first and in X mode.",
		child, bareTable(l.Table), bareTable(l.Table), pk) + retryNote
	return pat
}

// foreignKeyUpgrade is the S→X shape on a parent table whose children's
// foreign key (in the schema) explains the S locks.
func (d *detector) foreignKeyUpgrade(a, b *Transaction, rec *Record, child string) *Pattern {
	w := a.Waits
	pat := &Pattern{Name: PatternForeignKey, Table: w.Table, Index: w.Index}
	pk := d.pkCol(w.Table, rec)
	var e strings.Builder
	fmt.Fprintf(&e, "Both transactions hold a shared (S) lock on %s of %s's %s and wait to change that row (X).\n", recText(rec), w.Table, w.Index)
	for _, x := range []*Transaction{a, b} {
		h := d.heldFor(x)
		fmt.Fprintf(&e, "Transaction (%d) %s holds %s%s and waits for %s.\n", x.Number, quoteStmt(x.Query), holdText(h, w.Index, d.otherWaitRecord(x)), inferredNote(h), lockText(x.Waits))
	}
	fmt.Fprintf(&e, "The schema has a foreign key from %s to %s: writing to %s checks it by locking the parent row S, which is where these S locks most likely come from (the statements that took them are earlier in each transaction and not in the report). An S lock lets the other S in but keeps any X out, so neither UPDATE can go on. %s", bareTable(child), bareTable(w.Table), bareTable(child), d.victimText())
	pat.Explanation = e.String()
	pat.Fix = d.keyFix(w.Table, w.Index, rec, pk)
	pat.Fix += fmt.Sprintf("Lock the parent first: SELECT … FROM %s WHERE %s = … FOR UPDATE before writing the %s rows, so each transaction takes the %s row's lock in X mode before the foreign-key check would take it in S; or update the %s row before inserting its children.",
		bareTable(w.Table), pk, bareTable(child), bareTable(w.Table), bareTable(w.Table)) + retryNote
	return pat
}

func (d *detector) autoInc(t *Transaction) *Pattern {
	w := t.Waits
	pat := &Pattern{Name: PatternAutoInc, Table: w.Table}
	var e strings.Builder
	fmt.Fprintf(&e, "Transaction (%d) %s waits for the AUTO-INC table lock of %s.\n", t.Number, quoteStmt(t.Query), w.Table)
	for _, x := range d.r.Transactions {
		if x.Waits != nil && x != t {
			fmt.Fprintf(&e, "Transaction (%d) %s waits for %s.\n", x.Number, quoteStmt(x.Query), lockText(x.Waits))
		}
	}
	fmt.Fprintf(&e, "With innodb_autoinc_lock_mode 0 or 1, an INSERT whose row count is not known in advance (INSERT … SELECT, LOAD DATA, REPLACE … SELECT) holds %s's AUTO-INC lock until the statement ends, while it waits for row locks. %s", w.Table, d.victimText())
	pat.Explanation = e.String()
	pat.Fix = fmt.Sprintf("Set innodb_autoinc_lock_mode=2 (interleaved: no table lock; the default since MySQL 8.0, needs row-based binary logging), or run the bulk inserts into %s when no transaction holds row locks they need, in smaller batches with explicit ids.", w.Table) + retryNote
	return pat
}

func (d *detector) cycle() *Pattern {
	r := d.r
	c := cycle(r)
	if len(c) < 2 {
		c = nil
		for _, t := range r.Transactions {
			c = append(c, t.Number)
		}
	}
	pat := &Pattern{Name: PatternCycle, Cycle: c}
	tables := map[string]bool{}
	var e strings.Builder
	fmt.Fprintf(&e, "%d transactions wait for each other in a cycle: %s.\n", len(r.Transactions), cycleText(c))
	for i, n := range c {
		next := c[(i+1)%len(c)]
		t := r.Transaction(n)
		if t == nil || t.Waits == nil {
			continue
		}
		tables[t.Waits.Table] = true
		ed := r.edge(n, next)
		how := ""
		switch {
		case ed != nil && ed.Via == "report order":
			how = " [inferred from the order the report lists the cycle in]"
		case ed != nil && ed.Inferred:
			how = " [its hold is inferred: the report does not print it as held]"
		}
		fmt.Fprintf(&e, "(%d) %s waits for %s, held by (%d)%s.\n", n, quoteStmt(t.Query), lockText(t.Waits), next, how)
	}
	e.WriteString("No two of them alone deadlock; each waits for the next. " + d.victimText())
	pat.Explanation = e.String()
	var tl []string
	for t := range tables {
		tl = append(tl, t)
	}
	sort.Strings(tl)
	if len(tl) > 0 {
		pat.Table = tl[0]
	}
	pat.Fix = fmt.Sprintf("Make every transaction that touches %s take its locks in one global order: tables in a fixed order, and within a table by PRIMARY KEY ascending (read the ids with a non-locking SELECT first, then lock them in order); the records above are where today's orders cross.", strings.Join(tl, ", ")) + retryNote
	return pat
}

func cycleText(c []int) string {
	parts := make([]string, 0, len(c)+1)
	for _, n := range c {
		parts = append(parts, fmt.Sprintf("(%d)", n))
	}
	if len(c) > 0 {
		parts = append(parts, fmt.Sprintf("(%d)", c[0]))
	}
	return strings.Join(parts, " → ")
}

func (d *detector) tooDeep() *Pattern {
	r := d.r
	pat := &Pattern{Name: PatternTooDeep}
	var e strings.Builder
	e.WriteString("InnoDB gave up searching the waits-for graph (TOO DEEP OR LONG SEARCH: more than 200 transactions deep, or a million steps) and rolled back the transaction it was checking as if it were in a deadlock; there may be no real cycle.\n")
	for _, t := range r.Transactions {
		if t.Waits != nil {
			pat.Table, pat.Index = t.Waits.Table, t.Waits.Index
			fmt.Fprintf(&e, "Transaction (%d) %s waited for %s. The report prints no other transaction.", t.Number, quoteStmt(t.Query), lockText(t.Waits))
		}
	}
	pat.Explanation = e.String()
	where := "the same records"
	if pat.Table != "" {
		where = pat.Table
		if pat.Index != "" {
			where += "'s " + pat.Index
		}
	}
	pat.Fix = fmt.Sprintf("Too many transactions queue for locks on %s at once: shorten the transactions that lock it, spread hot rows (counters, a queue's head) over several rows, or lower the concurrency of writers to it; then see what they wait for with performance_schema.data_lock_waits / information_schema.INNODB_LOCK_WAITS.", where) + retryNote
	return pat
}
