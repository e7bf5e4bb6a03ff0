package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/driver/internal/shell"
	"github.com/lockstep-queue/lockstep/driver/internal/sqlexec"
)

// WakeChannel is the LISTEN/NOTIFY channel of lockstep's wake-ups; each
// notification's payload is a queue name.
const WakeChannel = "lockstep_wake"

// DefaultNotifyCooldown is how often, at most, one driver wakes the
// listeners of one queue: the first batch enqueued into an idle queue
// notifies, and the batches of the next few milliseconds are found by the
// claim that the wake-up starts (a producer that claimed something claims
// again at once when a job finishes, and after MinPollInterval otherwise).
// Pacing bounds the cost of NOTIFY, whose commits PostgreSQL serialises.
const DefaultNotifyCooldown = 2 * time.Millisecond

var (
	_ driver.Notifier = (*Driver)(nil)
	_ driver.Listener = (*listener)(nil)
)

// WithoutNotify returns a driver on the same pool whose inserts and
// retries send no wake-ups ("job.notify"): other processes find their jobs
// by polling. Listen still works. Close the original driver, not this one.
func (d *Driver) WithoutNotify() *Driver { return d.withWake(nil) }

// WithNotifyCooldown returns a driver on the same pool that wakes the
// listeners of a queue at most once per cooldown (0: every batch that
// makes jobs available wakes them). Close the original driver, not this
// one.
func (d *Driver) WithNotifyCooldown(cooldown time.Duration) *Driver {
	return d.withWake(sqlexec.NewWake(max(cooldown, 0)))
}

func (d *Driver) withWake(w *sqlexec.Wake) *Driver {
	cp := *d
	cp.Shell = shell.Derive(d.Shell, func(c *shell.Config) { c.Exec.Wake = w })
	return &cp
}

// Listen implements driver.Notifier. It opens a connection of its own with
// the pool's connection settings — a pooled connection cannot hold a
// LISTEN — and subscribes to WakeChannel. (Behind a pooler in transaction
// mode LISTEN does not work; set Config.DisableNotify there.)
func (d *Driver) Listen(ctx context.Context) (driver.Listener, error) {
	cfg, err := d.connConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: listen: %w", err)
	}
	// A configuration read from a live connection carries that connection's
	// notification handler; this one buffers its own.
	cfg.OnNotification = nil
	if _, set := cfg.RuntimeParams["application_name"]; !set {
		cfg.RuntimeParams["application_name"] = "lockstep listener"
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: listen: connect: %w", err)
	}
	if _, err := conn.Exec(ctx, d.Catalog().Get(catalog.JobListen).SQL); err != nil {
		_ = conn.Close(context.Background())
		return nil, fmt.Errorf("postgres: listen: %w", err)
	}
	return &listener{conn: conn}, nil
}

// connConfig is the connection configuration of the driver's pool: the
// pgxpool's, or, for a *sql.DB, that of one of its pgx connections.
func (d *Driver) connConfig(ctx context.Context) (*pgx.ConnConfig, error) {
	if d.pool != nil {
		return d.pool.Config().ConnConfig.Copy(), nil
	}
	c, err := d.DB().Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var cfg *pgx.ConnConfig
	err = c.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("the *sql.DB is not opened with pgx's stdlib driver (%T)", dc)
		}
		cfg = sc.Conn().Config().Copy()
		return nil
	})
	return cfg, err
}

// listener is one LISTEN connection.
type listener struct {
	conn *pgx.Conn
}

// listenProbe is how long Wait waits for a notification before it checks
// that the connection is alive: a connection that died without a word
// (a network partition) would otherwise leave Wait blocked for ever.
var listenProbe = 30 * time.Second

// Wait implements driver.Listener.
func (l *listener) Wait(ctx context.Context) (string, error) {
	for {
		wctx, cancel := context.WithTimeout(ctx, listenProbe)
		n, err := l.conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			if n != nil && n.Channel == WakeChannel {
				return n.Payload, nil
			}
			continue
		case ctx.Err() != nil:
			return "", ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) && !l.conn.IsClosed():
			// No wake-up for a while: make sure the connection still is.
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = l.conn.Ping(pctx)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return "", ctx.Err()
				}
				return "", fmt.Errorf("postgres: listener: %w", err)
			}
			continue
		}
		return "", fmt.Errorf("postgres: listener: %w", err)
	}
}

// Close implements driver.Listener.
func (l *listener) Close(ctx context.Context) error { return l.conn.Close(ctx) }
