package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/dashboard"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
)

type serveOptions struct {
	addr          string
	token         string
	countLimit    int
	secureCookies bool
	stopTimeout   time.Duration
	waitDB        time.Duration
	readDSN       string
	// The workers, as `lockstep work` takes them; none unless --kind.
	work workOptions
}

func newServeCmd(c *app) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the web dashboard, /metrics and /healthz (and, with --kind, run workers)",
		Long: `Serve the dashboard of the --dsn database: queues (counts by status,
oldest available job, throughput), the history charts (jobs per minute
done and failed and the failure rate, per queue and kind, over the last
hour to 7 days, from the history rollup in the database), per-kind
summaries, runs with their progress, a run's jobs,
each job's args, attempts and error history, and the lock monitor (current
lock waits; on MySQL/MariaDB the deadlocks InnoDB reports while serving,
decoded). Runs and jobs can be cancelled, failed jobs retried.

With --read-dsn (a replica of the --dsn database: a PostgreSQL standby, a
MySQL or MariaDB replica) the pages read from it, so that watching the
queue does not load the primary; the actions (cancel, retry, pause, limits,
bulk actions) still go to --dsn. The queues page says how far the replica
is behind.

Also served: /metrics (Prometheus; behind the token like the pages) and
/healthz (no token; 200 when the database answers, else 503 with a short
reason such as "connection refused").

The process runs the reaper, which returns jobs of dead workers to PENDING.
It runs workers only when asked: --kind, --queue, --workers and --command
work as in 'lockstep work'.

On SIGINT or SIGTERM the workers stop claiming at once, and serve waits up
to --stop-timeout, in all, for the requests in flight and the running jobs.
A second signal, or the timeout, cancels the running jobs (they are retried
later), and serve then exits with status 1, as 'lockstep work' does.

Without a token the dashboard can only listen on a loopback address, and
answers only requests addressed to localhost, 127.0.0.1 or [::1]. With
--token (or $LOCKSTEP_TOKEN, which keeps it out of the process list) every
request needs "Authorization: Bearer <token>" or the cookie the login page
sets.`,
		Example: `  lockstep serve
  LOCKSTEP_TOKEN=$(openssl rand -hex 16) lockstep serve --addr 0.0.0.0:8080
  lockstep serve --kind exec --command './job.sh' --queue default=4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("token") {
				o.token = os.Getenv("LOCKSTEP_TOKEN")
			}
			return c.serve(cmd.Context(), cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:8080", "address to listen on (a non-loopback address needs a token)")
	f.DurationVar(&o.waitDB, "wait-for-database", clienv.ServiceStartWait,
		"at start, how long to wait for a database that is away or refusing writes (restarting, failing over); 0 fails at once")
	f.StringVar(&o.token, "token", "", "token required on every request (default $LOCKSTEP_TOKEN)")
	f.IntVar(&o.countLimit, "count-limit", 10_000, "counts shown stop at this many (shown as ≥N), so pages stay fast on large tables")
	f.StringVar(&o.readDSN, "read-dsn", "", "a replica of the --dsn database for the pages' reads (the actions go to --dsn); the queues page shows its lag")
	f.BoolVar(&o.secureCookies, "secure-cookies", false, "mark cookies Secure (when served over HTTPS, e.g. behind a TLS proxy)")
	f.DurationVar(&o.stopTimeout, "stop-timeout", 30*time.Second, "on SIGINT/SIGTERM, how long to wait for requests and running jobs, together (a second signal cancels them at once)")
	f.StringArrayVar(&o.work.queues, "queue", nil, "with --kind: queue to work, NAME or NAME=MAX_WORKERS (repeatable; default \"default\")")
	f.IntVar(&o.work.workers, "workers", 10, "with --kind: jobs run at once per queue given without =N")
	f.BoolVar(&o.work.strict, "strict-priority", false, "with --kind: "+strictPriorityHelp)
	f.StringSliceVar(&o.work.kinds, "kind", nil, "run workers for these kinds: exec (needs --command) or demo (repeatable; default: no workers)")
	f.StringVar(&o.work.command, "command", "", "for --kind exec: the command line run with sh -c for each job")
	f.StringArrayVar(&o.work.execs, "exec", nil, "KIND=COMMAND: run workers that run COMMAND with sh -c for each job of KIND (repeatable)")
	addRetentionFlags(f, &o.work.retention)
	f.DurationVar(&o.work.execTimeout, "exec-timeout", 0, "for --kind exec: kill a command running longer than this (0: no limit)")
	f.DurationVar(&o.work.killGrace, "exec-kill-grace", 0, "for --kind exec: send SIGTERM this long before SIGKILL when killing a command")
	f.DurationVar(&o.work.reapAfter, "reap-after", time.Minute, "return RUNNING jobs whose heartbeat is older than this to PENDING")
	f.DurationVar(&o.work.heartbeat, "heartbeat", 5*time.Second, "how often to refresh running jobs' heartbeat and notice cancels")
	f.DurationVar(&o.work.poll, "poll", time.Second, "with --kind: longest wait between claims of an idle queue")
	return cmd
}

// loopbackAddr reports whether a listen address binds only loopback: a
// literal loopback IP or "localhost" (an empty host binds every address).
func loopbackAddr(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("--addr %q: %w", addr, err)
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

func (c *app) serve(ctx context.Context, cmd *cobra.Command, o serveOptions) error {
	loopback, err := loopbackAddr(o.addr)
	if err != nil {
		return err
	}
	if !loopback && o.token == "" {
		return fmt.Errorf("refusing to serve on %s without a token: set $LOCKSTEP_TOKEN (or --token), or listen on a loopback address such as 127.0.0.1:8080", o.addr)
	}
	if o.token != "" && len(o.token) < 16 {
		c.Logger.Warn("the token is short; use at least 16 random characters (e.g. openssl rand -hex 16)")
	}
	if o.countLimit < 1 {
		return fmt.Errorf("--count-limit must be positive, got %d", o.countLimit)
	}
	for name, d := range map[string]time.Duration{"reap-after": o.work.reapAfter, "heartbeat": o.work.heartbeat, "poll": o.work.poll, "stop-timeout": o.stopTimeout} {
		if d <= 0 {
			return fmt.Errorf("--%s must be positive, got %s", name, d)
		}
	}
	if o.work.reapAfter <= 2*o.work.heartbeat {
		return fmt.Errorf("--reap-after (%s) must exceed twice --heartbeat (%s), or live jobs would be reaped", o.work.reapAfter, o.work.heartbeat)
	}
	cfg := lockstep.Config{
		Logger: c.Logger, PollInterval: o.work.poll, HeartbeatInterval: o.work.heartbeat, ReapAfter: o.work.reapAfter,
	}
	o.work.retention.apply(&cfg)
	if len(o.work.kinds) > 0 || len(o.work.execs) > 0 {
		if cfg.Queues, err = parseWorkQueues(o.work.queues, o.work.workers, o.work.strict); err != nil {
			return err
		}
		if cfg.Workers, err = c.workWorkers(cmd, o.work); err != nil {
			return err
		}
	} else {
		for _, name := range []string{"queue", "workers", "command", "exec-timeout", "exec-kill-grace", "poll"} {
			if cmd.Flags().Changed(name) {
				return fmt.Errorf("--%s is about workers: add --kind exec, --kind demo or --exec KIND=COMMAND to run them", name)
			}
		}
	}

	if o.waitDB < 0 {
		return fmt.Errorf("--wait-for-database must not be negative, got %s", o.waitDB)
	}
	d, err := c.OpenDriverWaiting(ctx, o.waitDB)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()

	reg, m, err := c.newMetrics(d.DB())
	if err != nil {
		return err
	}
	cfg.OnEvent = m.Observe

	client, err := lockstep.NewClient(d, cfg)
	if err != nil {
		return err
	}
	monitor, err := c.OpenMonitorDB(ctx)
	if err != nil {
		return err
	}
	if monitor != nil {
		defer func() { _ = monitor.Close() }()
	}
	dcfg := dashboard.Config{
		Client: client, DB: monitor, Token: o.token, Logger: c.Logger, CountLimit: o.countLimit,
		SecureCookies: o.secureCookies,
		Metrics:       c.metricsHandler(reg),
	}
	if o.readDSN != "" {
		rd, err := c.OpenReadDriver(ctx, o.readDSN)
		if err != nil {
			return err
		}
		defer func() { _ = rd.Close() }()
		if rd.Dialect() != d.Dialect() {
			return fmt.Errorf("--read-dsn is a %s database, --dsn a %s one: the replica must be of the same kind", rd.Dialect(), d.Dialect())
		}
		if dcfg.Reader, err = lockstep.NewClient(rd, lockstep.Config{Logger: c.Logger}); err != nil {
			return err
		}
		if dcfg.ReplicaLag, err = dashboard.ReplicaLag(rd.DB(), rd.Dialect()); err != nil {
			return err
		}
	}
	dash, err := dashboard.New(dcfg)
	if err != nil {
		return err
	}
	// Start checks the schema and starts the reaper (and the workers).
	if err := client.Start(ctx); err != nil {
		return err
	}
	// On a signal the shutdown below stops the client; this stops it when
	// serve fails before that.
	clientStopped := false
	defer func() {
		if clientStopped {
			return
		}
		stopCtx, cancel := context.WithTimeout(context.Background(), o.stopTimeout)
		defer cancel()
		if err := client.Stop(stopCtx); err != nil {
			c.Logger.Warn("running jobs did not finish in time: they were cancelled and will be retried", "err", err)
		}
	}()

	// The dashboard answers /healthz too (no token; 503 with a short
	// reason while the database is away).
	mux := http.NewServeMux()
	mux.Handle("/", dash)

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.addr, err)
	}
	srv := c.newHTTPServer(mux)

	bgCtx, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	bgDone := make(chan struct{}, 2)
	go func() { defer func() { bgDone <- struct{}{} }(); _ = dash.Run(bgCtx) }()
	go func() {
		defer func() { bgDone <- struct{}{} }()
		m.RunSampler(bgCtx, client, 15*time.Second, &lockstep.StatsParams{CountLimit: o.countLimit})
	}()
	defer func() { stopBG(); <-bgDone; <-bgDone }()

	url := "http://" + ln.Addr().String()
	fmt.Fprintf(c.Stdout, "listening on %s\n", url)
	attrs := []any{"url", url, "dialect", d.Dialect(), "auth", o.token != ""}
	if cfg.Workers != nil {
		kinds := cfg.Workers.Kinds()
		slices.Sort(kinds)
		attrs = append(attrs, "kinds", strings.Join(kinds, ","))
	}
	c.Logger.Info("serving the dashboard; stop with SIGINT or SIGTERM", attrs...)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// One deadline for everything: the workers stop claiming at once and
	// their running jobs finish while the requests in flight do.
	stopCtx, interrupted, release := gracefulStop(o.stopTimeout,
		fmt.Errorf("--stop-timeout %s passed", o.stopTimeout), c.Logger)
	defer release()
	c.Logger.Info("shutting down: no new jobs are claimed; finishing requests and running jobs (a second signal cancels them)", "timeout", o.stopTimeout)
	clientStopped = true
	stopped := make(chan error, 1)
	go func() { stopped <- client.Stop(stopCtx) }()
	if err := srv.Shutdown(stopCtx); err != nil {
		_ = srv.Close()
		c.Logger.Warn("requests in flight did not finish: their connections were closed", "reason", context.Cause(stopCtx))
	}
	<-served
	if err := <-stopped; err != nil {
		if interrupted() {
			return errors.New("stopped by a second signal: running jobs were cancelled and will be retried")
		}
		return fmt.Errorf("running jobs did not finish within --stop-timeout %s: they were cancelled and will be retried", o.stopTimeout)
	}
	return nil
}

// gracefulStop is the context a graceful stop after SIGINT or SIGTERM runs
// under, as `lockstep work` stops: it ends after timeout (its cause then
// is onTimeout), or at once on a second SIGINT or SIGTERM, which cancels
// the running jobs rather than waiting for them; interrupted reports that.
// The second signal is watched from this call on: call it once the first
// has been seen (the caller's context is done). release stops watching.
func gracefulStop(timeout time.Duration, onTimeout error, logger *slog.Logger) (ctx context.Context, interrupted func() bool, release func()) {
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeoutCause(context.Background(), timeout, onTimeout)
	var second atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-again:
			logger.Warn("second signal: cancelling running jobs")
			second.Store(true)
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, second.Load, func() {
		signal.Stop(again)
		cancel()
		<-done
	}
}
