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
	for _, wn := range r.Warnings {
		ew.printf("warning: %s\n", wn)
	}
	ew.printf("Keys: %s\n", r.keysSource())
	for _, t := range r.Transactions {
		victim := ""
		if t.Number == r.Victim {
			victim = "  ← ROLLED BACK"
		}
		ew.printf("\nTransaction (%d)  trx %d", t.Number, t.TrxID)
		if t.TrxIDPrinted != "" {
			ew.printf(" (printed %s)", t.TrxIDPrinted)
		}
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
			if l.Inferred {
				src = "  [inferred: " + l.InferredFrom + "]"
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
	} else {
		ew.printf("\nVictim: not stated in the report\n")
	}
	if len(r.Graph) > 0 {
		ew.printf("\nWaits-for graph:\n")
		for _, e := range r.Graph {
			mark := ""
			if e.Inferred {
				mark = "  [inferred: " + e.Via + "]"
			}
			ew.printf("  (%d) → (%d)  waits for %s%s\n", e.From, e.To, e.describe(), mark)
		}
		if c := r.CycleString(); c != "" {
			ew.printf("  cycle: %s\n", c)
		}
	}
	if p := r.Pattern; p != nil {
		ew.printf("\nPattern: %s", p.Name)
		if p.Table != "" {
			ew.printf(" on %s", p.Table)
		}
		if p.Name == PatternOppositeIndexOrder {
			ew.printf(" (%s vs PRIMARY)", p.Secondary)
		} else if p.Index != "" {
			ew.printf(" (index %s)", p.Index)
		}
		ew.printf("\n")
		for _, ln := range strings.Split(p.Explanation, "\n") {
			ew.printf("  %s\n", ln)
		}
		ew.printf("Fix: %s\n", p.Fix)
	} else {
		ew.printf("\nPattern: not recognised (the locks above do not prove any of the known shapes; no fix is guessed)\n")
	}
	return ew.err
}

// keysSource says where the keys' column types came from and, when a
// schema source was given, why a table's were inferred all the same.
func (r *Report) keysSource() string {
	var missing string
	if n := len(r.TablesNotFound); n > 0 {
		missing = "table " + r.TablesNotFound[0] + " was"
		if n > 1 {
			missing = "tables " + strings.Join(r.TablesNotFound, ", ") + " were"
		}
	}
	switch {
	case r.SchemaSource != "" && missing != "":
		return fmt.Sprintf("column types from the %s; %s not found there (dropped or renamed since the deadlock?), so its keys are inferred from the bytes", r.SchemaSource, missing)
	case r.SchemaSource != "":
		return "column types from the " + r.SchemaSource
	case missing != "":
		return fmt.Sprintf("column types inferred from the bytes: %s not found in the %s (dropped or renamed since the deadlock?)", missing, r.lookedIn)
	case r.foundDefs:
		return fmt.Sprintf("column types inferred from the bytes: the %s's definitions do not match the report's indexes or records (changed since the deadlock?)", r.lookedIn)
	case r.lookedIn != "":
		return "column types inferred from the bytes"
	}
	return "column types inferred from the bytes (give --schema or --dsn for exact values)"
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
		for _, n := range rec.notes() {
			ew.printf("               note: %s\n", n)
		}
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
			ew.printf("    seen %s … %s\n", g.First, g.Last)
		}
		for _, s := range g.Statements {
			ew.printf("    %s   (rolled back %d×)\n", s, g.Victims[s])
		}
		if p := g.Example.Pattern; p != nil {
			if p.Name == PatternOppositeIndexOrder {
				if t := g.Example.Transaction(p.SecondaryFirst); t != nil {
					ew.printf("    took %s before PRIMARY: %s\n", p.Secondary, Shape(t.Query))
				}
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
