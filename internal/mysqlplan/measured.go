package mysqlplan

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// MySQL's measured plans name an access by its operation, "Index range
// scan on j using lockstep_jobs_claim over (…)", "Single-row index lookup
// on t using PRIMARY (id = 1)", "Table scan on t"; the table is the alias
// the statement gives it, as in the classic table's table column.
var (
	treeLineRE  = regexp.MustCompile(`^\s*-> (.*)$`)
	treeUsingRE = regexp.MustCompile(`^[A-Za-z][A-Za-z ()-]*? on (\S+) using (\S+)`)
	treeScanRE  = regexp.MustCompile(`^Table scan on (\S+)`)
	treeEstRE   = regexp.MustCompile(`\(cost=\S+ rows=([0-9.eE+-]+)\)`)
	// Actual rows are per loop, like MariaDB's r_rows; 8.x prints whole
	// numbers, 9.x fractions and exponents (time=109e-6..109e-6).
	treeActualRE = regexp.MustCompile(`\(actual time=\S+ rows=([0-9.eE+-]+) loops=(\d+)\)`)
)

// treeReads reads the table accesses of EXPLAIN ANALYZE's TREE text.
func treeReads(text string) ([]read, error) {
	var out []read
	lines := 0
	for _, line := range strings.Split(text, "\n") {
		m := treeLineRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		lines++
		node := m[1]
		op := node
		if i := strings.Index(op, "  (cost="); i >= 0 {
			op = op[:i]
		} else if i := strings.Index(op, " (actual "); i >= 0 {
			op = op[:i]
		} else if i := strings.Index(op, " (never executed)"); i >= 0 {
			op = op[:i]
		}
		rd := read{op: op}
		if u := treeUsingRE.FindStringSubmatch(op); u != nil {
			rd.table, rd.index = unquote(u[1]), unquote(u[2])
		} else if s := treeScanRE.FindStringSubmatch(op); s != nil {
			rd.table = unquote(s[1])
		} else {
			continue
		}
		if strings.HasPrefix(rd.table, "<") {
			continue // <temporary>, <union1,2>: the server's own tables
		}
		if e := treeEstRE.FindStringSubmatch(node); e != nil {
			rd.est, _ = strconv.ParseFloat(e[1], 64)
		}
		// "(never executed)" leaves rows at 0: nothing was read.
		if a := treeActualRE.FindStringSubmatch(node); a != nil {
			rd.rows, _ = strconv.ParseFloat(a[1], 64)
		}
		out = append(out, rd)
	}
	if lines == 0 {
		return nil, fmt.Errorf("mysqlplan: EXPLAIN ANALYZE printed no plan tree: %.200q", text)
	}
	return out, nil
}

// jsonReads reads the table accesses of EXPLAIN ANALYZE FORMAT=JSON
// (explain_json_format_version=2): nodes with a table_name, an
// index_name unless they scan the table, and actual_rows per loop.
func jsonReads(text string) ([]read, error) {
	var doc any
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		return nil, fmt.Errorf("mysqlplan: parse EXPLAIN ANALYZE FORMAT=JSON: %w", err)
	}
	top, _ := doc.(map[string]any)
	if _, ok := top["query_plan"]; !ok {
		return nil, fmt.Errorf("mysqlplan: EXPLAIN ANALYZE FORMAT=JSON has no query_plan: %.200q", text)
	}
	var out []read
	var walk func(v any)
	walk = func(v any) {
		switch n := v.(type) {
		case map[string]any:
			if name, ok := n["table_name"].(string); ok {
				rd := read{table: name}
				if alias, ok := n["alias"].(string); ok && alias != "" {
					rd.table = alias
				}
				rd.index, _ = n["index_name"].(string)
				rd.op, _ = n["operation"].(string)
				rd.est, _ = n["estimated_rows"].(float64)
				// A node that never ran has no actual_rows: it read nothing.
				rd.rows, _ = n["actual_rows"].(float64)
				if !strings.HasPrefix(rd.table, "<") {
					out = append(out, rd)
				}
			}
			// Keys in order: the accesses come out in the same order
			// every time.
			for _, k := range slices.Sorted(maps.Keys(n)) {
				walk(n[k])
			}
		case []any:
			for _, c := range n {
				walk(c)
			}
		}
	}
	walk(top["query_plan"])
	return out, nil
}

func unquote(s string) string { return strings.Trim(s, "`") }
