package migrate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/catalog"
)

// ErrNoTextIndex: the dialect has no optional text index (SQLite, whose
// job search reads windows of ids only).
var ErrNoTextIndex = errors.New("this database has no text index for the job search: its search reads windows of ids")

// textIndexFile is the optional text index's file in a dialect's
// migrations, up or down.
func textIndexFile(up bool) string {
	if up {
		return "optional/text_index.up.sql"
	}
	return "optional/text_index.down.sql"
}

// TextIndexSQL is the SQL that creates (up) or drops the job search's
// optional text index, for users who apply schema with their own tool.
// It is not a numbered migration: 'migrate up' never applies it.
func TextIndexSQL(fsys fs.FS, up bool) (string, error) {
	body, err := fs.ReadFile(fsys, textIndexFile(up))
	if errors.Is(err, fs.ErrNotExist) {
		return "", ErrNoTextIndex
	}
	if err != nil {
		return "", fmt.Errorf("text index: %w", err)
	}
	return string(body), nil
}

// TextIndex creates (up) or drops the job search's optional text index.
// Its statements run one by one on one connection, outside a transaction:
// MySQL's session setting must hold for its ALTER TABLE, and PostgreSQL
// builds the index CONCURRENTLY, which no transaction may hold. Each
// statement is idempotent or checked first, so running it twice is not an
// error.
func TextIndex(ctx context.Context, drv driver.Driver, up bool) error {
	body, err := TextIndexSQL(drv.Migrations(), up)
	if err != nil {
		return err
	}
	have, err := HasTextIndex(ctx, drv)
	if err != nil {
		return err
	}
	if have == up {
		return nil
	}
	conn, err := drv.DB().Conn(ctx)
	if err != nil {
		return fmt.Errorf("text index: %w", err)
	}
	defer conn.Close()
	stmts := split(body)
	for i, st := range stmts {
		if _, err := conn.ExecContext(ctx, st.text); err != nil {
			return &StatementError{Index: i + 1, Count: len(stmts), Line: st.line, Statement: st.text, Err: err}
		}
	}
	return nil
}

// HasTextIndex reports whether the job search's optional text index
// exists (and, on PostgreSQL, is valid); false where the dialect has none.
func HasTextIndex(ctx context.Context, drv driver.Driver) (bool, error) {
	st, ok := drv.Catalog().Lookup(string(catalog.TextIndexExists))
	if !ok {
		return false, nil
	}
	var n int64
	if err := drv.DB().QueryRowContext(ctx, st.SQL).Scan(&n); err != nil {
		return false, fmt.Errorf("text index: %w", err)
	}
	return n > 0, nil
}
