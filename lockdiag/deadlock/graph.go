package deadlock

import (
	"fmt"
	"strings"
)

// Edge is one arc of the waits-for graph: transaction From waits for a
// lock that To holds.
type Edge struct {
	From int `json:"from"`
	To   int `json:"to"`
	// What From waits for: table, index, mode, kind and the record's key.
	Table  string `json:"table"`
	Index  string `json:"index,omitempty"`
	Mode   string `json:"mode"`
	Kind   Kind   `json:"kind"`
	Record string `json:"record,omitempty"`
	// Inferred: no lock the report prints as held by To matches the wait.
	// Via says what the edge rests on: "held lock" (printed), "inferred
	// hold" (MariaDB's CONFLICTING WITH, MySQL 5.7's missing HOLDS), or
	// "report order" (the report is a cycle: the only other transaction,
	// or the order InnoDB lists the cycle in).
	Inferred bool   `json:"inferred,omitempty"`
	Via      string `json:"via"`
}

// buildGraph finds, for each waiting transaction, who holds a lock that
// conflicts with what it waits for.
func buildGraph(r *Report) []*Edge {
	var out []*Edge
	n := len(r.Transactions)
	for i, t := range r.Transactions {
		w := t.Waits
		if w == nil {
			continue
		}
		base := Edge{From: t.Number, Table: w.Table, Index: w.Index, Mode: w.Mode, Kind: w.Kind}
		if rec := firstRecord(w); rec != nil {
			base.Record = rec.Key()
		}
		found := false
		for _, o := range r.Transactions {
			if o == t || !blocks(o, w) {
				continue
			}
			e := base
			e.To = o.Number
			e.Inferred = allInferred(o, w)
			e.Via = "held lock"
			if e.Inferred {
				e.Via = "inferred hold"
			}
			out = append(out, &e)
			found = true
		}
		if !found && n >= 2 {
			// The report is a cycle: with two transactions the other one
			// blocks; with more, InnoDB prints them in cycle order.
			e := base
			e.To, e.Inferred, e.Via = r.Transactions[(i+1)%n].Number, true, "report order"
			out = append(out, &e)
		}
	}
	return out
}

// blocks: o holds a lock that conflicts with w.
func blocks(o *Transaction, w *Lock) bool {
	for _, h := range o.Holds {
		if lockConflicts(h, w) {
			return true
		}
	}
	return false
}

func allInferred(o *Transaction, w *Lock) bool {
	for _, h := range o.Holds {
		if lockConflicts(h, w) && !h.Inferred {
			return false
		}
	}
	return true
}

// lockConflicts is InnoDB's compatibility rule for held h and waited w.
func lockConflicts(h, w *Lock) bool {
	if !sameTable(h, w) {
		return false
	}
	if w.Kind == TableLock || h.Kind == TableLock {
		return w.Kind == TableLock && h.Kind == TableLock && tableModesConflict(h.Mode, w.Mode)
	}
	if commonRecord(h, w) == nil {
		return false
	}
	switch w.Kind {
	case InsertIntention:
		return h.Kind == Gap || h.Kind == NextKey
	case Gap:
		return false
	}
	if h.Kind == Gap || h.Kind == InsertIntention {
		return false
	}
	return h.Mode == "X" || w.Mode == "X"
}

func tableModesConflict(a, b string) bool {
	ok := map[string]string{"IS": "IS IX S AUTO-INC", "IX": "IS IX AUTO-INC", "S": "IS S", "X": "", "AUTO-INC": "IS IX"}
	compat, known := ok[a]
	if !known {
		return true
	}
	for _, m := range strings.Fields(compat) {
		if m == b {
			return false
		}
	}
	return true
}

func firstRecord(l *Lock) *Record {
	if l == nil || len(l.Records) == 0 {
		return nil
	}
	return l.Records[0]
}

// cycle returns the transactions of a cycle in the graph, in order, or
// nil. With several, the one through the lowest-numbered transaction.
func cycle(r *Report) []int {
	next := map[int][]int{}
	for _, e := range r.Graph {
		next[e.From] = append(next[e.From], e.To)
	}
	// Depth-first search with the usual three colours: each node and
	// edge is visited once, whatever the graph.
	done := map[int]bool{}
	on := map[int]int{}
	var path []int
	var dfs func(n int) []int
	dfs = func(n int) []int {
		if i, ok := on[n]; ok {
			return append([]int(nil), path[i:]...)
		}
		if done[n] {
			return nil
		}
		on[n] = len(path)
		path = append(path, n)
		for _, m := range next[n] {
			if c := dfs(m); c != nil {
				return c
			}
		}
		path = path[:len(path)-1]
		delete(on, n)
		done[n] = true
		return nil
	}
	for _, t := range r.Transactions {
		if c := dfs(t.Number); c != nil {
			return c
		}
	}
	return nil
}

// edge returns the first edge from a to b.
func (r *Report) edge(a, b int) *Edge {
	for _, e := range r.Graph {
		if e.From == a && e.To == b {
			return e
		}
	}
	return nil
}

// CycleString prints the cycle as (1) → (2) → (3) → (1).
func (r *Report) CycleString() string {
	c := cycle(r)
	if c == nil {
		return ""
	}
	parts := make([]string, 0, len(c)+1)
	for _, n := range c {
		parts = append(parts, fmt.Sprintf("(%d)", n))
	}
	parts = append(parts, fmt.Sprintf("(%d)", c[0]))
	return strings.Join(parts, " → ")
}

func (e *Edge) describe() string {
	s := fmt.Sprintf("%s %s on %s of %s", e.Mode, e.Kind, e.Index, e.Table)
	if e.Kind == TableLock {
		s = fmt.Sprintf("table lock %s on %s", e.Mode, e.Table)
	}
	if e.Record != "" {
		s += ", record " + e.Record
	}
	return s
}
