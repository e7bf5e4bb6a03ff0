package deadlock

import (
	"fmt"
	"io"
	"strings"
)

// maxRecords bounds how many records of one lock the text output lists;
// a range scan's lock can hold hundreds.
const maxRecords = 6

// WriteText writes a readable account of one report.
func (r *Report) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	when := ""
	if r.Time != "" {
		when = ", " + strings.Join(strings.Fields(r.Time), " ")
	}
	ew.printf("Deadlock (%s report, line %d%s)\n", r.Format, r.Line, when)
	for _, t := range r.Transactions {
		victim := ""
		if t.Number == r.Victim {
			victim = "  ← ROLLED BACK"
		}
		ew.printf("\nTransaction (%d)  trx %d", t.Number, t.TrxID)
		if t.ThreadID != 0 {
			ew.printf(", thread %d", t.ThreadID)
		}
		if t.RowLocks != 0 {
			ew.printf(", %d row lock(s)", t.RowLocks)
		}
		if t.Isolation != "" {
			ew.printf(", %s", t.Isolation)
		}
		ew.printf("%s\n", victim)
		q := t.Query
		if q == "" {
			q = "(not shown)"
		}
		ew.printf("  statement: %s\n", strings.ReplaceAll(q, "\n", "\n             "))
		if len(t.Holds) == 0 {
			ew.printf("  holds:     (not shown in the report)\n")
		}
		for _, l := range t.Holds {
			src := ""
			if l.Derived {
				src = "  [from the other transaction's CONFLICTING WITH]"
			}
			ew.printf("  holds:     %s%s\n", l.describe(), src)
			writeRecords(ew, l)
		}
		if t.Waits != nil {
			ew.printf("  waits for: %s\n", t.Waits.describe())
			writeRecords(ew, t.Waits)
		}
	}
	if v := r.Transaction(r.Victim); v != nil {
		ew.printf("\nVictim: (%d) %s\n", v.Number, quoteStmt(v.Query))
	}
	if p := r.Pattern; p != nil {
		ew.printf("\nPattern: %s on %s (%s vs PRIMARY)\n", p.Name, p.Table, p.Secondary)
		for _, ln := range strings.Split(p.Explanation, "\n") {
			ew.printf("  %s\n", ln)
		}
		ew.printf("Fix: %s\n", p.Fix)
	} else {
		ew.printf("\nPattern: none recognised (not the same two indexes of one table in opposite order)\n")
	}
	return ew.err
}

func (l *Lock) describe() string {
	if l.Kind == TableLock {
		return fmt.Sprintf("table lock %s on %s", l.Mode, l.Table)
	}
	return fmt.Sprintf("%s of %s, %s %s", l.Index, l.Table, l.Mode, l.Kind)
}

func writeRecords(ew *errWriter, l *Lock) {
	for i, rec := range l.Records {
		if i == maxRecords {
			ew.printf("             … and %d more record(s)\n", len(l.Records)-maxRecords)
			return
		}
		ew.printf("             heap no %d: %s\n", rec.HeapNo, rec.String())
	}
}

// WriteAggregate writes groups as a table of counts followed by each
// group's explanation.
func WriteAggregate(w io.Writer, total int, groups []*Group) error {
	ew := &errWriter{w: w}
	ew.printf("%d deadlock(s) in %d group(s), most frequent first\n", total, len(groups))
	for i, g := range groups {
		ew.printf("\n#%d  %d×  table %s, indexes %s", i+1, g.Count, g.Table, strings.Join(g.Indexes, " ↔ "))
		if g.Pattern != "" {
			ew.printf("  [%s]", g.Pattern)
		}
		ew.printf("\n")
		if g.First != "" {
			ew.printf("    seen %s … %s\n", strings.Join(strings.Fields(g.First), " "), strings.Join(strings.Fields(g.Last), " "))
		}
		for _, s := range g.Statements {
			ew.printf("    %s   (rolled back %d×)\n", s, g.Victims[s])
		}
		if p := g.Example.Pattern; p != nil {
			if t := g.Example.Transaction(p.SecondaryFirst); t != nil {
				ew.printf("    took %s before PRIMARY: %s\n", p.Secondary, Shape(t.Query))
			}
			ew.printf("    fix (numbers as in the first occurrence below): %s\n", p.Fix)
		}
	}
	return ew.err
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
