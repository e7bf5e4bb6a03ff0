// Package postgres is the lockstep driver for PostgreSQL 12+ through pgx v5.
// It works on a *pgxpool.Pool or on a *sql.DB opened with pgx's stdlib.
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/internal/shell"
	"github.com/lockstep-queue/lockstep/driver/internal/sqlexec"
	"github.com/lockstep-queue/lockstep/internal/dsnparse/pgdsn"
	"github.com/lockstep-queue/lockstep/rowtype"
)

//go:embed migrations/*.sql migrations/optional/*.sql
var migrations embed.FS

// Driver runs the queue on PostgreSQL.
type Driver struct {
	shell.Shell
	pool *pgxpool.Pool // nil when built from a *sql.DB
}

var _ driver.Driver = (*Driver)(nil)

// Open creates a pgx pool from a DSN in either PostgreSQL form: a
// postgres:// or postgresql:// URL, or libpq's key=value string
// ("host=localhost port=5432 user=app dbname=app sslmode=disable"), with
// several hosts if wanted, as pgx takes them; the lockstep CLI takes the
// same. Its errors never show the password. With several hosts and no
// target_session_attrs, connections go to the first host that takes
// writes (target_session_attrs=read-write): after a failover, the
// promoted standby.
func Open(ctx context.Context, dsn string) (*Driver, error) {
	parsed, err := pgdsn.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	cfg := parsed.Config
	// PostgreSQL's FORCE INDEX: every catalogue statement declares the index
	// that finds its rows, and on a small or freshly loaded table the planner
	// would rather scan and sort. The penalty makes it take the declared
	// path whatever the statistics say; this pool is lockstep's alone.
	for k, v := range PlannerSettings() {
		if _, set := cfg.ConnConfig.RuntimeParams[k]; !set {
			cfg.ConnConfig.RuntimeParams[k] = v
		}
	}
	if len(cfg.ConnConfig.Fallbacks) > 0 && cfg.ConnConfig.ValidateConnect == nil &&
		!strings.Contains(strings.ToLower(dsn), "target_session_attrs") {
		// Several hosts (a primary and its standbys, any of which may be
		// promoted): connect to the one that takes writes, as
		// target_session_attrs=read-write asks. A DSN that sets
		// target_session_attrs itself keeps its choice.
		cfg.ConnConfig.ValidateConnect = pgconn.ValidateConnectTargetSessionAttrsReadWrite
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	d, err := New(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	shell.Own(&d.Shell, d.DB(), pool.Close)
	return d, nil
}

// PlannerSettings are the session settings Open gives its pool. Pools
// passed to New or NewDB keep their own settings: set these in the pool's
// RuntimeParams to get the same plans.
func PlannerSettings() map[string]string {
	return map[string]string{"enable_seqscan": "off", "enable_sort": "off"}
}

// New wraps a pgx pool.
func New(ctx context.Context, pool *pgxpool.Pool) (*Driver, error) {
	d, err := NewDB(ctx, stdlib.OpenDBFromPool(pool))
	if err != nil {
		return nil, err
	}
	d.pool = pool
	return d, nil
}

// NewDB wraps a *sql.DB opened with the pgx stdlib driver ("pgx").
func NewDB(ctx context.Context, db *sql.DB) (*Driver, error) {
	var version string
	if err := db.QueryRowContext(ctx, "SHOW server_version").Scan(&version); err != nil {
		return nil, fmt.Errorf("postgres: read server version: %w", rowtype.Classified(err, classify))
	}
	if err := CheckVersion(version); err != nil {
		return nil, err
	}
	cat, err := newCatalog()
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	d := &Driver{}
	d.Shell = shell.New(shell.Config{
		Dialect: "postgres", DB: db, Version: version, Migrations: Migrations(),
		Exec: &sqlexec.Dialect{
			Catalog:        cat,
			ColumnarInsert: columnarInsert,
			ColumnarFlow:   columnarFlow,
			BeginTx:        func(ctx context.Context, db *sql.DB) (*sql.Tx, error) { return db.BeginTx(ctx, nil) },
			Classify:       classify,
			ChunkSize:      1000,
			Wake:           sqlexec.NewWake(DefaultNotifyCooldown),
		},
		// READ COMMITTED is PostgreSQL's default, and asked for all the same:
		// a caller's transaction is READ COMMITTED whatever the server's
		// default_transaction_isolation says.
		BeginSQL: func(ctx context.Context, db *sql.DB) (*sql.Tx, error) {
			return db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		},
	})
	return d, nil
}

// MinMajorVersion is the oldest PostgreSQL lockstep runs on. SKIP LOCKED
// and jsonb || need 9.5; 12 is the oldest release lockstep is tested on and
// still the floor of what its documentation promises.
const MinMajorVersion = 12

var (
	// SHOW server_version ("15.19 (Debian 15.19-0+deb12u1)", "9.4.26"),
	// or SELECT version() ("PostgreSQL 15.19 on x86_64-pc-linux-gnu, ...").
	versionRE = regexp.MustCompile(`^(?:PostgreSQL\s+)?(\d+)(?:\.(\d+))?`)
	// SHOW server_version_num: major*10000 + minor (10 and later) or
	// major*10000 + minor*100 + patch (9.x): 150019, 90426.
	versionNumRE = regexp.MustCompile(`^\d{5,6}$`)
)

// CheckVersion refuses servers older than PostgreSQL 12 (MinMajorVersion).
// It reads SHOW server_version, SELECT version() and SHOW
// server_version_num alike.
func CheckVersion(version string) error {
	v := strings.TrimSpace(version)
	var major int
	switch m := versionRE.FindStringSubmatch(v); {
	case versionNumRE.MatchString(v):
		n, _ := strconv.Atoi(v)
		major = n / 10000
	case m != nil:
		var err error
		if major, err = strconv.Atoi(m[1]); err != nil {
			return fmt.Errorf("postgres: cannot read server version %q", version)
		}
	default:
		return fmt.Errorf("postgres: cannot read server version %q", version)
	}
	if major < MinMajorVersion {
		name := v
		if !strings.HasPrefix(name, "PostgreSQL") {
			name = "PostgreSQL " + name
		}
		return fmt.Errorf("postgres: %s is too old: lockstep needs %d or later", name, MinMajorVersion)
	}
	return nil
}

func columnarInsert(jobs []driver.JobInsertParams) []any {
	runs := make([]int64, len(jobs))
	queues := make([]string, len(jobs))
	kinds := make([]string, len(jobs))
	args := make([]string, len(jobs))
	prios := make([]int16, len(jobs))
	maxes := make([]int32, len(jobs))
	ats := make([]pgtype.Timestamptz, len(jobs))
	metas := make([]pgtype.Text, len(jobs))
	keys := make([]pgtype.Text, len(jobs))
	for i, j := range jobs {
		if j.LimitKey != "" {
			keys[i] = pgtype.Text{String: j.LimitKey, Valid: true}
		}
		if j.Metadata != nil {
			metas[i] = pgtype.Text{String: string(j.Metadata), Valid: true}
		}
		runs[i], queues[i], kinds[i], args[i] = j.RunID, j.Queue, j.Kind, string(j.Args)
		prios[i], maxes[i] = int16(j.Priority), int32(j.MaxAttempts)
		if !j.ScheduledAt.IsZero() {
			ats[i] = pgtype.Timestamptz{Time: j.ScheduledAt.UTC(), Valid: true}
		}
	}
	return []any{runs, queues, kinds, args, prios, maxes, ats, metas, keys}
}

// columnarFlow is job.insert_flow's arrays: job.insert's, with each job's
// status between args and priority, and its workflow columns between
// metadata and limit_key.
func columnarFlow(jobs []driver.JobInsertParams) []any {
	base := columnarInsert(jobs)
	statuses := make([]string, len(jobs))
	waiting := make([]int32, len(jobs))
	dependents := make([]int32, len(jobs))
	policies := make([]int16, len(jobs))
	callbacks := make([]pgtype.Text, len(jobs))
	for i, j := range jobs {
		statuses[i], waiting[i] = string(rowtype.StatusPending), int32(len(j.DependsOn))
		if len(j.DependsOn) > 0 {
			statuses[i] = string(rowtype.StatusWaiting)
		}
		dependents[i], policies[i] = int32(j.Dependents), int16(j.DepPolicy)
		if j.Callback != "" {
			callbacks[i] = pgtype.Text{String: j.Callback, Valid: true}
		}
	}
	out := append([]any{}, base[:4]...)
	out = append(out, statuses)
	out = append(out, base[4:8]...)
	return append(out, waiting, dependents, policies, callbacks, base[8])
}

func classify(err error) (rowtype.ErrorKind, string) {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		var ce *pgconn.ConnectError
		if errors.As(err, &ce) || driver.BrokenConnection(err) {
			return rowtype.ErrorConnection, ""
		}
		return rowtype.ErrorOther, ""
	}
	switch pe.Code {
	case "40P01":
		return rowtype.ErrorDeadlock, pe.Code
	case "40001":
		return rowtype.ErrorSerialization, pe.Code
	case "55P03":
		return rowtype.ErrorLockTimeout, pe.Code
	case "23505": // unique_violation
		return rowtype.ErrorDuplicate, pe.Code
	case "25006": // read_only_sql_transaction: a standby, or default_transaction_read_only
		return rowtype.ErrorUnavailable, pe.Code
	case "57P01", // admin_shutdown: the server is stopping, or the session was terminated
		"57P02", // crash_shutdown
		"57P03": // cannot_connect_now: the server is starting
		return rowtype.ErrorConnection, pe.Code
	}
	if strings.HasPrefix(pe.Code, "08") { // class 08: connection exception
		return rowtype.ErrorConnection, pe.Code
	}
	return rowtype.ErrorOther, pe.Code
}

// Migrations returns the dialect's embedded schema migrations; it needs no
// connection (lockstep migrate print uses it).
func Migrations() fs.FS { return shell.Migrations(migrations) }

// Pool is the pgx pool, or nil when the driver was built from a *sql.DB.
func (d *Driver) Pool() *pgxpool.Pool { return d.pool }

// UnwrapTx implements driver.Driver: it accepts a *sql.Tx or a pgx.Tx.
func (d *Driver) UnwrapTx(tx any) (driver.Executor, error) {
	switch t := tx.(type) {
	case *sql.Tx:
		if t != nil {
			return shell.InTx(&d.Shell, sqlexec.SQL(t)), nil
		}
	case pgx.Tx:
		if t != nil {
			return shell.InTx(&d.Shell, pgxQuerier{t}), nil
		}
	}
	return nil, fmt.Errorf("postgres: transaction must be a *sql.Tx or pgx.Tx, got %T", tx)
}

// pgxQuerier runs statements on a pgx transaction the caller owns.
type pgxQuerier struct{ tx pgx.Tx }

func (p pgxQuerier) Exec(ctx context.Context, query string, args ...any) (sqlexec.Result, error) {
	tag, err := p.tx.Exec(ctx, query, args...)
	if err != nil {
		return sqlexec.Result{}, err
	}
	return sqlexec.Result{RowsAffected: tag.RowsAffected()}, nil
}

func (p pgxQuerier) Query(ctx context.Context, query string, args ...any) (sqlexec.Rows, error) {
	rows, err := p.tx.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgxRows{rows}, nil
}

type pgxRows struct{ pgx.Rows }

func (r pgxRows) Close() error { r.Rows.Close(); return r.Rows.Err() }

// WithChunkSize returns a driver on the same pool whose multi-row writes
// (cancel, heartbeat) name at most n ids per statement; n = 1 writes one
// row per statement, as the fix in the measured write-up of the
// claim/cancel deadlock does. The lock order is the same for every n.
func (d *Driver) WithChunkSize(n int) *Driver {
	cp := *d
	cp.Shell = shell.Derive(d.Shell, func(c *shell.Config) { c.Exec.ChunkSize = max(n, 1) })
	return &cp
}
