package deadlock

import (
	"regexp"
	"strings"
)

// Pattern names. A report gets one of them only when its locks prove the
// shape; otherwise it is not recognised (Report.Pattern is nil), never
// given a wrong name.
const (
	PatternOppositeIndexOrder = "opposite-index-order"
	PatternOppositeRowOrder   = "opposite-row-order"
	PatternGapInsert          = "gap-insert-intention"
	PatternShareUpgrade       = "share-upgrade"
	PatternDuplicateKey       = "duplicate-key-share"
	PatternForeignKey         = "foreign-key-parent"
	PatternAutoInc            = "auto-inc"
	PatternCycle              = "cycle"
	PatternTooDeep            = "too-deep"
	PatternNotRecognised      = "not-recognised"
)

// Pattern is a recognised deadlock shape, explained.
type Pattern struct {
	Name  string `json:"name"`
	Table string `json:"table"`
	// Index is the index the pattern is about; for opposite-index-order
	// Secondary is the secondary index locked against PRIMARY.
	Index     string `json:"index,omitempty"`
	Secondary string `json:"secondary_index,omitempty"`
	// SecondaryFirst holds the secondary index's record and waits for
	// PRIMARY; PrimaryFirst holds PRIMARY and waits for the secondary.
	SecondaryFirst int `json:"secondary_first,omitempty"`
	PrimaryFirst   int `json:"primary_first,omitempty"`
	// Row is the primary-key value both records belong to, when the two
	// waits name the same row.
	Row string `json:"row,omitempty"`
	// ByID: the secondary-first statement names its row by primary key,
	// so its plan, not its SQL, chose the secondary index.
	ByID bool `json:"by_id,omitempty"`
	// Forced: the secondary-first statement forces that index.
	Forced bool `json:"forced,omitempty"`
	// Cycle is the waits-for cycle, transaction numbers in order.
	Cycle       []int  `json:"cycle,omitempty"`
	Explanation string `json:"explanation"`
	Fix         string `json:"fix"`
}

// detector holds what the pattern code looks up: the report and the
// tables' definitions when there is a schema.
type detector struct {
	r      *Report
	src    SchemaSource
	tables map[string]*Table
}

func (d *detector) table(name string) *Table {
	if d.src == nil {
		return nil
	}
	if t, ok := d.tables[name]; ok {
		return t
	}
	t, err := lookupDef(d.src, name)
	if err != nil {
		t = nil
	}
	d.tables[name] = t
	return t
}

func detectPattern(r *Report, src SchemaSource) *Pattern {
	d := &detector{r: r, src: src, tables: map[string]*Table{}}
	p := d.detect()
	if p != nil && len(p.Cycle) == 0 {
		p.Cycle = cycle(r)
	}
	return p
}

func (d *detector) detect() *Pattern {
	r := d.r
	if r.TooDeep {
		return d.tooDeep()
	}
	if len(r.Transactions) >= 3 {
		return d.cycle()
	}
	if len(r.Transactions) != 2 {
		return nil
	}
	a, b := r.Transactions[0], r.Transactions[1]
	if a.Waits == nil || b.Waits == nil {
		return nil
	}
	for _, t := range r.Transactions {
		if t.Waits.Mode == "AUTO-INC" {
			return d.autoInc(t)
		}
	}
	for _, t := range r.Transactions {
		if l := d.duplicateKeyLock(t); l != nil {
			return d.duplicateKey(t, l)
		}
	}
	for _, t := range r.Transactions {
		if l := d.foreignKeyLock(t); l != nil {
			return d.foreignKey(t, l)
		}
	}
	// The rest need each to wait for the other.
	if r.edge(a.Number, b.Number) == nil || r.edge(b.Number, a.Number) == nil {
		return nil
	}
	wa, wb := a.Waits, b.Waits
	if wa.Kind == TableLock || wb.Kind == TableLock {
		return nil
	}
	// Without the records the report cannot show which record each
	// waits for, so none of the record shapes is proved.
	if len(wa.Records) == 0 || len(wb.Records) == 0 {
		return nil
	}
	if wa.Kind == InsertIntention || wb.Kind == InsertIntention {
		// An insert waits for a gap or next-key lock the other holds on
		// the same index, while the other waits on that index too.
		if sameTable(wa, wb) && wa.Index == wb.Index {
			if wa.Kind != InsertIntention {
				a, b = b, a
			}
			return d.gapInsert(a, b)
		}
		return nil
	}
	if rec := commonRecord(wa, wb); rec != nil {
		if holdsMode(a, wa, "S") && holdsMode(b, wb, "S") {
			if child := d.referencedBy(wa.Table); child != "" {
				return d.foreignKeyUpgrade(a, b, rec, child)
			}
			return d.shareUpgrade(a, b, rec)
		}
		return nil
	}
	if !sameTable(wa, wb) {
		return d.oppositeRow(a, b)
	}
	if wa.Index != wb.Index {
		s, p := a, b
		if isClusteredName(s.Waits.Index) == isClusteredName(p.Waits.Index) {
			// Two secondary indexes: still opposite orders on one table.
			return d.oppositeIndex(s, p)
		}
		if !isClusteredName(s.Waits.Index) {
			s, p = p, s
		}
		return d.oppositeIndex(s, p)
	}
	return d.oppositeRow(a, b)
}

// holdsMode: t holds a lock of mode on the record w waits for.
func holdsMode(t *Transaction, w *Lock, mode string) bool {
	for _, h := range t.Holds {
		if h.Kind != TableLock && h.Mode == mode && sameRecords(h, w) {
			return true
		}
	}
	return false
}

// duplicateKeyLock: an INSERT that holds or waits for a shared lock on an
// index of the table it inserts into. A plain INSERT takes an S lock only
// to check a duplicate key on a unique index, so the lock proves it.
func (d *detector) duplicateKeyLock(t *Transaction) *Lock {
	// REPLACE and INSERT … ON DUPLICATE KEY UPDATE lock a duplicate X,
	// and INSERT … SELECT reads its source with S locks: only a plain
	// INSERT (or INSERT IGNORE) proves a duplicate check by an S lock.
	if stmtKind(t.Query) != "insert" || reInsSelect.MatchString(t.Query) || reOnDup.MatchString(t.Query) {
		return nil
	}
	locks := append([]*Lock{t.Waits}, t.Holds...)
	for _, l := range locks {
		if l.Kind == TableLock || l.Kind == InsertIntention || l.Mode != "S" || !writesTable(t.Query, l.Table) {
			continue
		}
		if l.Inferred && !l.modeKnown {
			continue // an inferred mode is not proof
		}
		if len(l.Records) == 0 && !d.allInsertInto(l.Table) {
			// No record printed: only when every transaction inserts
			// into that table is the S lock surely the duplicate check.
			continue
		}
		if tab := d.table(l.Table); tab != nil {
			if ix := tab.Index(l.Index); ix != nil && !ix.Unique && !ix.Primary {
				continue
			}
		}
		return l
	}
	return nil
}

var reOnDup = regexp.MustCompile(`(?i)\bON\s+DUPLICATE\s+KEY\b`)

func (d *detector) allInsertInto(table string) bool {
	for _, t := range d.r.Transactions {
		if stmtKind(t.Query) != "insert" || !writesTable(t.Query, table) {
			return false
		}
	}
	return true
}

// referencedBy names a table whose foreign key references table, when the
// schema says so ("" without a schema, or when none does).
func (d *detector) referencedBy(table string) string {
	rs, ok := d.src.(ReferenceSource)
	if d.src == nil || !ok {
		return ""
	}
	children, err := rs.ReferencedBy(table)
	if err != nil || len(children) == 0 {
		return ""
	}
	return children[0]
}

// foreignKeyLock: a lock on another table than the one t's statement
// writes, in shared mode: InnoDB's check of a foreign key locks the parent
// record S. The schema, when given, must agree.
func (d *detector) foreignKeyLock(t *Transaction) *Lock {
	k := stmtKind(t.Query)
	if k != "insert" && k != "update" && k != "delete" && k != "replace" {
		return nil
	}
	child := stmtTable(t.Query)
	l := t.Waits
	if l.Kind == TableLock || l.Kind == InsertIntention || l.Mode != "S" || child == "" || bareTable(l.Table) == child {
		return nil
	}
	// A statement that names the locked table reads it itself (a join, a
	// subquery, INSERT … SELECT): its S lock proves nothing about a key.
	if mentions(t.Query, bareTable(l.Table)) || reInsSelect.MatchString(t.Query) {
		return nil
	}
	if tab := d.childDef(l.Table, child); tab != nil && !references(tab, l.Table) {
		return nil
	}
	return l
}

// childDef is the child table's definition, if the schema has it.
func (d *detector) childDef(parent, child string) *Table {
	db, _, ok := strings.Cut(parent, ".")
	name := child
	if ok {
		name = db + "." + child
	}
	return d.table(name)
}

func references(tab *Table, parent string) bool {
	for _, fk := range tab.ForeignKeys {
		if bareTable(fk.RefTable) == bareTable(parent) {
			return true
		}
	}
	return false
}
