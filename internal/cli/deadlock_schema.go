package cli

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/lockstep-queue/lockstep/lockdiag/deadlock"
)

// liveSchema reads a table's definition from information_schema, as
// deadlock.Table: every column's COLUMN_TYPE (so signedness, lengths,
// fractional seconds and ENUM members come as the server prints them) and
// every index's columns in order. fallback answers for tables the server
// does not have (nil: none).
func liveSchema(ctx context.Context, db *sql.DB, fallback deadlock.SchemaSource) deadlock.SchemaSource {
	cache := map[string]*deadlock.Table{}
	return deadlock.SchemaFunc{Name: "live server's information_schema", Func: func(table string) (*deadlock.Table, error) {
		if t, ok := cache[table]; ok {
			return t, nil
		}
		t, err := readTable(ctx, db, table)
		if err != nil {
			return nil, err
		}
		if t == nil && fallback != nil {
			return fallback.LookupTable(table)
		}
		cache[table] = t
		return t, nil
	}}
}

func readTable(ctx context.Context, db *sql.DB, table string) (*deadlock.Table, error) {
	schema, name, ok := strings.Cut(table, ".")
	if !ok {
		return nil, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, EXTRA, COALESCE(CHARACTER_SET_NAME, '')
FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, schema, name)
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	defer func() { _ = rows.Close() }()
	t := &deadlock.Table{Name: table}
	for rows.Next() {
		var col, typ, nullable, extra, charset string
		if err := rows.Scan(&col, &typ, &nullable, &extra, &charset); err != nil {
			return nil, fmt.Errorf("columns of %s: %w", table, err)
		}
		c := deadlock.ParseColumnType(col, typ)
		c.NotNull = nullable == "NO"
		c.Virtual = strings.Contains(strings.ToUpper(extra), "VIRTUAL")
		if charset == "binary" {
			c.Binary = true
		}
		t.Columns = append(t.Columns, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	if len(t.Columns) == 0 {
		return nil, nil // not on this server
	}
	irows, err := db.QueryContext(ctx, `SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME, COALESCE(SUB_PART, 0)
FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY INDEX_NAME, SEQ_IN_INDEX`, schema, name)
	if err != nil {
		return nil, fmt.Errorf("indexes of %s: %w", table, err)
	}
	defer func() { _ = irows.Close() }()
	byName := map[string]*deadlock.Index{}
	for irows.Next() {
		var idx string
		var nonUnique, sub int
		var col sql.NullString
		if err := irows.Scan(&idx, &nonUnique, &col, &sub); err != nil {
			return nil, fmt.Errorf("indexes of %s: %w", table, err)
		}
		if !col.Valid {
			continue // a functional index part
		}
		ix := byName[idx]
		if ix == nil {
			ix = &deadlock.Index{Name: idx, Primary: idx == "PRIMARY", Unique: nonUnique == 0}
			byName[idx] = ix
			t.Indexes = append(t.Indexes, ix)
		}
		ix.Columns = append(ix.Columns, col.String)
		ix.Prefix = append(ix.Prefix, sub)
	}
	if err := irows.Err(); err != nil {
		return nil, fmt.Errorf("indexes of %s: %w", table, err)
	}
	// Foreign keys tell a parent's S lock from a shared read.
	frows, err := db.QueryContext(ctx, `SELECT CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME
FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND REFERENCED_TABLE_NAME IS NOT NULL
ORDER BY CONSTRAINT_NAME, ORDINAL_POSITION`, schema, name)
	if err != nil {
		return nil, fmt.Errorf("foreign keys of %s: %w", table, err)
	}
	defer func() { _ = frows.Close() }()
	fks := map[string]*deadlock.ForeignKey{}
	for frows.Next() {
		var cname, col, rschema, rtable, rcol string
		if err := frows.Scan(&cname, &col, &rschema, &rtable, &rcol); err != nil {
			return nil, fmt.Errorf("foreign keys of %s: %w", table, err)
		}
		fk := fks[cname]
		if fk == nil {
			fk = &deadlock.ForeignKey{Name: cname, RefTable: rschema + "." + rtable}
			fks[cname] = fk
			t.ForeignKeys = append(t.ForeignKeys, fk)
		}
		fk.Columns = append(fk.Columns, col)
		fk.RefColumns = append(fk.RefColumns, rcol)
	}
	return t, frows.Err()
}
