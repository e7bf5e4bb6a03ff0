// Package audit is the lock-order checklist, automated: write down each
// statement's access path, EXPLAIN it under several data distributions,
// and look for two writers that lock the same two indexes of a table in
// opposite orders, and for range UPDATEs through an index on a column that
// changes often.
package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Statement is one statement the application issues.
type Statement struct {
	Name, SQL string
}

// Data is one distribution: SQL that replaces the tables' rows.
type Data struct {
	Name, SQL string
}

// Input is what an audit reads: an optional schema to create, the
// statements, and the distributions to explain them under (none: the data
// the database holds).
type Input struct {
	Schema     string
	Statements []Statement
	Data       []Data
}

var nameLine = regexp.MustCompile(`(?m)^\s*--\s*name:\s*(\S+)\s*$`)

// LoadDir reads schema.sql (optional), statements.sql (statements named by
// "-- name: NAME" comments; unnamed ones are numbered) and data-*.sql.
func LoadDir(dir string) (Input, error) {
	var in Input
	if b, err := os.ReadFile(filepath.Join(dir, "schema.sql")); err == nil {
		in.Schema = string(b)
	} else if !os.IsNotExist(err) {
		return in, fmt.Errorf("audit: %w", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "statements.sql"))
	if err != nil {
		return in, fmt.Errorf("audit: %s needs a statements.sql: %w", dir, err)
	}
	in.Statements, err = ParseStatements(string(b))
	if err != nil {
		return in, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "data-*.sql"))
	if err != nil {
		return in, fmt.Errorf("audit: %w", err)
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return in, fmt.Errorf("audit: %w", err)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "data-"), ".sql")
		in.Data = append(in.Data, Data{Name: name, SQL: string(b)})
	}
	return in, nil
}

// ParseStatements splits a file of statements at semicolons that end a
// line, naming each by the "-- name:" comment before it.
func ParseStatements(text string) ([]Statement, error) {
	var out []Statement
	name := ""
	for _, part := range Split(text) {
		if m := nameLine.FindAllStringSubmatch(part.Comments, -1); len(m) > 0 {
			name = m[len(m)-1][1]
		}
		if name == "" {
			name = fmt.Sprintf("statement-%d", len(out)+1)
		}
		out = append(out, Statement{Name: name, SQL: part.SQL})
		name = ""
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("audit: no statements found")
	}
	seen := map[string]bool{}
	for _, s := range out {
		if seen[s.Name] {
			return nil, fmt.Errorf("audit: statement name %q used twice", s.Name)
		}
		seen[s.Name] = true
	}
	return out, nil
}

// Part is one statement of a script and the comment lines before it.
type Part struct {
	Comments, SQL string
}

// Split cuts a script into statements at a ';' that ends a line, keeping
// the comment lines that precede each.
func Split(text string) []Part {
	var out []Part
	var comments, sqlText []string
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "":
			continue
		case strings.HasPrefix(t, "--") && len(sqlText) == 0:
			comments = append(comments, t)
			continue
		}
		sqlText = append(sqlText, t)
		if strings.HasSuffix(t, ";") {
			s := strings.TrimSuffix(strings.Join(sqlText, " "), ";")
			out = append(out, Part{Comments: strings.Join(comments, "\n"), SQL: strings.TrimSpace(s)})
			comments, sqlText = nil, nil
		}
	}
	if len(sqlText) > 0 {
		out = append(out, Part{Comments: strings.Join(comments, "\n"), SQL: strings.Join(sqlText, " ")})
	}
	return out
}
