package labcli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
	"github.com/lockstep-queue/lockstep/internal/dsn"
	"github.com/lockstep-queue/lockstep/internal/dsnparse"
	"github.com/lockstep-queue/lockstep/lab/soak"
)

type soakOptions struct {
	duration         time.Duration
	drainTimeout     time.Duration
	progressInterval time.Duration
	pools, workers   int
	queues           int
	isolation        string
	seed             uint64
	json             bool
}

func newSoakCmd(c *clienv.Env) *cobra.Command {
	var o soakOptions
	cmd := &cobra.Command{
		Use:   "soak",
		Short: "Run the mixed soak on a scratch database: no deadlock, no job lost or finished twice",
		Long: `Run the mixed soak: for --duration, at once, --pools worker clients (each on
its own connection pool, as separate processes), enqueuers creating runs,
adding jobs to them and enqueuing loose jobs, a canceller cancelling runs and
single jobs, and a dead worker that claims jobs and abandons them so that the
reapers must return them, then sends their stale finishes, which must be
refused. Jobs succeed, sleep, fail once, snooze once or always fail. Then the
queue drains and the soak checks its own record of every execution, and an
audit of every status change written by a trigger it installs for the run,
against the final rows; and reads the server's deadlock counter
(MariaDB's Innodb_deadlocks, Oracle MySQL's INNODB_METRICS lock_deadlocks,
pg_stat_database.deadlocks) before and after.

It exits non-zero when a check fails: a deadlock counted, a job lost or
finished twice, a stale finish written, a client error logged.

The database (--dsn or $LOCKSTEP_DSN, required here) must be a scratch
database: the soak migrates the schema if it is absent, refuses to start if
the queue's tables hold any job or run, and leaves its jobs behind.
--isolation repeatable-read runs MySQL/MariaDB sessions and the queue's own
transactions at REPEATABLE READ, to show the lock order holds under gap
locks too. On PostgreSQL, pool_max_conns defaults to what the workers need.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("seed") {
				o.seed = uint64(time.Now().UnixNano())
			}
			logger := c.Logger
			if !cmd.Flags().Changed("log-level") {
				// Retries, reaps and discarded results are the soak's daily
				// bread; its report tells them better than the logs.
				logger = c.NewLogger(slog.LevelError)
			}
			return runSoak(cmd.Context(), c, o, logger)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.duration, "duration", time.Minute, "how long the load runs (then the queue drains)")
	f.IntVar(&o.pools, "pools", 3, "worker clients, each with its own connection pool")
	f.IntVar(&o.workers, "workers", 4, "workers of each pool on each queue")
	f.IntVar(&o.queues, "queues", 3, "queues the jobs are spread over")
	f.StringVar(&o.isolation, "isolation", "read-committed", "read-committed or repeatable-read (MySQL/MariaDB only)")
	f.Uint64Var(&o.seed, "seed", 0, "seed of the soak's random choices (default: from the clock; the report shows it)")
	f.DurationVar(&o.drainTimeout, "drain-timeout", 2*time.Minute, "longest wait for the queue to drain after the load")
	f.DurationVar(&o.progressInterval, "progress-interval", 5*time.Second, "how often to print a progress line")
	f.BoolVar(&o.json, "json", false, "print the result as JSON (progress goes to stderr)")
	return cmd
}

func runSoak(ctx context.Context, c *clienv.Env, o soakOptions, logger *slog.Logger) error {
	if strings.TrimSpace(c.DSN) == "" {
		return errors.New("lab soak needs --dsn (or $LOCKSTEP_DSN) naming a scratch database; it will not default to ./" + dsn.DefaultSQLitePath)
	}
	if o.duration <= 0 {
		return fmt.Errorf("--duration must be positive, got %s", o.duration)
	}
	p, err := dsn.Parse(c.DSN)
	if err != nil {
		return err
	}
	open, err := soakOpener(p, o)
	if err != nil {
		return err
	}
	progress := c.Stdout
	if o.json {
		progress = c.Stderr
	}
	res, err := soak.Run(ctx, soak.Config{
		Open: open, Duration: o.duration, Pools: o.pools, Workers: o.workers, Queues: o.queues,
		Seed: o.seed, Logger: logger, Progress: progress, ProgressInterval: o.progressInterval,
		DrainTimeout: o.drainTimeout,
	})
	if res == nil {
		return err
	}
	warn := c.Stdout
	if o.json {
		warn = c.Stderr
		if eerr := clienv.JSON(c.Stdout, res); eerr != nil {
			return errors.Join(err, eerr)
		}
	} else if werr := res.WriteTable(c.Stdout); werr != nil {
		return errors.Join(err, werr)
	}
	if missing := res.Unexercised(); len(missing) > 0 {
		fmt.Fprintf(warn, "warning: the soak did not exercise %s; a longer --duration would\n", strings.Join(missing, ", "))
	}
	return err
}

// soakOpener returns how the soak opens each of its pools.
func soakOpener(p dsn.Parsed, o soakOptions) (func(context.Context) (driver.Driver, error), error) {
	level := sql.LevelReadCommitted
	switch o.isolation {
	case "read-committed":
	case "repeatable-read":
		level = sql.LevelRepeatableRead
		if p.Dialect != dsn.MySQL {
			return nil, fmt.Errorf("--isolation repeatable-read is for MySQL/MariaDB; the %s driver's transactions are fixed", p.Dialect)
		}
	default:
		return nil, fmt.Errorf("--isolation must be read-committed or repeatable-read, got %q", o.isolation)
	}
	wrap := func(d driver.Driver, err error) (driver.Driver, error) {
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", p.Redacted, err)
		}
		return d, nil
	}
	switch p.Dialect {
	case dsn.MySQL:
		return func(ctx context.Context) (driver.Driver, error) {
			if level == sql.LevelReadCommitted {
				return wrap(mysql.Open(ctx, p.DSN))
			}
			return wrap(soak.OpenMySQL(ctx, p.DSN, level))
		}, nil
	case dsn.Postgres:
		pgDSN, err := withPoolMaxConns(p.DSN, o.workers*o.queues+8)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) (driver.Driver, error) { return wrap(postgres.Open(ctx, pgDSN)) }, nil
	case dsn.SQLite:
		return func(ctx context.Context) (driver.Driver, error) { return wrap(sqlite.Open(ctx, p.DSN)) }, nil
	}
	return nil, fmt.Errorf("unknown dialect %q", p.Dialect)
}

// withPoolMaxConns sizes the pgx pool for the workers unless the DSN does:
// pgxpool's default, max(4, CPUs), would have them queue for connections
// rather than for rows.
func withPoolMaxConns(pgURL string, n int) (string, error) {
	if form, _ := dsnparse.Detect(pgURL); form == dsnparse.PostgresKeywords {
		// libpq's key=value form, which dsn.Parse has checked.
		pairs, _ := dsnparse.Keywords(pgURL)
		for _, p := range pairs {
			if p.Key == "pool_max_conns" {
				return pgURL, nil
			}
		}
		return pgURL + " pool_max_conns=" + strconv.Itoa(n), nil
	}
	u, err := url.Parse(pgURL)
	if err != nil {
		return "", errors.New("postgres DSN is not a valid URL") // dsn.Parse has checked it; no password in this message
	}
	q := u.Query()
	if q.Get("pool_max_conns") != "" {
		return pgURL, nil
	}
	q.Set("pool_max_conns", strconv.Itoa(n))
	u.RawQuery = q.Encode()
	return u.String(), nil
}
