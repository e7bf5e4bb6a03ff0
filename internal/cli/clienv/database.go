package clienv

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/spf13/cobra"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/internal/dsn"
	"github.com/lockstep-queue/lockstep/migrate"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// DSNSource is where the database's DSN came from.
type DSNSource int

const (
	// DSNDefault: neither --dsn nor $LOCKSTEP_DSN named a database (or
	// they were empty), so the DSN is the SQLite file ./lockstep.db.
	DSNDefault DSNSource = iota
	// DSNFlag: --dsn.
	DSNFlag
	// DSNEnv: $LOCKSTEP_DSN.
	DSNEnv
)

// DatabaseAnnotation is the cobra annotation that says how a command uses
// the database: one of the Database* values. A command without it takes
// its parent's; one whose ancestors have none either is DatabaseSchema.
const DatabaseAnnotation = "lockstep/database"

// How a command uses the database.
const (
	// DatabaseSchema: the command reads or changes jobs, runs or queues,
	// so it needs lockstep's tables at the version this binary has.
	// OpenDriver checks that before the command runs a statement.
	DatabaseSchema = "schema"
	// DatabaseAny: the command needs none of lockstep's tables, or
	// checks the schema itself (migrate status and down, work and serve,
	// whose Client.Start checks it, the lab's commands on their own
	// tables).
	DatabaseAny = "any"
	// DatabaseCreates: the command creates lockstep's tables, so it may
	// also create the default SQLite file: `migrate up`.
	DatabaseCreates = "creates"
)

// SetDatabaseUse sets cmd's DatabaseAnnotation; its subcommands take it
// unless they set their own.
func SetDatabaseUse(cmd *cobra.Command, use string) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[DatabaseAnnotation] = use
}

// DatabaseUseOf is how cmd uses the database: its own annotation, else
// its nearest ancestor's, else DatabaseSchema.
func DatabaseUseOf(cmd *cobra.Command) string {
	for c := cmd; c != nil; c = c.Parent() {
		if use, ok := c.Annotations[DatabaseAnnotation]; ok {
			return use
		}
	}
	return DatabaseSchema
}

// OpenDriver opens the database named by --dsn, as the command that runs
// uses it (Database): without a DSN it refuses to create the default
// SQLite file unless the command creates lockstep's tables, and for a
// command that needs them it checks that they are there, at this binary's
// version, before any of the command's statements meets their absence in
// the database's own words. The caller closes the driver.
func (e *Env) OpenDriver(ctx context.Context) (driver.Driver, error) {
	if err := e.checkDefaultFile(); err != nil {
		return nil, err
	}
	d, err := dsn.Open(ctx, e.DSN)
	if err != nil {
		return nil, err
	}
	if e.Database == DatabaseSchema || e.Database == "" {
		if err := e.CheckSchema(ctx, d); err != nil {
			_ = d.Close()
			return nil, err
		}
	}
	return d, nil
}

// ServiceStartWait is how long a command that runs as a service (work,
// serve) waits at its start for a database that is away — restarting,
// failing over, a Galera node rejoining — before it gives up: as long as
// a started client rides out a lost connection, so that a process
// restarted by its supervisor during a failover does not exit again.
const ServiceStartWait = 30 * time.Second

// OpenDriverWaiting is OpenDriver for a command that runs as a service:
// while the database cannot be reached, or refuses writes (a standby, a
// Galera node not yet synced), it waits and tries again, with backoff up
// to a second, for up to window or until ctx ends. It logs the first
// failure and every tenth. Any other failure — a bad DSN, a wrong
// password, a schema at another version — returns at once.
func (e *Env) OpenDriverWaiting(ctx context.Context, window time.Duration) (driver.Driver, error) {
	start := time.Now()
	for i := 1; ; i++ {
		d, err := e.OpenDriver(ctx)
		if err == nil {
			if i > 1 && e.Logger != nil {
				e.Logger.Info("lockstep: the database is back", "waited", time.Since(start).Round(time.Millisecond))
			}
			return d, nil
		}
		kind := rowtype.KindOf(err)
		if kind != rowtype.ErrorConnection && kind != rowtype.ErrorUnavailable || ctx.Err() != nil || time.Since(start) >= window {
			return nil, err
		}
		if e.Logger != nil && (i == 1 || i%10 == 0) {
			e.Logger.Warn("lockstep: the database is away; waiting for it", "kind", kind.String(),
				"waited", time.Since(start).Round(time.Millisecond), "give_up_after", window, "err", err)
		}
		wait := min(time.Duration(1<<min(i, 5))*30*time.Millisecond, time.Second)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
	}
}

// OpenReadDriver opens readDSN, a replica of the --dsn database that
// commands read from instead (serve's pages, stats), and checks that it
// holds lockstep's tables. It must be of the same kind as --dsn.
func (e *Env) OpenReadDriver(ctx context.Context, readDSN string) (driver.Driver, error) {
	d, err := dsn.Open(ctx, readDSN)
	if err != nil {
		return nil, fmt.Errorf("--read-dsn: %w", err)
	}
	if err := e.CheckSchema(ctx, d); err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("--read-dsn: %w", err)
	}
	if d.Dialect() == "sqlite" {
		_ = d.Close()
		return nil, errors.New("--read-dsn names a SQLite file: SQLite has no replicas; read from the --dsn database")
	}
	return d, nil
}

// checkDefaultFile refuses to let a command create ./lockstep.db. Opening
// a SQLite file creates it, so a forgotten --dsn would otherwise enqueue
// into a new file in whatever directory the command ran in; only `migrate
// up` may create it, as it creates the tables every other command needs.
// An existing ./lockstep.db is used, as the help says.
func (e *Env) checkDefaultFile() error {
	if strings.TrimSpace(e.DSN) != "" || e.Database == DatabaseCreates {
		return nil
	}
	_, err := os.Stat(dsn.DefaultSQLitePath)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no database given: pass --dsn or set $LOCKSTEP_DSN; without them lockstep uses ./%s, which does not exist here ('lockstep migrate up' creates it)",
			dsn.DefaultSQLitePath)
	default:
		return fmt.Errorf("no database given, and the default ./%s cannot be read: %w", dsn.DefaultSQLitePath, err)
	}
}

// SchemaError is a database whose lockstep schema is not the one this
// binary has: absent, older or newer. Its message says what to run.
type SchemaError struct {
	// Where is the database, its DSN without the password.
	Where string
	// Source is where the DSN came from: the advice names it.
	Source DSNSource
	State  migrate.State
}

func (e *SchemaError) Error() string {
	st := e.State
	same := map[DSNSource]string{
		DSNFlag:    " with the same --dsn",
		DSNEnv:     " with the same $LOCKSTEP_DSN",
		DSNDefault: " in this directory",
	}[e.Source]
	switch {
	case st.Current == 0:
		return fmt.Sprintf("the database at %s has no lockstep tables: run 'lockstep migrate up'%s first", e.Where, same)
	case st.Current > st.Latest:
		return fmt.Sprintf("the lockstep schema of the database at %s is at migration %d, newer than this binary knows (it has up to %d): "+
			"use the newer lockstep that migrated it, or revert with its 'lockstep migrate down'", e.Where, st.Current, st.Latest)
	case len(st.Unknown) > 0:
		return fmt.Sprintf("the database at %s records migrations this binary does not have (%s): it was migrated by another lockstep build; use that build",
			e.Where, joinInts(st.Unknown))
	default:
		return fmt.Sprintf("the lockstep schema of the database at %s is at migration %d, this binary needs %d: run 'lockstep migrate up'%s first",
			e.Where, st.Current, st.Latest, same)
	}
}

func joinInts(vs []int) string {
	s := make([]string, 0, len(vs))
	for _, v := range slices.Sorted(slices.Values(vs)) {
		s = append(s, fmt.Sprint(v))
	}
	return strings.Join(s, ", ")
}

// CheckSchema returns a *SchemaError unless d holds lockstep's tables at
// the version this binary has. It reads lockstep_migrations once and
// writes nothing.
func (e *Env) CheckSchema(ctx context.Context, d driver.Driver) error {
	st, err := e.SchemaState(ctx, d)
	if err != nil {
		return err
	}
	return e.SchemaProblem(st)
}

// SchemaProblem is the *SchemaError of a state SchemaState read, nil for
// a schema at this binary's version.
func (e *Env) SchemaProblem(st migrate.State) error {
	if st.UpToDate() {
		return nil
	}
	return &SchemaError{Where: e.Where(), Source: e.DSNSource, State: st}
}

// SchemaState reads which migrations d records, without writing: a
// database without lockstep_migrations has none, like one whose
// migrations were all reverted.
func (e *Env) SchemaState(ctx context.Context, d driver.Driver) (migrate.State, error) {
	m, err := migrate.New(d)
	if err != nil {
		return migrate.State{}, err
	}
	st, err := m.ReadState(ctx)
	if err != nil {
		if missingTable(err) {
			return migrate.State{Latest: m.Latest(), Pending: m.All()}, nil
		}
		// Classified, so that OpenDriverWaiting can tell a database away
		// from one that answers.
		err = rowtype.Classified(err, func(err error) (rowtype.ErrorKind, string) { return d.ClassifyError(err), "" })
		return migrate.State{}, fmt.Errorf("read the schema version of the database at %s: %w", e.Where(), err)
	}
	return st, nil
}

// Where is the database as messages name it: its DSN without the
// password.
func (e *Env) Where() string {
	p, err := dsn.Parse(e.DSN)
	if err != nil {
		return "(unparsable --dsn)"
	}
	return p.Redacted
}

// missingTable reports whether err is the database saying that a table it
// was asked to read does not exist, by each server's code: MySQL's
// ER_NO_SUCH_TABLE, PostgreSQL's undefined_table. SQLite has no code of
// its own for it, only the generic SQLITE_ERROR, which for the fixed
// SELECT of lockstep_migrations can only mean that the table, or a column
// of it, is missing: either way, not lockstep's bookkeeping.
func missingTable(err error) bool {
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == 1146
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "42P01"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_ERROR
	}
	return false
}
