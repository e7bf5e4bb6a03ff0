// Package migrate applies lockstep's schema, versioned and embedded per
// dialect, and prints it for users who run their own migration tool.
package migrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/catalog"
)

// ErrUnknownMigration: the database records a migration this binary does
// not have; the schema is newer than the binary.
var ErrUnknownMigration = errors.New("unknown migration")

// Migration is one versioned schema step.
type Migration struct {
	Version int
	Name    string
	Up      string
	Down    string
}

// Status is a migration and whether it is applied.
type Status struct {
	Migration
	Applied   bool
	AppliedAt time.Time
}

// Migrator applies a driver's migrations.
type Migrator struct {
	drv        driver.Driver
	migrations []Migration
}

var fileRE = regexp.MustCompile(`^(\d+)_([a-z0-9_]+)\.(up|down)\.sql$`)

// New reads the driver's embedded migrations.
func New(drv driver.Driver) (*Migrator, error) {
	ms, err := Load(drv.Migrations())
	if err != nil {
		return nil, fmt.Errorf("migrate %s: %w", drv.Dialect(), err)
	}
	return &Migrator{drv: drv, migrations: ms}, nil
}

// Load reads NNNN_name.up.sql / NNNN_name.down.sql pairs from fsys.
func Load(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	byVersion := map[int]*Migration{}
	for _, e := range entries {
		m := fileRE.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		v, _ := strconv.Atoi(m[1])
		body, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, err
		}
		mig := byVersion[v]
		if mig == nil {
			mig = &Migration{Version: v, Name: m[2]}
			byVersion[v] = mig
		}
		if m[3] == "up" {
			mig.Up = string(body)
		} else {
			mig.Down = string(body)
		}
	}
	var out []Migration
	for _, m := range byVersion {
		if m.Up == "" || m.Down == "" {
			return nil, fmt.Errorf("migration %d_%s needs both an up and a down file", m.Version, m.Name)
		}
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	return out, nil
}

// Latest is the version the binary expects.
func (m *Migrator) Latest() int {
	if len(m.migrations) == 0 {
		return 0
	}
	return m.migrations[len(m.migrations)-1].Version
}

// All returns every known migration.
func (m *Migrator) All() []Migration { return slices.Clone(m.migrations) }

func (m *Migrator) exec(ctx context.Context, q interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, name catalog.Name, args ...any) error {
	_, err := q.ExecContext(ctx, m.drv.Catalog().Get(name).SQL, args...)
	return err
}

// Status lists migrations and whether each is applied.
func (m *Migrator) Status(ctx context.Context) ([]Status, error) {
	db := m.drv.DB()
	if err := m.exec(ctx, db, catalog.MigrationCreateTable); err != nil {
		return nil, fmt.Errorf("migrate: create lockstep_migrations: %w", err)
	}
	rows, err := db.QueryContext(ctx, m.drv.Catalog().Get(catalog.MigrationList).SQL)
	if err != nil {
		return nil, fmt.Errorf("migrate: list: %w", err)
	}
	defer rows.Close()
	applied := map[int]time.Time{}
	for rows.Next() {
		var v int
		var name string
		var at any
		if err := rows.Scan(&v, &name, &at); err != nil {
			return nil, fmt.Errorf("migrate: list: %w", err)
		}
		applied[v] = appliedTime(at)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("migrate: list: %w", err)
	}
	out := make([]Status, 0, len(m.migrations))
	for _, mig := range m.migrations {
		at, ok := applied[mig.Version]
		out = append(out, Status{Migration: mig, Applied: ok, AppliedAt: at})
	}
	for v := range applied {
		if !slices.ContainsFunc(m.migrations, func(x Migration) bool { return x.Version == v }) {
			return out, fmt.Errorf("migrate: %w: database has migration %d, which this binary does not know: it is older than the schema", ErrUnknownMigration, v)
		}
	}
	return out, nil
}

// State is what the versions recorded in a database's lockstep_migrations
// say about its schema, against the migrations this binary has.
type State struct {
	// Current is the highest version recorded, 0 for none: 0 is a
	// database without lockstep's tables (never migrated, or migrated all
	// the way down).
	Current int
	// Latest is the highest version this binary has.
	Latest int
	// Pending are this binary's migrations that are not recorded.
	Pending []Migration
	// Unknown are recorded versions this binary does not have: the schema
	// is newer than the binary.
	Unknown []int
}

// UpToDate is true when the schema is exactly the one this binary has.
func (s State) UpToDate() bool { return len(s.Pending) == 0 && len(s.Unknown) == 0 }

// ReadState reads the recorded versions without writing anything. Status,
// Version and Up create lockstep_migrations when it is missing; ReadState
// does not, so that a command that only needs to know whether the schema
// is there changes nothing (and works for a user who may only read). When
// the table is missing it returns the database's error, wrapped: which
// code says "no such table" is the dialect's, and this package knows no
// dialect.
func (m *Migrator) ReadState(ctx context.Context) (State, error) {
	rows, err := m.drv.DB().QueryContext(ctx, m.drv.Catalog().Get(catalog.MigrationList).SQL)
	if err != nil {
		return State{}, fmt.Errorf("read lockstep_migrations: %w", err)
	}
	defer rows.Close()
	applied := map[int]bool{}
	st := State{Latest: m.Latest()}
	for rows.Next() {
		var v int
		var name string
		var at any
		if err := rows.Scan(&v, &name, &at); err != nil {
			return State{}, fmt.Errorf("read lockstep_migrations: %w", err)
		}
		applied[v] = true
		st.Current = max(st.Current, v)
		if !slices.ContainsFunc(m.migrations, func(x Migration) bool { return x.Version == v }) {
			st.Unknown = append(st.Unknown, v)
		}
	}
	if err := rows.Err(); err != nil {
		return State{}, fmt.Errorf("read lockstep_migrations: %w", err)
	}
	for _, mig := range m.migrations {
		if !applied[mig.Version] {
			st.Pending = append(st.Pending, mig)
		}
	}
	return st, nil
}

// Version is the highest applied migration, 0 for none.
func (m *Migrator) Version(ctx context.Context) (int, error) {
	st, err := m.Status(ctx)
	if err != nil {
		return 0, err
	}
	v := 0
	for _, s := range st {
		if s.Applied {
			v = s.Version
		}
	}
	return v, nil
}

// Up applies every pending migration in order and returns those applied.
func (m *Migrator) Up(ctx context.Context) ([]Migration, error) {
	st, err := m.Status(ctx)
	if err != nil {
		return nil, err
	}
	var done []Migration
	for _, s := range st {
		if s.Applied {
			continue
		}
		if err := m.apply(ctx, s.Up, catalog.MigrationInsert, s.Version, s.Name); err != nil {
			return done, &MigrationError{Migration: s.Migration, Err: err}
		}
		done = append(done, s.Migration)
	}
	return done, nil
}

// Down reverts the last `steps` applied migrations.
func (m *Migrator) Down(ctx context.Context, steps int) ([]Migration, error) {
	st, err := m.Status(ctx)
	if err != nil {
		return nil, err
	}
	var done []Migration
	for i := len(st) - 1; i >= 0 && len(done) < steps; i-- {
		s := st[i]
		if !s.Applied {
			continue
		}
		if err := m.apply(ctx, s.Down, catalog.MigrationDelete, s.Version); err != nil {
			return done, &MigrationError{Migration: s.Migration, Down: true, Err: err}
		}
		done = append(done, s.Migration)
	}
	return done, nil
}

// apply runs a migration's statements and its bookkeeping in one
// transaction. PostgreSQL and SQLite make that atomic; MySQL commits each
// DDL statement implicitly, so a failure there can leave a step half done.
func (m *Migrator) apply(ctx context.Context, body string, record catalog.Name, args ...any) error {
	tx, err := m.drv.DB().BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	stmts := split(body)
	for i, stmt := range stmts {
		if _, err := tx.ExecContext(ctx, stmt.text); err != nil {
			_ = tx.Rollback()
			return &StatementError{Index: i + 1, Count: len(stmts), Line: stmt.line, Statement: stmt.text, Err: err}
		}
	}
	if err := m.exec(ctx, tx, record, args...); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Split cuts a migration file into statements at lines ending in ';'.
// Comments are dropped; the files hold no procedures or quoted semicolons.
func Split(body string) []string {
	stmts := split(body)
	out := make([]string, 0, len(stmts))
	for _, s := range stmts {
		out = append(out, s.text)
	}
	return out
}

// statement is one statement of a migration file and the line it starts
// on, which a failure names so that the user can find it in the file
// (migrate print shows the same lines).
type statement struct {
	text string
	line int
}

func split(body string) []statement {
	var out []statement
	var cur strings.Builder
	start := 0
	for i, line := range strings.Split(body, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") {
			out = append(out, statement{strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"), start})
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, statement{s, start})
	}
	return out
}

// StatementError is a migration statement the database refused: which
// statement of the migration's file it was, and the database's error.
// Up and Down wrap it in a MigrationError.
type StatementError struct {
	// Index is the statement's position among the file's Count
	// statements, from 1; Line is the file line it starts on.
	Index, Count, Line int
	// Statement is the statement's text, without its ';'.
	Statement string
	// Err is the database's error.
	Err error
}

func (e *StatementError) Error() string {
	return fmt.Sprintf("statement %d of %d (line %d): %s: %v", e.Index, e.Count, e.Line, FirstLine(e.Statement, 80), e.Err)
}

func (e *StatementError) Unwrap() error { return e.Err }

// MigrationError is a migration that could not be applied or reverted.
// Err is a *StatementError when the database refused one of its
// statements, else the error of the transaction or of its bookkeeping.
type MigrationError struct {
	Migration Migration
	// Down is true when the migration was being reverted.
	Down bool
	Err  error
}

// File is the name of the migration file that failed.
func (e *MigrationError) File() string {
	dir := "up"
	if e.Down {
		dir = "down"
	}
	return fmt.Sprintf("%04d_%s.%s.sql", e.Migration.Version, e.Migration.Name, dir)
}

func (e *MigrationError) Error() string {
	op := "up"
	if e.Down {
		op = "down"
	}
	return fmt.Sprintf("migrate %s %d_%s: %v", op, e.Migration.Version, e.Migration.Name, e.Err)
}

func (e *MigrationError) Unwrap() error { return e.Err }

// FirstLine is the first line of a statement, cut to at most max runes,
// with "…" when anything was left out: enough to recognise it in an error
// without flattening a whole CREATE TABLE into one line.
func FirstLine(stmt string, max int) string {
	first, rest, _ := strings.Cut(strings.TrimSpace(stmt), "\n")
	first = strings.TrimSpace(first)
	cut := strings.TrimSpace(rest) != ""
	if r := []rune(first); len(r) > max {
		first, cut = string(r[:max]), true
	}
	if cut {
		first += " …"
	}
	return first
}

// Print renders the up (or down) SQL of every migration, for users who
// apply schema with their own tool.
func Print(ms []Migration, down bool) string {
	var b strings.Builder
	if down {
		for i := len(ms) - 1; i >= 0; i-- {
			fmt.Fprintf(&b, "-- lockstep migration %04d_%s (down)\n%s\n", ms[i].Version, ms[i].Name, strings.TrimSpace(ms[i].Down))
		}
		return b.String()
	}
	for _, m := range ms {
		fmt.Fprintf(&b, "-- lockstep migration %04d_%s (up)\n%s\n", m.Version, m.Name, strings.TrimSpace(m.Up))
	}
	return b.String()
}

// Script renders the migrations as one SQL script for users who apply
// schema by hand or with their own tool: the up SQL of every migration in
// order, each followed by the INSERT that records it in
// lockstep_migrations, after the CREATE TABLE of that table; or, with
// down, the reverting SQL in reverse order, each followed by the DELETE of
// its record. Applied statement by statement to an empty database, the up
// script leaves it as Up would: the same tables, and the same versions
// recorded, which is what Client.Start and `lockstep migrate status` read.
// cat is the dialect's catalogue: its bookkeeping statements are used with
// their values written in.
func Script(ms []Migration, cat *catalog.Catalog, down bool) (string, error) {
	var b strings.Builder
	body := func(sql string) {
		sql = strings.TrimSpace(sql)
		b.WriteString(sql)
		if !strings.HasSuffix(sql, ";") {
			b.WriteByte(';')
		}
		b.WriteByte('\n')
	}
	if down {
		for i := len(ms) - 1; i >= 0; i-- {
			del, err := bindLiterals(cat.Get(catalog.MigrationDelete).SQL, ms[i].Version)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, "-- lockstep migration %04d_%s (down)\n", ms[i].Version, ms[i].Name)
			body(ms[i].Down)
			body(del)
		}
		return b.String(), nil
	}
	b.WriteString("-- lockstep's bookkeeping: the migrations applied, which Client.Start and\n" +
		"-- `lockstep migrate status` read. migrate up creates it the same way.\n")
	body(cat.Get(catalog.MigrationCreateTable).SQL)
	for _, m := range ms {
		ins, err := bindLiterals(cat.Get(catalog.MigrationInsert).SQL, m.Version, m.Name)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "-- lockstep migration %04d_%s (up)\n", m.Version, m.Name)
		body(m.Up)
		body(ins)
	}
	return b.String(), nil
}

// bindLiterals writes args into a bookkeeping statement in place of its
// placeholders, ? or $N, outside quoted text. The values are versions and
// migration names, which fileRE limits to [a-z0-9_], so quoting a name
// cannot go wrong.
func bindLiterals(sqlText string, args ...any) (string, error) {
	lit := func(i int) (string, error) {
		if i < 0 || i >= len(args) {
			return "", fmt.Errorf("migrate: statement %q has more placeholders than the %d values given", sqlText, len(args))
		}
		switch v := args[i].(type) {
		case int:
			return strconv.Itoa(v), nil
		case string:
			return "'" + strings.ReplaceAll(v, "'", "''") + "'", nil
		}
		return "", fmt.Errorf("migrate: cannot write %T as a literal", args[i])
	}
	var b strings.Builder
	next, quoted := 0, false
	for i := 0; i < len(sqlText); i++ {
		c := sqlText[i]
		switch {
		case c == '\'':
			quoted = !quoted
		case !quoted && c == '?':
			v, err := lit(next)
			if err != nil {
				return "", err
			}
			next++
			b.WriteString(v)
			continue
		case !quoted && c == '$' && i+1 < len(sqlText) && sqlText[i+1] >= '0' && sqlText[i+1] <= '9':
			j := i + 1
			for j < len(sqlText) && sqlText[j] >= '0' && sqlText[j] <= '9' {
				j++
			}
			n, _ := strconv.Atoi(sqlText[i+1 : j])
			v, err := lit(n - 1)
			if err != nil {
				return "", err
			}
			b.WriteString(v)
			i = j - 1
			continue
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

// appliedTime reads applied_at, a time on MySQL and PostgreSQL and text in
// SQLite's fixed layout.
func appliedTime(v any) time.Time {
	switch t := v.(type) {
	case time.Time:
		return t.UTC()
	case []byte:
		return appliedTime(string(t))
	case string:
		for _, layout := range []string{"2006-01-02 15:04:05.000", "2006-01-02 15:04:05.999999999", time.RFC3339Nano} {
			if p, err := time.Parse(layout, t); err == nil {
				return p.UTC()
			}
		}
	}
	return time.Time{}
}
