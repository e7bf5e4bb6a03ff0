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
			return done, fmt.Errorf("migrate up %d_%s: %w", s.Version, s.Name, err)
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
			return done, fmt.Errorf("migrate down %d_%s: %w", s.Version, s.Name, err)
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
	for _, stmt := range Split(body) {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("%w\nstatement: %s", err, stmt)
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
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(body, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
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
