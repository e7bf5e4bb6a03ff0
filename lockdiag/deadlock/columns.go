package deadlock

import "fmt"

// ColumnsFunc names the fields of an index's records: for PRIMARY the key
// columns, then DB_TRX_ID and DB_ROLL_PTR, then the other columns; for a
// secondary index its columns, then the primary key's. table is
// "schema.table".
type ColumnsFunc func(table, index string) ([]string, error)

// NameFields names every decoded field of the reports through cols, asking
// once per (table, index). A field beyond the names it returns keeps its
// position as its only name.
func NameFields(reports []*Report, cols ColumnsFunc) error {
	type key struct{ table, index string }
	cache := map[key][]string{}
	for _, r := range reports {
		for _, t := range r.Transactions {
			for _, l := range t.allLocks() {
				if l.Kind == TableLock {
					continue
				}
				k := key{l.Table, l.Index}
				names, ok := cache[k]
				if !ok {
					var err error
					if names, err = cols(l.Table, l.Index); err != nil {
						return fmt.Errorf("deadlock: columns of %s index %s: %w", l.Table, l.Index, err)
					}
					cache[k] = names
				}
				for _, rec := range l.Records {
					if rec.Supremum {
						continue
					}
					for i := range rec.Fields {
						if i < len(names) {
							rec.Fields[i].Name = names[i]
						}
					}
				}
			}
		}
		if r.Pattern != nil {
			// The explanation quotes records; rebuild it with names.
			r.Pattern = detectPattern(r)
		}
	}
	return nil
}
