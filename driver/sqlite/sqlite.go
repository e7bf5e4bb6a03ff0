// Package sqlite is lockstep's embedded, zero-setup driver on
// modernc.org/sqlite (pure Go, no cgo): WAL, BEGIN IMMEDIATE transactions
// and a busy timeout.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/internal/shell"
	"github.com/lockstep-queue/lockstep/driver/internal/sqlexec"
	"github.com/lockstep-queue/lockstep/internal/dsnparse/sqlitedsn"
	"github.com/lockstep-queue/lockstep/rowtype"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Driver runs the queue on an SQLite database file.
type Driver struct {
	shell.Shell
}

var _ driver.Driver = (*Driver)(nil)

// Open opens (creating if needed) the database a DSN names, in any of the
// SQLite forms: a bare path ("app.db", "./data/q.db", "/var/lib/q.db"),
// "sqlite:path", "sqlite:///abs/path" or SQLite's URI "file:path?params";
// the lockstep CLI takes the same. A path is taken literally up to a '?',
// which starts SQLite URI parameters. It sets what the queue needs: WAL,
// BEGIN IMMEDIATE, a busy timeout, and synchronous=NORMAL (a commit
// survives the process's crash; "file:q.db?_pragma=synchronous(FULL)"
// makes it survive a power loss too, at an fsync per commit).
func Open(ctx context.Context, dsn string) (*Driver, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	parsed, err := sqlitedsn.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	uri := parsed.URI()
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "busy_timeout(10000)")
	if !setsPragma(uri, "synchronous") {
		// NORMAL: in WAL mode a commit survives a crash of the process
		// (kill -9), not a power loss of the machine; the DSN's own
		// _pragma=synchronous(FULL) buys that at an fsync per commit.
		q.Add("_pragma", "synchronous(NORMAL)")
	}
	q.Add("_pragma", "foreign_keys(1)")
	// Every transaction takes the write lock at BEGIN: a read that later
	// upgrades to a write can fail with BUSY no busy timeout can cure.
	q.Set("_txlock", "immediate")
	sep := "?"
	if strings.Contains(uri, "?") {
		sep = "&"
	}
	db, err := sql.Open("sqlite", uri+sep+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", parsed.Shown, err)
	}
	// One writer at a time is SQLite's nature; a small pool keeps readers
	// concurrent without piling writers onto the busy handler.
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	d, err := New(ctx, db)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	shell.Own(&d.Shell, db, nil)
	return d, nil
}

// setsPragma reports whether a URI's own parameters set the pragma name
// (_pragma=name(value), as the modernc driver takes them).
func setsPragma(uri, name string) bool {
	_, query, ok := strings.Cut(uri, "?")
	if !ok {
		return false
	}
	values, err := url.ParseQuery(query)
	if err != nil {
		return false
	}
	for _, v := range values["_pragma"] {
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(v)), name) {
			return true
		}
	}
	return false
}

// New wraps a *sql.DB opened with the "sqlite" driver. The pool should use
// _txlock=immediate and a busy timeout, as Open sets.
func New(ctx context.Context, db *sql.DB) (*Driver, error) {
	var version string
	if err := db.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&version); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	cat, err := newCatalog()
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	d := &Driver{}
	d.Shell = shell.New(shell.Config{
		Dialect: "sqlite", DB: db, Version: version, Migrations: Migrations(),
		Exec: &sqlexec.Dialect{
			Catalog:  cat,
			TimeArg:  func(t time.Time) any { return t.UTC().Format(sqlexec.TimeLayout) },
			BeginTx:  func(ctx context.Context, db *sql.DB) (*sql.Tx, error) { return db.BeginTx(ctx, nil) },
			Classify: classify,
			// SQLite allows 32766 parameters per statement.
			ChunkSize: 500,
		},
		BeginSQL: beginSQL,
	})
	return d, nil
}

// beginSQL opens a caller's transaction (BEGIN IMMEDIATE, by the pool's
// _txlock). BEGIN IMMEDIATE takes the write lock, so it is where a busy
// database shows: the error says so by kind, for the caller to retry.
func beginSQL(ctx context.Context, db *sql.DB) (*sql.Tx, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		if kind, code := classify(err); kind != rowtype.ErrorOther {
			return nil, &rowtype.DBError{Kind: kind, Code: code, Err: err}
		}
		return nil, err
	}
	return tx, nil
}

func classify(err error) (rowtype.ErrorKind, string) {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return rowtype.ErrorOther, ""
	}
	code := se.Code()
	// Extended codes carry the primary code in their low byte.
	switch code & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return rowtype.ErrorBusy, strconv.Itoa(code)
	}
	// A primary key is a unique index too: MySQL's 1062 and PostgreSQL's
	// 23505 cover both, and so does this.
	if code == sqlite3.SQLITE_CONSTRAINT_UNIQUE || code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY {
		return rowtype.ErrorDuplicate, strconv.Itoa(code)
	}
	return rowtype.ErrorOther, strconv.Itoa(code)
}

// Migrations returns the dialect's embedded schema migrations; it needs no
// connection (lockstep migrate print uses it).
func Migrations() fs.FS { return shell.Migrations(migrations) }

// UnwrapTx implements driver.Driver: it accepts a *sql.Tx.
func (d *Driver) UnwrapTx(tx any) (driver.Executor, error) {
	t, ok := tx.(*sql.Tx)
	if !ok || t == nil {
		return nil, fmt.Errorf("sqlite: transaction must be a *sql.Tx, got %T", tx)
	}
	return shell.InTx(&d.Shell, sqlexec.SQL(t)), nil
}
