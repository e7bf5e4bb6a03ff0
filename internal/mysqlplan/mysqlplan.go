// Package mysqlplan reads a statement's plan on MySQL and MariaDB as the
// same facts: one row per table access, with the classic EXPLAIN columns
// (id, select_type, table, type, possible_keys, key, key_len, ref, rows,
// Extra), and, when the statement is run under ANALYZE, the rows each
// access really read.
//
// The servers disagree on how to ask. MariaDB prints the classic table for
// a bare EXPLAIN and measures with ANALYZE (r_rows). MySQL 8.4 printed the
// classic table by default, but 9.x prints TREE, whose EXPLAIN of an UPDATE
// is one row "-> <not executable by iterator executor>", and its JSON
// (explain_json_format_version=2) says no more; MySQL is therefore always
// asked EXPLAIN FORMAT=TRADITIONAL, which 8.0 and later know. MySQL measures
// with EXPLAIN ANALYZE (8.0.18+; MariaDB's ANALYZE is a syntax error there):
// a tree of text, or JSON on 9.x with explain_json_format_version=2. Which
// server it is comes from the server (Detect), never from the caller.
//
// It is internal: the shape of what servers print changes from release to
// release, and the public lock diagnostics (lockdiag/locktest) and the lab
// read plans through it without promising its types to anyone.
package mysqlplan

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/lockstep-queue/lockstep/internal/sqlrows"
)

// Querier is a *sql.DB, *sql.Tx or *sql.Conn. Analyze runs the statement,
// so callers pass a transaction they roll back.
type Querier = sqlrows.Querier

// Server is the MySQL-family server whose plans are read.
type Server struct {
	// Version is what SELECT VERSION() printed.
	Version string
	// MariaDB is true for MariaDB, false for Oracle MySQL (and servers
	// that print its version, such as Percona Server).
	MariaDB bool
	// Major, Minor and Patch are the version's numbers.
	Major, Minor, Patch int
	// AnalyzeJSON is true where EXPLAIN ANALYZE FORMAT=JSON works: MySQL
	// 9.x whose explain_json_format_version is 2 (its default there).
	// Otherwise MySQL's measurements come from the TREE text.
	AnalyzeJSON bool
}

// notExecutable is what MySQL prints for a plan its iterator executor
// cannot run (9.x: every single-table UPDATE and DELETE under TREE).
const notExecutable = "<not executable by iterator executor>"

var versionRE = regexp.MustCompile(`^(\d+)\.(\d+)(?:\.(\d+))?`)

// Detect asks the server what it is.
func Detect(ctx context.Context, q Querier) (Server, error) {
	v, err := scalar(ctx, q, "SELECT VERSION()")
	if err != nil {
		return Server{}, fmt.Errorf("mysqlplan: read server version: %w", err)
	}
	s, err := parseVersion(v)
	if err != nil {
		return Server{}, err
	}
	if !s.MariaDB && s.Major >= 9 {
		f, err := scalar(ctx, q, "SELECT @@explain_json_format_version")
		if err != nil {
			return Server{}, fmt.Errorf("mysqlplan: read explain_json_format_version: %w", err)
		}
		s.AnalyzeJSON = f == "2"
	}
	return s, nil
}

func parseVersion(v string) (Server, error) {
	m := versionRE.FindStringSubmatch(v)
	if m == nil {
		return Server{}, fmt.Errorf("mysqlplan: cannot read server version %q", v)
	}
	s := Server{Version: v, MariaDB: strings.Contains(strings.ToLower(v), "mariadb")}
	s.Major, _ = strconv.Atoi(m[1])
	s.Minor, _ = strconv.Atoi(m[2])
	s.Patch, _ = strconv.Atoi(m[3])
	return s, nil
}

func (s Server) atLeast(major, minor, patch int) bool {
	if s.Major != major {
		return s.Major > major
	}
	if s.Minor != minor {
		return s.Minor > minor
	}
	return s.Patch >= patch
}

func (s Server) String() string {
	if s.MariaDB {
		return "MariaDB " + s.Version
	}
	return "MySQL " + s.Version
}

// Row is one table access of a plan.
type Row struct {
	// Columns is the classic EXPLAIN row by column name (NULL as ""):
	// id, select_type, table, type, possible_keys, key, key_len, ref,
	// rows, Extra, and whatever else the server adds (MySQL: partitions,
	// filtered; MariaDB's ANALYZE: r_rows, r_filtered).
	Columns map[string]string
	// Table, Type, Key and Extra are those columns; Key is "" for a full
	// scan (and for a row that reads no table).
	Table, Type, Key, Extra string
	// Rows is the optimizer's estimate of rows examined per scan.
	Rows float64
	// Read is what ANALYZE measured the access to read per loop (MariaDB's
	// r_rows, MySQL's actual rows), or -1 when not measured.
	Read float64
}

// Plan is one statement's plan.
type Plan struct {
	Rows []Row
	// Analyzed is true when the statement was run and Read measured.
	Analyzed bool
	// Raw is what the server printed: the classic table as text, and on
	// MySQL, after ANALYZE, the measured plan (tree text or JSON).
	Raw string
}

// Keys returns the indexes the plan reads, in order, once each.
func (p Plan) Keys() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range p.Rows {
		if r.Key != "" && !seen[r.Key] {
			seen[r.Key] = true
			out = append(out, r.Key)
		}
	}
	return out
}

// Sorts reports whether the plan sorts rows (a filesort), which both
// servers say in Extra.
func (p Plan) Sorts() bool {
	for _, r := range p.Rows {
		if strings.Contains(strings.ToLower(r.Extra), "using filesort") {
			return true
		}
	}
	return false
}

// Explain returns the plan of query without running it.
func (s Server) Explain(ctx context.Context, q Querier, query string, args ...any) (Plan, error) {
	prefix := "EXPLAIN FORMAT=TRADITIONAL "
	if s.MariaDB {
		// MariaDB's bare EXPLAIN is the classic table, in every version
		// lockstep supports.
		prefix = "EXPLAIN "
	}
	rows, err := sqlrows.Maps(ctx, q, prefix+query, args...)
	if err != nil {
		return Plan{}, fmt.Errorf("mysqlplan: %s: %w", strings.TrimSpace(prefix), err)
	}
	return classic(rows)
}

// Analyze runs query and returns its plan with what each access read.
// The statement's effects are real: run it in a transaction that is
// rolled back.
func (s Server) Analyze(ctx context.Context, q Querier, query string, args ...any) (Plan, error) {
	if s.MariaDB {
		// ANALYZE prints the classic table with r_rows beside rows.
		rows, err := sqlrows.Maps(ctx, q, "ANALYZE "+query, args...)
		if err != nil {
			return Plan{}, fmt.Errorf("mysqlplan: ANALYZE: %w", err)
		}
		p, err := classic(rows)
		if err != nil {
			return Plan{}, err
		}
		p.Analyzed = true
		for i := range p.Rows {
			if v, ok := p.Rows[i].Columns["r_rows"]; ok && v != "" {
				p.Rows[i].Read = number(v)
			}
		}
		return p, nil
	}
	if !s.atLeast(8, 0, 18) {
		return Plan{}, fmt.Errorf("mysqlplan: %s has no EXPLAIN ANALYZE (MySQL 8.0.18 or later measures a plan)", s)
	}
	// The classic table first, for the access types and Extra that the
	// measured plan does not print, then the measured plan, which runs the
	// statement. Both are planned from the same statistics in the same
	// transaction; an access the measurement shows that the table does not
	// is added, so a plan that changed in between cannot go unseen.
	p, err := s.Explain(ctx, q, query, args...)
	if err != nil {
		return Plan{}, err
	}
	var reads []read
	var raw string
	if s.AnalyzeJSON {
		raw, err = scalar(ctx, q, "EXPLAIN ANALYZE FORMAT=JSON "+query, args...)
		if err != nil {
			return Plan{}, fmt.Errorf("mysqlplan: EXPLAIN ANALYZE FORMAT=JSON: %w", err)
		}
		reads, err = jsonReads(raw)
	} else {
		prefix := "EXPLAIN ANALYZE FORMAT=TREE "
		if !s.atLeast(8, 0, 21) {
			prefix = "EXPLAIN ANALYZE " // FORMAT=TREE is accepted from 8.0.21
		}
		raw, err = scalar(ctx, q, prefix+query, args...)
		if err != nil {
			return Plan{}, fmt.Errorf("mysqlplan: %s: %w", strings.TrimSpace(prefix), err)
		}
		reads, err = treeReads(raw)
	}
	if err != nil {
		return Plan{}, err
	}
	if strings.Contains(raw, notExecutable) {
		// MySQL measures only what its iterator executor runs: SELECTs
		// and multi-table writes, not a single-table UPDATE or DELETE.
		return Plan{}, fmt.Errorf("mysqlplan: %s cannot measure this statement (EXPLAIN ANALYZE printed %q); measure a SELECT", s, notExecutable)
	}
	p.Analyzed = true
	p.Raw += "\n" + raw
	merge(&p, reads)
	return p, nil
}

// classic turns classic EXPLAIN rows into a Plan.
func classic(rows []map[string]string) (Plan, error) {
	if len(rows) == 0 {
		return Plan{}, errors.New("mysqlplan: EXPLAIN returned no rows")
	}
	if _, ok := rows[0]["table"]; !ok {
		// A server that ignored the format asked for (a TREE line) would
		// otherwise read as a plan with no index at all.
		return Plan{}, fmt.Errorf("mysqlplan: EXPLAIN did not print the classic table (columns: %s)", columnNames(rows[0]))
	}
	p := Plan{}
	var raw []string
	for _, m := range rows {
		r := Row{Columns: m, Table: m["table"], Type: m["type"], Key: m["key"], Extra: m["Extra"], Rows: number(m["rows"]), Read: -1}
		p.Rows = append(p.Rows, r)
		raw = append(raw, fmt.Sprintf("%s %s %s type=%s key=%s rows=%s %s", m["id"], m["select_type"], dash(r.Table), dash(r.Type), dash(r.Key), dash(m["rows"]), r.Extra))
	}
	p.Raw = strings.Join(raw, "\n")
	return p, nil
}

// read is one measured access: the table (as the plan names it, an alias
// where the statement gives one), the index ("" for a table scan), the
// rows it read per loop.
type read struct {
	table, index string
	rows, est    float64
	op           string
}

// merge sets Read on the rows the measurements match by table and index,
// keeping the largest per row, and appends measured accesses the table
// lacks.
func merge(p *Plan, reads []read) {
	for _, rd := range reads {
		found := false
		for i := range p.Rows {
			r := &p.Rows[i]
			if r.Table == rd.table && r.Key == rd.index {
				found = true
				if rd.rows > r.Read {
					r.Read = rd.rows
				}
			}
		}
		if !found {
			p.Rows = append(p.Rows, Row{
				Columns: map[string]string{"table": rd.table, "key": rd.index, "Extra": rd.op},
				Table:   rd.table, Key: rd.index, Type: rd.op, Extra: rd.op, Rows: rd.est, Read: rd.rows,
			})
		}
	}
}

func scalar(ctx context.Context, q Querier, query string, args ...any) (string, error) {
	rows, err := sqlrows.Maps(ctx, q, query, args...)
	if err != nil {
		return "", err
	}
	if len(rows) == 0 {
		return "", errors.New("no rows")
	}
	for _, v := range rows[0] {
		return v, nil
	}
	return "", errors.New("no columns")
}

func number(s string) float64 {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0
	}
	return f
}

func dash(s string) string {
	if s == "" {
		return "NULL"
	}
	return s
}

func columnNames(m map[string]string) string {
	return strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}
