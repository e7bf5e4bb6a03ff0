package deadlock

// deriveHolds rebuilds what each MariaDB transaction holds. MariaDB prints
// no HOLDS section: under a transaction's WAITING FOR it prints CONFLICTING
// WITH, the other transaction's lock struct with every record set in its
// bitmap on that page. The records that actually block are those with the
// waited-for heap number, held by the trx id named on the conflicting lock.
func deriveHolds(r *Report) {
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
			if c.Kind == TableLock || w.Kind == TableLock {
				if c.Kind == TableLock && w.Kind == TableLock {
					h := *c
					h.Derived, h.Waiting = true, false
					holder.Holds = append(holder.Holds, &h)
				}
				continue
			}
			if c.Index != w.Index || c.Space != w.Space || c.Page != w.Page {
				continue
			}
			h := *c
			h.Derived, h.Waiting, h.Records = true, false, nil
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
