package deadlock

import "fmt"

// inferHolds fills in the locks a report does not print as held, marked
// Inferred:
//   - MariaDB prints no HOLDS section: under a transaction's WAITING FOR
//     it prints CONFLICTING WITH, the other transaction's lock struct
//     with every record set in its bitmap on that page. The records that
//     block are those with the waited-for heap number.
//   - MySQL 5.7 and earlier print no HOLDS for transaction (1): in a
//     two-transaction deadlock it holds a lock on the record (2) waits for.
func inferHolds(r *Report) {
	fromConflicts(r)
	if len(r.Transactions) != 2 {
		return
	}
	for i, t := range r.Transactions {
		o := r.Transactions[1-i]
		if len(t.Holds) > 0 || len(t.Conflicts) > 0 || o.Waits == nil {
			continue
		}
		t.Holds = append(t.Holds, holdFromWait(t, o))
	}
}

// holdFromWait is what t must hold for o's wait to be blocked by it. The
// record and index are certain; the mode and kind are what the rest of
// the report allows: when both wait for the same record and o prints a
// lock on it, t's is the same kind as o's (two sessions doing the same
// thing); when both wait for X on it, t cannot hold X, so it holds S.
func holdFromWait(t, o *Transaction) *Lock {
	w := o.Waits
	h := copyLock(w)
	h.TrxID, h.Waiting, h.Inferred = t.TrxID, false, true
	h.InferredFrom = fmt.Sprintf("transaction (%d) waits for it and (%d) is the only other transaction", o.Number, t.Number)
	if w.Kind == TableLock {
		return h
	}
	// A clustered record whose DB_TRX_ID is t's id was written by t: t
	// holds it with an implicit X record lock.
	if isClusteredName(w.Index) && w.Kind != InsertIntention {
		if rec := firstRecord(w); rec != nil {
			for _, f := range rec.Fields {
				if f.Type == "trx_id" && f.Value == fmt.Sprint(t.TrxID) && t.TrxID != 0 {
					h.Mode, h.Kind = "X", RecNotGap
					h.InferredFrom = fmt.Sprintf("transaction (%d) waits for it and the record's DB_TRX_ID is (%d)'s id: (%d) wrote it", o.Number, t.Number, t.Number)
					return h
				}
			}
		}
	}
	tw := t.Waits
	if w.Kind == InsertIntention {
		// An insert intention waits only for a gap or next-key lock. A
		// holder that is itself scanning that index holds the kind its
		// own wait asks for; otherwise the least that blocks: a gap lock.
		if tw != nil && tw.Kind != TableLock && tw.Kind != InsertIntention && tw.Table == w.Table && tw.Index == w.Index && (tw.Kind == NextKey || tw.Kind == Gap) {
			h.Mode, h.Kind = tw.Mode, tw.Kind
			return h
		}
		// Both inserting into the same gap: they got there the same way,
		// so t holds what o prints holding on it.
		if tw != nil && tw.Kind == InsertIntention && (sameRecords(tw, w) || samePageNoRecords(tw, w)) {
			for _, oh := range o.Holds {
				if oh.Kind != TableLock && oh.Kind != InsertIntention && (sameRecords(oh, w) || samePageNoRecords(oh, w)) {
					h.Mode, h.Kind = oh.Mode, oh.Kind
					return h
				}
			}
		}
		h.Kind = Gap
		return h
	}
	sameRecord := tw != nil && tw.Kind != TableLock && (sameRecords(tw, w) || samePageNoRecords(tw, w))
	if sameRecord {
		for _, oh := range o.Holds {
			if oh.Kind != TableLock && (sameRecords(oh, w) || samePageNoRecords(oh, w)) {
				h.Mode, h.Kind = oh.Mode, oh.Kind
				return h
			}
		}
		if tw.Mode == "X" && w.Mode == "X" && tw.Kind != InsertIntention {
			h.Mode = "S"
			return h
		}
	}
	// A transaction whose id has the not-yet-assigned form (2^48 and
	// above, MySQL 5.6+) has changed no rows; waiting for S itself, it
	// is taking shared locks.
	if t.TrxID >= 1<<48 && tw != nil && tw.Mode == "S" {
		h.Mode = "S"
	}
	return h
}

// samePageNoRecords: two locks on one page of one index, neither printing
// its records (MySQL 5.5 often prints none): the same record as far as the
// report can tell.
func samePageNoRecords(a, b *Lock) bool {
	return sameTable(a, b) && a.Index == b.Index && a.Space == b.Space && a.Page == b.Page && len(a.Records) == 0 && len(b.Records) == 0
}

// sameTable: the same table, also when a paste anonymised one schema name
// and not the other (the space id and the table's own name agree).
func sameTable(a, b *Lock) bool {
	return a.Table == b.Table || a.Space != 0 && a.Space == b.Space && bareTable(a.Table) == bareTable(b.Table)
}

func copyLock(l *Lock) *Lock {
	c := *l
	c.Records = nil
	for _, r := range l.Records {
		rc := *r
		rc.Fields = append([]Field(nil), r.Fields...)
		c.Records = append(c.Records, &rc)
	}
	return &c
}

// sameRecords: a and b lock a common record (same page and heap number).
func sameRecords(a, b *Lock) bool {
	return commonRecord(a, b) != nil
}

func commonRecord(a, b *Lock) *Record {
	if !sameTable(a, b) || a.Index != b.Index || a.Space != b.Space || a.Page != b.Page {
		return nil
	}
	for _, x := range a.Records {
		for _, y := range b.Records {
			if x.HeapNo == y.HeapNo {
				return x
			}
		}
	}
	return nil
}

func fromConflicts(r *Report) {
	byTrx := make(map[uint64]*Transaction, len(r.Transactions))
	for _, t := range r.Transactions {
		byTrx[t.TrxID] = t
	}
	for _, t := range r.Transactions {
		w := t.Waits
		if w == nil {
			continue
		}
		waited := make(map[uint64]*Record, len(w.Records))
		for _, rec := range w.Records {
			waited[rec.HeapNo] = rec
		}
		for _, c := range t.Conflicts {
			holder := byTrx[c.TrxID]
			if holder == nil || holder == t || c.Table != w.Table {
				continue
			}
			from := fmt.Sprintf("CONFLICTING WITH under transaction (%d)'s wait", t.Number)
			if c.Kind == TableLock || w.Kind == TableLock {
				if c.Kind == TableLock && w.Kind == TableLock {
					h := *c
					h.Inferred, h.Waiting, h.InferredFrom, h.modeKnown = true, false, from, true
					holder.Holds = append(holder.Holds, &h)
				}
				continue
			}
			if c.Index != w.Index || c.Space != w.Space || c.Page != w.Page {
				continue
			}
			h := *c
			h.Inferred, h.Waiting, h.Records, h.InferredFrom, h.modeKnown = true, false, nil, from, true
			for _, rec := range c.Records {
				wr, ok := waited[rec.HeapNo]
				if !ok {
					continue
				}
				got := *rec
				// MariaDB sometimes prints only "Record lock, heap no N"
				// for the conflicting lock; the same heap number on the
				// same page is the same record, so take the fields from
				// the waiter's dump.
				if len(got.Fields) == 0 {
					got.Fields = append([]Field(nil), wr.Fields...)
				}
				h.Records = append(h.Records, &got)
			}
			if len(h.Records) > 0 {
				holder.Holds = append(holder.Holds, &h)
			}
		}
	}
}
