// Package mysql is the lockstep driver for MySQL 8.0.1+ and MariaDB 10.6+
// (InnoDB), through go-sql-driver/mysql.
package mysql

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"regexp"
	"strconv"
	"strings"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/driver/internal/shell"
	"github.com/lockstep-queue/lockstep/driver/internal/sqlexec"
	"github.com/lockstep-queue/lockstep/internal/dsnparse/mysqldsn"
	"github.com/lockstep-queue/lockstep/rowtype"
)

//go:embed migrations/*.sql migrations/optional/*.sql
var migrations embed.FS

// Driver runs the queue on a MySQL or MariaDB pool.
type Driver struct {
	shell.Shell
	mariadb bool
	// sessionRC: the pool's sessions default to READ COMMITTED, so
	// transactions need not set it.
	sessionRC bool
	// isolation of the queue's own transactions; READ COMMITTED unless a
	// test or the soak asks for another with WithIsolation.
	isolation sql.IsolationLevel
	// galera: the server is a Galera cluster node (wsrep_on), and the
	// catalogue certifies the queue's guarding locks (GaleraCatalog).
	galera bool
}

var _ driver.Driver = (*Driver)(nil)

// Open opens a pool from a DSN in any of the MySQL forms: a mysql:// or
// mariadb:// URL ("mysql://user:pass@host:3306/db?param=value", with
// ?socket=/path for a unix socket) or go-sql-driver's own DSN
// ("user:pass@tcp(host:3306)/db", "user@unix(/path)/db"); the lockstep CLI
// takes the same. parseTime is switched on; the driver compares times on
// the server's UTC clock, so the session time zone does not matter. Its
// errors never show the password.
//
// A URL may name several hosts ("mysql://app:pw@db1:3306,db2:3306,db3:3306/q":
// the nodes of a Galera cluster, a primary and its replicas): the pool's
// connections go to the first of them, in that order, that accepts a
// connection and can take writes (not read_only; on Galera, wsrep_ready),
// and stay on that host while it can; when it dies or stops being ready
// the pool moves to the next ready host, and stays there. Each move is
// logged as a warning (OpenWith's Options.Logger).
func Open(ctx context.Context, dsn string) (*Driver, error) {
	return OpenWith(ctx, dsn, Options{})
}

// Options are Open's settings beyond the DSN.
type Options struct {
	// Logger receives a warning each time the pool's connections move to
	// another host of a DSN that names several. Default slog.Default().
	Logger *slog.Logger
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, dsn string, opts Options) (*Driver, error) {
	parsed, err := mysqldsn.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("mysql: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	hosts := parsed.Hosts()
	cfg := parsed.Config.Clone()
	cfg.ParseTime = true
	if !parsed.HasParam("interpolateParams") {
		// Without it every statement with arguments is prepared, executed
		// and closed on the server: three round trips instead of one. The
		// driver escapes arguments for the connection's utf8mb4 charset.
		cfg.InterpolateParams = true
	}
	// The probe never logs a move: the pool below is the one that stays.
	probe, err := openConfig(cfg, hosts, nil)
	if err != nil {
		return nil, err
	}
	d, err := New(ctx, probe)
	_ = probe.Close()
	if err != nil {
		return nil, err
	}
	// The queue's transactions are READ COMMITTED; making it the session's
	// default saves a SET TRANSACTION round trip per transaction.
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	version, err := d.Version(ctx)
	if err != nil {
		return nil, fmt.Errorf("mysql: read server version: %w", rowtype.Classified(err, classify))
	}
	cfg.Params[IsolationVariable(version)] = "'READ-COMMITTED'"
	db, err := openConfig(cfg, hosts, opts.Logger)
	if err != nil {
		return nil, err
	}
	db.SetMaxIdleConns(16)
	shell.Own(&d.Shell, db, nil)
	d.sessionRC = true
	return d, nil
}

// openConfig opens a pool on cfg's server, or on the first ready one of
// hosts when there are several.
func openConfig(cfg *gomysql.Config, hosts []string, logger *slog.Logger) (*sql.DB, error) {
	if len(hosts) > 0 {
		f, err := newFailover(cfg, hosts, logger)
		if err != nil {
			return nil, err
		}
		return sql.OpenDB(f), nil
	}
	connector, err := gomysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysql: %w", err)
	}
	return sql.OpenDB(connector), nil
}

// IsolationVariable names the session variable that holds the isolation
// level on the server of this VERSION(): MariaDB before 11.1 knows only
// tx_isolation (transaction_isolation fails there with error 1193), MySQL
// 8 and later only transaction_isolation (tx_isolation was removed in 8.0).
func IsolationVariable(version string) string {
	if strings.Contains(strings.ToLower(version), "mariadb") && !versionAtLeast(version, 11, 1) {
		return "tx_isolation"
	}
	return "transaction_isolation"
}

func versionAtLeast(version string, major, minor int) bool {
	m := versionRE.FindStringSubmatch(version)
	if m == nil {
		return false
	}
	ma, _ := strconv.Atoi(m[1])
	mi, _ := strconv.Atoi(m[2])
	return ma > major || ma == major && mi >= minor
}

// New wraps an existing pool. It checks the server version: SKIP LOCKED
// needs MySQL 8.0.1 or MariaDB 10.6.
func New(ctx context.Context, db *sql.DB) (*Driver, error) {
	var version string
	// The step between the ids of one multi-row insert: MySQL has no
	// INSERT ... RETURNING, so the ids are computed from the first one.
	// It is a session variable; every session of a pool starts from the
	// same DSN, so one session's value is the pool's (a server running
	// Group Replication multi-primary sets it to 7, for one).
	var step int64
	if err := db.QueryRowContext(ctx, "SELECT VERSION(), @@SESSION.auto_increment_increment").Scan(&version, &step); err != nil {
		return nil, fmt.Errorf("mysql: read server version: %w", rowtype.Classified(err, classify))
	}
	if step < 1 {
		return nil, fmt.Errorf("mysql: the server reports auto_increment_increment %d", step)
	}
	mariadb, err := CheckVersion(version)
	if err != nil {
		return nil, err
	}
	// A Galera node: wsrep_on is ON (MariaDB's server has the variable,
	// OFF, without a cluster; Oracle MySQL has none; a MySQL build with
	// Galera, such as Percona XtraDB Cluster, has it too — only MariaDB's
	// is tested here). Its row locks are its own, so the queue certifies
	// the ones that guard a decision (catalog.Capabilities.CertifyLocks).
	galera := false
	var name, value string
	switch err := db.QueryRowContext(ctx, "SHOW GLOBAL VARIABLES LIKE 'wsrep_on'").Scan(&name, &value); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return nil, fmt.Errorf("mysql: read wsrep_on: %w", rowtype.Classified(err, classify))
	default:
		galera = strings.EqualFold(value, "ON")
	}
	return newDriver(db, version, mariadb, galera, step)
}

// flavorOf names the catalogue's dialect.
func flavorOf(mariadb bool) string {
	if mariadb {
		return "mariadb"
	}
	return "mysql"
}

// newDriver builds the driver for a server of this version; galera
// chooses the catalogue with certified locks.
func newDriver(db *sql.DB, version string, mariadb, galera bool, step int64) (*Driver, error) {
	// MariaDB has INSERT ... RETURNING since 10.5; MySQL 8 does not.
	cat, err := newCatalog(flavorOf(mariadb), mariadb, galera)
	if err != nil {
		return nil, fmt.Errorf("mysql: %w", err)
	}
	d := &Driver{mariadb: mariadb, galera: galera}
	d.Shell = shell.New(shell.Config{
		Dialect: "mysql", DB: db, Version: version, Migrations: Migrations(),
		Exec: &sqlexec.Dialect{
			Catalog:      cat,
			BeginTx:      d.beginTx,
			Classify:     classify,
			ChunkSize:    500,
			InsertIDStep: step,
		},
		BeginSQL: d.beginTx,
	})
	return d, nil
}

// The patch part is optional: "5.7" is read as 5.7.0.
var versionRE = regexp.MustCompile(`^(\d+)\.(\d+)(?:\.(\d+))?`)

// CheckVersion reports whether version is MariaDB and refuses servers
// without SKIP LOCKED.
func CheckVersion(version string) (mariadb bool, err error) {
	m := versionRE.FindStringSubmatch(version)
	if m == nil {
		return false, fmt.Errorf("mysql: cannot read server version %q", version)
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	patch, _ := strconv.Atoi(m[3]) // "" (no patch part) reads as 0
	mariadb = strings.Contains(strings.ToLower(version), "mariadb")
	switch {
	case mariadb && (major < 10 || major == 10 && minor < 6):
		return true, fmt.Errorf("mysql: MariaDB %s is too old: lockstep needs 10.6 or later (SKIP LOCKED)", version)
	case !mariadb && (major < 8 || major == 8 && minor == 0 && patch < 1):
		return false, fmt.Errorf("mysql: MySQL %s is too old: lockstep needs 8.0.1 or later (SKIP LOCKED)", version)
	}
	return mariadb, nil
}

func (d *Driver) beginTx(ctx context.Context, db *sql.DB) (*sql.Tx, error) {
	if d.isolation != sql.LevelDefault && d.isolation != sql.LevelReadCommitted {
		return db.BeginTx(ctx, &sql.TxOptions{Isolation: d.isolation})
	}
	if d.sessionRC {
		return db.BeginTx(ctx, nil)
	}
	return db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
}

func classify(err error) (rowtype.ErrorKind, string) {
	var me *gomysql.MySQLError
	var nw *notWritableError
	if !errors.As(err, &me) {
		if errors.As(err, &nw) {
			// No host of a failover pool would take writes.
			return rowtype.ErrorUnavailable, ""
		}
		// The driver reports a connection lost mid-statement as
		// ErrInvalidConn (it has already logged the network error).
		if errors.Is(err, gomysql.ErrInvalidConn) || driver.BrokenConnection(err) {
			return rowtype.ErrorConnection, ""
		}
		return rowtype.ErrorOther, ""
	}
	code := strconv.Itoa(int(me.Number))
	switch me.Number {
	case 1213:
		return rowtype.ErrorDeadlock, code
	case 1205, 3572: // 3572: MySQL 8's NOWAIT
		return rowtype.ErrorLockTimeout, code
	case 1020: // MariaDB 11.6+ innodb_snapshot_isolation: record changed
		return rowtype.ErrorSerialization, code
	case 1062: // ER_DUP_ENTRY
		return rowtype.ErrorDuplicate, code
	case 1047, // ER_UNKNOWN_COM_ERROR: on Galera, the node is not ready (WSREP has not yet prepared node for application use)
		1290, // ER_OPTION_PREVENTS_STATEMENT: --read-only, --super-read-only
		1836: // ER_READ_ONLY_MODE
		return rowtype.ErrorUnavailable, code
	case 1053, // ER_SERVER_SHUTDOWN
		1077, // ER_NORMAL_SHUTDOWN
		1152, // ER_ABORTING_CONNECTION
		1927, // MariaDB ER_CONNECTION_KILLED
		2006, // CR_SERVER_GONE_ERROR
		2013, // CR_SERVER_LOST
		4031: // MySQL 8.0.24+ ER_CLIENT_INTERACTION_TIMEOUT
		return rowtype.ErrorConnection, code
	}
	return rowtype.ErrorOther, code
}

// MariaDB reports whether the server is MariaDB.
func (d *Driver) MariaDB() bool { return d.mariadb }

// Galera reports whether the server is a Galera cluster node, where the
// driver certifies the locks that guard a decision (docs/scaling.md).
func (d *Driver) Galera() bool { return d.galera }

// WithGalera returns a driver on the same pool that certifies its guarding
// locks (on) or does not, whatever the server is: the plan guard explains
// the Galera catalogue on a single MariaDB server, and a negative control
// shows on a cluster what goes wrong without it. The queue itself uses
// what New found.
func (d *Driver) WithGalera(on bool) *Driver {
	cp := *d
	cp.galera = on
	cat := catalog.Must(newCatalog(flavorOf(d.mariadb), d.mariadb, on))
	cp.Shell = shell.Derive(d.Shell, func(c *shell.Config) {
		c.Exec.Catalog = cat
		c.BeginSQL = cp.beginTx
	})
	return &cp
}

// Migrations returns the dialect's embedded schema migrations; it needs no
// connection (lockstep migrate print uses it).
func Migrations() fs.FS { return shell.Migrations(migrations) }

// UnwrapTx implements driver.Driver: it accepts a *sql.Tx.
func (d *Driver) UnwrapTx(tx any) (driver.Executor, error) {
	t, ok := tx.(*sql.Tx)
	if !ok || t == nil {
		return nil, fmt.Errorf("mysql: transaction must be a *sql.Tx, got %T", tx)
	}
	return shell.InTx(&d.Shell, sqlexec.SQL(t)), nil
}

// WithIsolation returns a driver on the same pool whose Begin and BeginSQL
// open transactions at the given level; statements run outside a
// transaction use the session's level. The executor's own multi-statement
// transactions (the MySQL claim, heartbeat, cancel, prune, batched DONE)
// stay at READ COMMITTED whatever is asked here: lockstep's lock order is
// proven for READ COMMITTED, which locks only the rows a statement changes,
// and a soak that ran those transactions at REPEATABLE READ as well saw a
// claim deadlock once a minute on MariaDB 10.11 (gap locks). The soak runs
// at REPEATABLE READ sessions to show the single statements hold there too.
func (d *Driver) WithIsolation(level sql.IsolationLevel) *Driver {
	cp := *d
	cp.isolation = level
	cp.Shell = shell.Derive(d.Shell, func(c *shell.Config) { c.BeginSQL = cp.beginTx })
	return &cp
}

// WithChunkSize returns a driver on the same pool whose multi-row writes
// (cancel, heartbeat) name at most n ids per statement; n = 1 writes one
// row per statement, as the fix in the measured write-up of the
// claim/cancel deadlock does. The lock order is the same for every n.
func (d *Driver) WithChunkSize(n int) *Driver {
	cp := *d
	cp.Shell = shell.Derive(d.Shell, func(c *shell.Config) { c.Exec.ChunkSize = max(n, 1) })
	return &cp
}
