package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/lockstep-queue/lockstep/internal/mysqlplan"
)

// Path is a statement's lock path as the server plans it.
type Path struct {
	Statement
	Table string
	// Writer: an UPDATE or DELETE. Locking: it takes row locks (a writer
	// or a SELECT … FOR UPDATE / FOR SHARE).
	Writer, Locking bool
	// Finds maps each index the plan found rows through to the
	// distributions under which it did; Access likewise for the type.
	Finds  map[string][]string
	Access map[string][]string
	// Sets are the columns an UPDATE sets; Changes the indexes holding
	// them (every index, for a DELETE).
	Sets, Changes []string
	// ByKey: the WHERE names the row by an equality on the primary key.
	ByKey bool
}

// Finding is one thing the audit flags.
type Finding struct {
	// Kind is "crossing" (two statements can lock two indexes in opposite
	// order) or "range-through-changing-index".
	Kind        string
	A, B        string
	Table       string
	Index       string
	Explanation string
	Fix         string
}

// Report is the audit's result.
type Report struct {
	Paths    []Path
	Findings []Finding
}

var (
	updateRe = regexp.MustCompile(`(?is)^\s*UPDATE\s+` + "`?" + `(\w+)` + "`?" + `.*?\bSET\b(.*?)(\bWHERE\b(.*))?$`)
	deleteRe = regexp.MustCompile(`(?is)^\s*DELETE\s+FROM\s+` + "`?" + `(\w+)`)
	selectRe = regexp.MustCompile(`(?is)^\s*SELECT\b.*?\bFROM\s+` + "`?" + `(\w+)`)
	lockRe   = regexp.MustCompile(`(?i)\bFOR\s+(UPDATE|SHARE)\b|\bLOCK\s+IN\s+SHARE\s+MODE\b`)
	setColRe = regexp.MustCompile("(?i)^\\s*`?(\\w+)`?\\s*=")
)

// Run creates the schema (if the input has one), loads each distribution
// in turn, EXPLAINs every statement under it, and reports the crossings.
// Tables the schema created are dropped at the end unless keep is set; a
// schema whose tables exist already is refused (point it at a scratch
// database).
func Run(ctx context.Context, db *sql.DB, in Input, keep bool) (*Report, error) {
	created, err := createSchema(ctx, db, in.Schema)
	if err != nil {
		return nil, err
	}
	if !keep {
		defer func() {
			for _, t := range created {
				_, _ = db.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS `"+t+"`")
			}
		}()
	}
	paths := make([]Path, len(in.Statements))
	for i, s := range in.Statements {
		p, err := shape(s)
		if err != nil {
			return nil, err
		}
		paths[i] = p
	}
	// MariaDB and MySQL are asked for their plans differently (a bare
	// EXPLAIN prints a TREE on MySQL 9.x); the server says which it is.
	srv, err := mysqlplan.Detect(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	dists := in.Data
	if len(dists) == 0 {
		dists = []Data{{Name: "current data"}}
	}
	for _, d := range dists {
		if err := runScript(ctx, db, d.SQL); err != nil {
			return nil, fmt.Errorf("audit: load %s: %w", d.Name, err)
		}
		for i := range paths {
			key, access, err := explain(ctx, db, srv, paths[i].SQL, paths[i].Table)
			if err != nil {
				return nil, fmt.Errorf("audit: %s under %s: %w", paths[i].Name, d.Name, err)
			}
			paths[i].Finds[key] = append(paths[i].Finds[key], d.Name)
			paths[i].Access[access] = append(paths[i].Access[access], d.Name)
		}
	}
	for i := range paths {
		if err := describeChanges(ctx, db, &paths[i]); err != nil {
			return nil, err
		}
	}
	return &Report{Paths: paths, Findings: findings(paths)}, nil
}

func shape(s Statement) (Path, error) {
	p := Path{Statement: s, Finds: map[string][]string{}, Access: map[string][]string{}}
	switch {
	case updateRe.MatchString(s.SQL):
		m := updateRe.FindStringSubmatch(s.SQL)
		p.Table, p.Writer, p.Locking = m[1], true, true
		for _, a := range splitTop(m[2]) {
			if c := setColRe.FindStringSubmatch(a); c != nil {
				p.Sets = append(p.Sets, strings.ToLower(c[1]))
			}
		}
	case deleteRe.MatchString(s.SQL):
		p.Table, p.Writer, p.Locking = deleteRe.FindStringSubmatch(s.SQL)[1], true, true
	case selectRe.MatchString(s.SQL):
		p.Table, p.Locking = selectRe.FindStringSubmatch(s.SQL)[1], lockRe.MatchString(s.SQL)
	default:
		return p, fmt.Errorf("audit: %s: only SELECT, UPDATE and DELETE statements are audited (got %.40q)", s.Name, s.SQL)
	}
	return p, nil
}

// splitTop splits a SET list at commas outside parentheses and quotes.
func splitTop(s string) []string {
	var out []string
	depth, quote, start := 0, rune(0), 0
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '(':
			depth++
		case r == ')':
			depth--
		case r == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func createSchema(ctx context.Context, db *sql.DB, schema string) ([]string, error) {
	var created []string
	tableRe := regexp.MustCompile("(?i)^CREATE\\s+TABLE\\s+`?(\\w+)`?")
	for _, part := range Split(schema) {
		if _, err := db.ExecContext(ctx, part.SQL); err != nil {
			var me *gomysql.MySQLError
			if errors.As(err, &me) && me.Number == 1050 {
				err = fmt.Errorf("%w (the audit creates its schema: point --dsn at a scratch database)", err)
			}
			for _, t := range created {
				_, _ = db.ExecContext(ctx, "DROP TABLE IF EXISTS `"+t+"`")
			}
			return nil, fmt.Errorf("audit: schema: %w", err)
		}
		if m := tableRe.FindStringSubmatch(part.SQL); m != nil {
			created = append(created, m[1])
		}
	}
	return created, nil
}

func runScript(ctx context.Context, db *sql.DB, script string) error {
	for _, part := range Split(script) {
		rows, err := db.QueryContext(ctx, part.SQL)
		if err != nil {
			return err
		}
		for rows.Next() {
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
	}
	return nil
}

// explain returns the index (key) and access type the plan uses for the
// statement's table.
func explain(ctx context.Context, db *sql.DB, srv mysqlplan.Server, query, table string) (string, string, error) {
	plan, err := srv.Explain(ctx, db, query)
	if err != nil {
		return "", "", err
	}
	for _, r := range plan.Rows {
		if strings.EqualFold(r.Table, table) {
			key := r.Key
			if key == "" {
				key = "(full scan)"
			}
			return key, r.Type, nil
		}
	}
	return "(no plan)", "", nil
}

// describeChanges reads the table's indexes and derives which the
// statement changes, and whether it names its row by primary key.
func describeChanges(ctx context.Context, db *sql.DB, p *Path) error {
	rows, err := db.QueryContext(ctx, "SELECT INDEX_NAME, LOWER(COLUMN_NAME) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY INDEX_NAME, SEQ_IN_INDEX", p.Table)
	if err != nil {
		return fmt.Errorf("audit: indexes of %s: %w", p.Table, err)
	}
	defer rows.Close()
	cols := map[string][]string{}
	for rows.Next() {
		var ix, col string
		if err := rows.Scan(&ix, &col); err != nil {
			return err
		}
		cols[ix] = append(cols[ix], col)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(cols) == 0 {
		return fmt.Errorf("audit: %s: table %s not found in the database", p.Name, p.Table)
	}
	names := make([]string, 0, len(cols))
	for ix := range cols {
		names = append(names, ix)
	}
	sort.Strings(names)
	for _, ix := range names {
		if !p.Writer {
			break
		}
		if len(p.Sets) == 0 { // DELETE
			p.Changes = append(p.Changes, ix)
			continue
		}
		for _, c := range cols[ix] {
			if slices.Contains(p.Sets, c) {
				p.Changes = append(p.Changes, ix)
				break
			}
		}
	}
	if pk := cols["PRIMARY"]; len(pk) > 0 {
		where := strings.ToLower(p.SQL)
		if i := strings.Index(where, " where "); i >= 0 {
			where = where[i:]
			by := true
			for _, c := range pk {
				if !regexp.MustCompile(`\b` + regexp.QuoteMeta(c) + `\s*=`).MatchString(where) {
					by = false
				}
			}
			p.ByKey = by
		}
	}
	return nil
}
