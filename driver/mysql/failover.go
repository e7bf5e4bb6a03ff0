package mysql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/lockstep-queue/lockstep/rowtype"
)

// failover connects to the first of several servers that accepts a
// connection and says it can take writes: on a MariaDB Galera cluster a
// node that is not Synced (joining, donating a full state transfer, or
// cut off from the cluster's primary component) answers queries with
// error 1047 and sets wsrep_ready OFF; a MySQL or MariaDB replica, or a
// Group Replication secondary, is read_only. A new connection goes to
// the host the pool's latest connection went to while it is ready, and
// otherwise to the first ready host in the order the DSN names them: a
// pool moves only when its host fails, and not back when the first host
// returns, because on Galera what rests on row locks (limits, sequences,
// workflow promotion) holds only while every writer writes through one
// node. database/sql discards a connection the server closed or killed,
// and its next one comes here.
type failover struct {
	hosts      []string // as the DSN names them, for messages
	connectors []driver.Connector
	logger     *slog.Logger

	mu   sync.Mutex
	last int // the host the latest connection went to; -1 before any
}

var _ driver.Connector = (*failover)(nil)

func newFailover(cfg *gomysql.Config, hosts []string, logger *slog.Logger) (*failover, error) {
	f := &failover{hosts: hosts, logger: logger, last: -1}
	for _, h := range hosts {
		c := cfg.Clone()
		c.Net, c.Addr = "tcp", h
		conn, err := gomysql.NewConnector(c)
		if err != nil {
			return nil, fmt.Errorf("mysql: host %s: %w", h, err)
		}
		f.connectors = append(f.connectors, conn)
	}
	return f, nil
}

// Connect implements driver.Connector.
func (f *failover) Connect(ctx context.Context) (driver.Conn, error) {
	var errs []error
	f.mu.Lock()
	last := f.last
	f.mu.Unlock()
	order := make([]int, 0, len(f.connectors))
	if last >= 0 {
		order = append(order, last)
	}
	for i := range f.connectors {
		if i != last {
			order = append(order, i)
		}
	}
	for _, i := range order {
		c := f.connectors[i]
		conn, err := c.Connect(ctx)
		if err == nil {
			err = writable(ctx, conn)
			if err != nil {
				_ = conn.Close()
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			errs = append(errs, fmt.Errorf("%s: %w", f.hosts[i], err))
			continue
		}
		f.switched(i, errs)
		return &failoverConn{inner: conn}, nil
	}
	return nil, fmt.Errorf("no host of %d can take writes: %w", len(f.hosts), errors.Join(errs...))
}

// Driver implements driver.Connector.
func (f *failover) Driver() driver.Driver { return f.connectors[0].Driver() }

// Host is the host the latest connection went to ("" before any).
func (f *failover) Host() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last < 0 {
		return ""
	}
	return f.hosts[f.last]
}

// switched logs a move from one host to another.
func (f *failover) switched(i int, skipped []error) {
	f.mu.Lock()
	prev := f.last
	f.last = i
	f.mu.Unlock()
	if prev == i || f.logger == nil {
		return
	}
	if prev < 0 {
		if i > 0 {
			f.logger.Warn("lockstep: connected to a later host of the DSN", "host", f.hosts[i],
				"skipped", errors.Join(skipped...).Error())
		}
		return
	}
	attrs := []any{"from", f.hosts[prev], "to", f.hosts[i]}
	if len(skipped) > 0 {
		attrs = append(attrs, "skipped", errors.Join(skipped...).Error())
	}
	f.logger.Warn("lockstep: database connections moved to another host", attrs...)
}

// notWritableError says why a server that accepted the connection is
// passed over.
type notWritableError struct{ why string }

func (e *notWritableError) Error() string { return "not ready for writes: " + e.why }

// writable asks a new connection's server whether it can take the queue's
// writes: a Galera node must report wsrep_ready ON (a server without
// wsrep reports no such variable), and no server may be read_only.
func writable(ctx context.Context, conn driver.Conn) error {
	q, ok := conn.(driver.QueryerContext)
	if !ok {
		return nil
	}
	// MariaDB built with wsrep reports wsrep_ready OFF when wsrep is not
	// on: only a node with wsrep_on is asked to be ready.
	rows, err := q.QueryContext(ctx, "SELECT @@GLOBAL.read_only, "+
		"(SELECT s.VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS s JOIN information_schema.GLOBAL_VARIABLES v "+
		"ON v.VARIABLE_NAME = 'WSREP_ON' AND v.VARIABLE_VALUE = 'ON' WHERE s.VARIABLE_NAME = 'WSREP_READY')", nil)
	if err != nil {
		var me *gomysql.MySQLError
		if unavailable(err) {
			return &notWritableError{"the server refuses statements (" + err.Error() + ")"}
		}
		if errors.As(err, &me) && (me.Number == 1109 || me.Number == 3167) {
			// information_schema.GLOBAL_STATUS is off on Oracle MySQL
			// 5.7-compatible settings; read_only alone then.
			return readOnlyOnly(ctx, q)
		}
		return err
	}
	defer rows.Close()
	vals := make([]driver.Value, 2)
	if err := rows.Next(vals); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	if asText(vals[0]) != "0" {
		return &notWritableError{"the server is read_only"}
	}
	if v := asText(vals[1]); v != "" && !strings.EqualFold(v, "ON") {
		return &notWritableError{"the Galera node reports wsrep_ready " + v}
	}
	return nil
}

func readOnlyOnly(ctx context.Context, q driver.QueryerContext) error {
	rows, err := q.QueryContext(ctx, "SELECT @@GLOBAL.read_only", nil)
	if err != nil {
		return err
	}
	defer rows.Close()
	vals := make([]driver.Value, 1)
	if err := rows.Next(vals); err != nil {
		return err
	}
	if asText(vals[0]) != "0" {
		return &notWritableError{"the server is read_only"}
	}
	return nil
}

func asText(v driver.Value) string {
	switch v := v.(type) {
	case nil:
		return ""
	case []byte:
		return string(v)
	default:
		return fmt.Sprint(v)
	}
}

// unavailable reports whether err is a server's refusal to take writes,
// as classify sorts the codes.
func unavailable(err error) bool {
	kind, _ := classify(err)
	return kind == rowtype.ErrorUnavailable
}

// failoverConn is a connection of a failover pool. Once its server has
// refused a statement as unavailable, the connection tells database/sql
// it is no longer valid, so that the pool drops it instead of handing it
// out again, and the next connection goes to a host that is ready.
type failoverConn struct {
	inner driver.Conn
	bad   bool // set by the goroutine using the connection (database/sql serialises that)
}

var (
	_ driver.ConnBeginTx        = (*failoverConn)(nil)
	_ driver.ExecerContext      = (*failoverConn)(nil)
	_ driver.QueryerContext     = (*failoverConn)(nil)
	_ driver.ConnPrepareContext = (*failoverConn)(nil)
	_ driver.Pinger             = (*failoverConn)(nil)
	_ driver.SessionResetter    = (*failoverConn)(nil)
	_ driver.Validator          = (*failoverConn)(nil)
	_ driver.NamedValueChecker  = (*failoverConn)(nil)
)

func (c *failoverConn) note(err error) error {
	if err != nil && unavailable(err) {
		c.bad = true
	}
	return err
}

func (c *failoverConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *failoverConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	var st driver.Stmt
	var err error
	if p, ok := c.inner.(driver.ConnPrepareContext); ok {
		st, err = p.PrepareContext(ctx, query)
	} else {
		st, err = c.inner.Prepare(query)
	}
	if err != nil {
		return nil, c.note(err)
	}
	return &failoverStmt{Stmt: st, c: c}, nil
}

func (c *failoverConn) Close() error { return c.inner.Close() }

func (c *failoverConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *failoverConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.inner.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, c.note(err)
	}
	return &failoverTx{inner: tx, c: c}, nil
}

func (c *failoverConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	r, err := c.inner.(driver.ExecerContext).ExecContext(ctx, query, args)
	return r, c.note(err)
}

func (c *failoverConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	r, err := c.inner.(driver.QueryerContext).QueryContext(ctx, query, args)
	return r, c.note(err)
}

func (c *failoverConn) Ping(ctx context.Context) error {
	return c.note(c.inner.(driver.Pinger).Ping(ctx))
}

func (c *failoverConn) ResetSession(ctx context.Context) error {
	if c.bad {
		return driver.ErrBadConn
	}
	if r, ok := c.inner.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *failoverConn) IsValid() bool {
	v, ok := c.inner.(driver.Validator)
	return !c.bad && (!ok || v.IsValid())
}

func (c *failoverConn) CheckNamedValue(nv *driver.NamedValue) error {
	if nc, ok := c.inner.(driver.NamedValueChecker); ok {
		return nc.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

type failoverTx struct {
	inner driver.Tx
	c     *failoverConn
}

func (t *failoverTx) Commit() error   { return t.c.note(t.inner.Commit()) }
func (t *failoverTx) Rollback() error { return t.c.note(t.inner.Rollback()) }

// failoverStmt is a prepared statement of a failoverConn (go-sql-driver
// prepares only what it cannot interpolate).
type failoverStmt struct {
	driver.Stmt
	c *failoverConn
}

func (s *failoverStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	r, err := s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	return r, s.c.note(err)
}

func (s *failoverStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	r, err := s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	return r, s.c.note(err)
}

func (s *failoverStmt) CheckNamedValue(nv *driver.NamedValue) error {
	return s.c.CheckNamedValue(nv)
}
