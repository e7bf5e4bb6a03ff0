// Package shell is the part of a lockstep driver that is the same on every
// database: the driver.Driver methods that hand out the catalogue, the
// migrations, the pool, the shared executor and transactions, classify
// errors and close. A dialect embeds a Shell and writes only what truly
// differs: opening, the version check, error classification, UnwrapTx, and
// on PostgreSQL LISTEN/NOTIFY.
//
// What a dialect needs beyond those methods (taking ownership of the pool,
// deriving a driver, running in a caller's transaction) is a function of
// this package, not a method, so that it does not become a method of every
// driver that embeds a Shell.
package shell

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/driver/internal/sqlexec"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// Config is what a dialect hands its shell.
type Config struct {
	// Dialect is what Driver.Dialect reports: "mysql", "postgres", "sqlite".
	Dialect string
	// DB is the pool.
	DB *sql.DB
	// Version is the server's version string, read when the driver was made.
	Version string
	// Exec is the dialect's part of the shared executor: its catalogue,
	// the queue's own transactions, error classification.
	Exec *sqlexec.Dialect
	// Migrations holds the dialect's schema migrations.
	Migrations fs.FS
	// BeginSQL opens the transactions that Begin and BeginSQL hand to the
	// caller; its error is returned as "<dialect>: begin: …". It is not
	// Exec.BeginTx, which opens the executor's own: a dialect may ask for
	// the isolation level explicitly here and rely on the session there.
	BeginSQL func(ctx context.Context, db *sql.DB) (*sql.Tx, error)
}

// Shell implements the methods of driver.Driver that every dialect shares.
type Shell struct {
	cfg Config
	// owned: Close closes the pool, then runs closeAlso; a driver made on a
	// pool the caller passed in, or derived from another, leaves it open.
	owned     bool
	closeAlso func()
}

// New returns the shell of a driver on a pool the caller owns.
func New(cfg Config) Shell { return Shell{cfg: cfg} }

// Own makes the driver the owner of db, which becomes its pool: the
// dialect's Open made it, so Close closes it and then runs also (when not
// nil), for what was opened with it.
func Own(s *Shell, db *sql.DB, also func()) {
	s.cfg.DB, s.owned, s.closeAlso = db, true, also
}

// Derive returns the shell of a driver derived from s's on the same pool (at
// another isolation level, chunk size or wake-up pacing). Its Close leaves
// the pool to the original. change, when not nil, edits a copy of the
// configuration, Exec included, so the derived driver's executor changes
// and the original's does not.
func Derive(s Shell, change func(*Config)) Shell {
	s.owned, s.closeAlso = false, nil
	if change != nil {
		exec := *s.cfg.Exec
		s.cfg.Exec = &exec
		change(&s.cfg)
	}
	return s
}

// InTx returns the shared executor inside a transaction the caller owns.
func InTx(s *Shell, q sqlexec.Querier) driver.Executor { return sqlexec.InTx(s.cfg.Exec, q) }

// Migrations returns the migrations/ directory of a dialect's embedded
// files; the directory is part of the build, so its absence is a
// programming error.
func Migrations(embedded fs.FS) fs.FS {
	sub, err := fs.Sub(embedded, "migrations")
	if err != nil {
		panic(err)
	}
	return sub
}

// Dialect implements driver.Driver.
func (s *Shell) Dialect() string { return s.cfg.Dialect }

// Catalog implements driver.Driver.
func (s *Shell) Catalog() *catalog.Catalog { return s.cfg.Exec.Catalog }

// Migrations implements driver.Driver.
func (s *Shell) Migrations() fs.FS { return s.cfg.Migrations }

// DB implements driver.Driver.
func (s *Shell) DB() *sql.DB { return s.cfg.DB }

// Executor implements driver.Driver.
func (s *Shell) Executor() driver.Executor { return sqlexec.New(s.cfg.Exec, s.cfg.DB) }

// Begin implements driver.Driver.
func (s *Shell) Begin(ctx context.Context) (driver.Tx, error) {
	tx, err := s.BeginSQL(ctx)
	if err != nil {
		return nil, err
	}
	return sqlexec.NewTx(s.cfg.Exec, tx), nil
}

// BeginSQL implements driver.Driver.
func (s *Shell) BeginSQL(ctx context.Context) (*sql.Tx, error) {
	tx, err := s.cfg.BeginSQL(ctx, s.cfg.DB)
	if err != nil {
		return nil, fmt.Errorf("%s: begin: %w", s.cfg.Dialect, err)
	}
	return tx, nil
}

// ClassifyError implements driver.Driver.
func (s *Shell) ClassifyError(err error) rowtype.ErrorKind {
	if k := rowtype.KindOf(err); k != rowtype.ErrorOther {
		return k
	}
	k, _ := s.cfg.Exec.Classify(err)
	return k
}

// Version implements driver.Driver.
func (s *Shell) Version(context.Context) (string, error) { return s.cfg.Version, nil }

// Close closes the pool if the driver owns it.
func (s *Shell) Close() error {
	if !s.owned {
		return nil
	}
	err := s.cfg.DB.Close()
	if s.closeAlso != nil {
		s.closeAlso()
	}
	return err
}
