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
	tw := t.Waits
	sameRecord := tw != nil && tw.Kind != TableLock && sameRecords(tw, w)
	if sameRecord {
		for _, oh := range o.Holds {
			if oh.Kind != TableLock && sameRecords(oh, w) {
				h.Mode, h.Kind = oh.Mode, oh.Kind
				return h
			}
		}
		if tw.Mode == "X" && w.Mode == "X" && w.Kind != InsertIntention && tw.Kind != InsertIntention {
			h.Mode = "S"
			return h
		}
	}
	if w.Kind == InsertIntention {
		// An insert intention waits only for a gap or next-key lock.
		for _, oh := range o.Holds {
			if oh.Kind == Gap || oh.Kind == NextKey {
				if oh.Table == w.Table && oh.Index == w.Index {
					h.Mode, h.Kind = oh.Mode, oh.Kind
					return h
				}
			}
		}
		h.Kind = Gap
	}
	return h
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
	if a.Table != b.Table || a.Index != b.Index || a.Space != b.Space || a.Page != b.Page {
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
					h.Inferred, h.Waiting, h.InferredFrom = true, false, from
					holder.Holds = append(holder.Holds, &h)
				}
				continue
			}
			if c.Index != w.Index || c.Space != w.Space || c.Page != w.Page {
				continue
			}
			h := *c
			h.Inferred, h.Waiting, h.Records, h.InferredFrom = true, false, nil, from
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
