package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/execjob"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
)

// The kinds `work --kind` registers itself. An Extension adds others: the
// lab adds the chaos test's ledger kind (lab/labcli), whose jobs record
// every execution in a table of their own.
const (
	workKindExec = "exec"
	workKindDemo = "demo"
)

type workOptions struct {
	queues      []string
	workers     int
	strict      bool // --strict-priority
	kinds       []string
	command     string
	execs       []string // KIND=COMMAND
	execTimeout time.Duration
	killGrace   time.Duration
	execOutput  int
	reapAfter   time.Duration
	heartbeat   time.Duration
	poll        time.Duration
	stopTimeout time.Duration
	waitDB      time.Duration
	metricsAddr string
	retention   retentionOptions
}

func newWorkCmd(c *app) *cobra.Command {
	var o workOptions
	cmd := &cobra.Command{
		Use:   "work",
		Short: "Run workers for queues until SIGINT or SIGTERM",
		Long:  workLong(c.workKinds),
		Example: `  lockstep work --kind exec --command './resize.sh'
  lockstep work --kind exec --command 'python3 job.py' --queue media=4 --queue default --exec-timeout 10m
  lockstep work --exec resize=./resize.sh --exec mail='python3 mail.py'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.work(cmd.Context(), cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.queues, "queue", nil, "queue to work, NAME or NAME=MAX_WORKERS (repeatable; default \"default\")")
	f.IntVar(&o.workers, "workers", 10, "jobs run at once per queue given without =N")
	f.BoolVar(&o.strict, "strict-priority", false, strictPriorityHelp)
	f.StringSliceVar(&o.kinds, "kind", nil, "kinds of job to run: "+orList(append([]string{workKindExec + " (needs --command)", workKindDemo}, kindNames(c.workKinds)...))+" (repeatable)")
	f.StringVar(&o.command, "command", "", "for --kind exec: the command line run with sh -c for each job")
	f.StringArrayVar(&o.execs, "exec", nil, "KIND=COMMAND: run COMMAND with sh -c for each job of KIND (repeatable)")
	f.DurationVar(&o.execTimeout, "exec-timeout", 0, "for exec workers: kill a command running longer than this (0: no limit)")
	f.DurationVar(&o.killGrace, "exec-kill-grace", 0, "for exec workers: send SIGTERM this long before SIGKILL when killing a command")
	f.IntVar(&o.execOutput, "exec-output-bytes", execjob.DefaultOutputBytes, "for exec workers: keep the last N bytes of each of a successful command's stdout and stderr as the job's output (0: keep none)")
	f.DurationVar(&o.reapAfter, "reap-after", time.Minute, "return RUNNING jobs whose heartbeat is older than this to PENDING")
	f.DurationVar(&o.heartbeat, "heartbeat", 5*time.Second, "how often to refresh running jobs' heartbeat and notice cancels")
	f.DurationVar(&o.poll, "poll", time.Second, "longest wait between claims of an idle queue")
	f.DurationVar(&o.stopTimeout, "stop-timeout", 30*time.Second, "on SIGINT/SIGTERM, how long to wait for running jobs")
	f.DurationVar(&o.waitDB, "wait-for-database", clienv.ServiceStartWait,
		"at start, how long to wait for a database that is away or refusing writes (restarting, failing over); 0 fails at once")
	f.StringVar(&o.metricsAddr, "metrics-addr", "", "serve /metrics and /healthz on this address (a non-loopback address needs $LOCKSTEP_TOKEN)")
	addRetentionFlags(f, &o.retention)
	return cmd
}

// workLongHead and workLongQueues are work's help around the paragraphs
// of the kinds an Extension adds.
const workLongHead = `Run a worker process: claim jobs of the given queues and run them until
SIGINT or SIGTERM. It then stops claiming and waits up to --stop-timeout for
running jobs to finish and record their results; a second signal, or the
timeout, cancels them (they are retried later).

--kind exec runs the command given by --command (with sh -c) for each job of
kind "exec". The command is fixed here, never taken from a job: the job's
args are written as JSON to its standard input, and its id, attempt, kind
and queue are in LOCKSTEP_JOB_ID, LOCKSTEP_JOB_ATTEMPT, LOCKSTEP_JOB_KIND and
LOCKSTEP_JOB_QUEUE. Exit status 0 finishes the job DONE, with the end of
the command's standard output and of its standard error (the last
--exec-output-bytes of each, 64 KiB by default; 0 keeps none) as the job's
output, {"stdout": …, "stderr": …}, which jobs show and the job's
dependents read; a stream cut short starts with a line saying how many
bytes were dropped. Any other exit status is an error holding the exit code
and the end of the command's standard error, recorded in the job's error
history before it is retried (or FAILED once its attempts are used up). A job cancelled or timed out (--exec-timeout)
has its command's process group killed. The command inherits this process's
environment except its LOCKSTEP_* settings (the DSN and the dashboard token
stay out of jobs' reach).

--exec KIND=COMMAND (repeatable) does the same for jobs of kind KIND, so each
kind can have its own command: --exec resize=./resize.sh --exec mail=./mail.py.

--kind demo runs the demo's kinds (resize, flaky, rate_limited, slow).`

const workLongQueues = `Queues are named with --queue NAME (at most --workers jobs at once) or
--queue NAME=N (at most N); the default is the queue "default".`

// workLong is work's help: its own kinds', each added kind's paragraph,
// then how queues are named.
func workLong(kinds []clienv.WorkKind) string {
	parts := []string{workLongHead}
	for _, k := range kinds {
		parts = append(parts, k.Help)
	}
	return strings.Join(append(parts, workLongQueues), "\n\n")
}

func kindNames(kinds []clienv.WorkKind) []string {
	names := make([]string, 0, len(kinds))
	for _, k := range kinds {
		names = append(names, k.Name)
	}
	return names
}

// orList joins choices as help text says them: "a", "a or b", "a, b or c".
func orList(choices []string) string {
	if len(choices) < 2 {
		return strings.Join(choices, "")
	}
	return strings.Join(choices[:len(choices)-1], ", ") + " or " + choices[len(choices)-1]
}

// strictPriorityHelp is --strict-priority's help, in work and serve.
const strictPriorityHelp = "claim every queue from its head each time, so a higher priority inserted while a queue is saturated starts at the next claim (without it, up to --poll later); costs more while a long transaction elsewhere holds a snapshot"

// parseWorkQueues turns --queue values into the client's queues.
func parseWorkQueues(values []string, workers int, strict bool) (map[string]lockstep.QueueConfig, error) {
	if workers < 1 || workers > 10000 {
		return nil, fmt.Errorf("--workers must be between 1 and 10000, got %d", workers)
	}
	if len(values) == 0 {
		values = []string{lockstep.DefaultQueue}
	}
	out := make(map[string]lockstep.QueueConfig, len(values))
	for _, v := range values {
		name, n, hasN := strings.Cut(v, "=")
		name = strings.TrimSpace(name)
		maxWorkers := workers
		if hasN {
			var err error
			maxWorkers, err = strconv.Atoi(strings.TrimSpace(n))
			if err != nil || maxWorkers < 1 || maxWorkers > 10000 {
				return nil, fmt.Errorf("--queue %q: the number of workers after = must be between 1 and 10000", v)
			}
		}
		if name == "" {
			return nil, fmt.Errorf("--queue %q has no queue name", v)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--queue %q is given twice", name)
		}
		out[name] = lockstep.QueueConfig{MaxWorkers: maxWorkers, StrictPriority: strict}
	}
	return out, nil
}

// workWorkers registers the workers of the --kind values; those of an
// added kind wait for the database (addedWorkers).
func (c *app) workWorkers(cmd *cobra.Command, o workOptions) (*lockstep.Workers, error) {
	if len(o.kinds) == 0 && len(o.execs) == 0 {
		return nil, errors.New("--kind (exec with --command, or demo) or --exec KIND=COMMAND is required")
	}
	if o.execTimeout < 0 {
		return nil, fmt.Errorf("--exec-timeout must not be negative, got %s", o.execTimeout)
	}
	if o.killGrace < 0 {
		return nil, fmt.Errorf("--exec-kill-grace must not be negative, got %s", o.killGrace)
	}
	if o.execOutput < 0 {
		return nil, fmt.Errorf("--exec-output-bytes must not be negative, got %d", o.execOutput)
	}
	ws := lockstep.NewWorkers()
	seen := map[string]bool{}
	for _, k := range o.kinds {
		k = strings.ToLower(strings.TrimSpace(k))
		if seen[k] {
			continue
		}
		seen[k] = true
		switch k {
		case workKindExec:
			if strings.TrimSpace(o.command) == "" {
				return nil, errors.New("--kind exec needs --command, the command line to run for each job")
			}
			w := &execjob.Worker{Shell: o.command, Timeout: o.execTimeout, KillGrace: o.killGrace, OutputBytes: o.execOutput}
			if err := execjob.Register(ws, w); err != nil {
				return nil, err
			}
		case workKindDemo:
			if err := addDemoWorkers(ws); err != nil {
				return nil, err
			}
		default:
			if !slices.ContainsFunc(c.workKinds, func(wk clienv.WorkKind) bool { return strings.EqualFold(wk.Name, k) }) {
				return nil, fmt.Errorf("unknown --kind %q: use %s", k, orList(append([]string{workKindExec, workKindDemo}, kindNames(c.workKinds)...)))
			}
			// Registered once the database is open: it may write there.
		}
	}
	for _, spec := range o.execs {
		kind, command, ok := strings.Cut(spec, "=")
		kind = strings.TrimSpace(kind)
		if !ok || kind == "" || strings.TrimSpace(command) == "" {
			return nil, fmt.Errorf("--exec %q: want KIND=COMMAND", spec)
		}
		w := &execjob.Worker{Shell: command, Timeout: o.execTimeout, KillGrace: o.killGrace, OutputBytes: o.execOutput}
		if err := execjob.RegisterKind(ws, kind, w); err != nil {
			return nil, fmt.Errorf("--exec %q: %w", spec, err)
		}
	}
	if !seen[workKindExec] {
		if cmd.Flags().Changed("command") {
			return nil, errors.New("--command is only used with --kind exec")
		}
		if len(o.execs) == 0 {
			for _, name := range []string{"exec-timeout", "exec-kill-grace", "exec-output-bytes"} {
				if cmd.Flags().Changed(name) {
					return nil, fmt.Errorf("--%s is only used with --kind exec or --exec", name)
				}
			}
		}
	}
	return ws, nil
}

// addDemoWorkers registers the demo's kinds, as demoWorkers does, into a
// registry that may hold exec too.
func addDemoWorkers(ws *lockstep.Workers) error {
	return errors.Join(
		lockstep.AddWorkerSafely(ws, lockstep.WorkFunc(workResize)),
		lockstep.AddWorkerSafely[flakyArgs](ws, flakyWorker{}),
		lockstep.AddWorkerSafely(ws, lockstep.WorkFunc(workRateLimited)),
		lockstep.AddWorkerSafely[slowArgs](ws, &slowWorker{}),
	)
}

// addedWorkers registers the workers of the added kinds among the --kind
// values, on the open database.
func (c *app) addedWorkers(d driver.Driver, ws *lockstep.Workers, kinds []string) error {
	for _, wk := range c.workKinds {
		if slices.ContainsFunc(kinds, func(k string) bool { return strings.EqualFold(strings.TrimSpace(k), wk.Name) }) {
			if err := wk.Register(d, ws); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *app) work(ctx context.Context, cmd *cobra.Command, o workOptions) error {
	queues, err := parseWorkQueues(o.queues, o.workers, o.strict)
	if err != nil {
		return err
	}
	ws, err := c.workWorkers(cmd, o)
	if err != nil {
		return err
	}
	for name, d := range map[string]time.Duration{"reap-after": o.reapAfter, "heartbeat": o.heartbeat, "poll": o.poll, "stop-timeout": o.stopTimeout} {
		if d <= 0 {
			return fmt.Errorf("--%s must be positive, got %s", name, d)
		}
	}
	if o.reapAfter <= 2*o.heartbeat {
		return fmt.Errorf("--reap-after (%s) must exceed twice --heartbeat (%s), or live jobs would be reaped", o.reapAfter, o.heartbeat)
	}

	if o.waitDB < 0 {
		return fmt.Errorf("--wait-for-database must not be negative, got %s", o.waitDB)
	}
	d, err := c.OpenDriverWaiting(ctx, o.waitDB)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	if err := c.addedWorkers(d, ws, o.kinds); err != nil {
		return err
	}
	cfg := lockstep.Config{
		Queues: queues, Workers: ws, Logger: c.Logger,
		PollInterval: o.poll, HeartbeatInterval: o.heartbeat, ReapAfter: o.reapAfter,
	}
	o.retention.apply(&cfg)
	if o.metricsAddr != "" {
		// Claims, finishes and run times are seen only where workers run,
		// so each worker process serves its own. Queue depth is sampled by
		// `lockstep serve`, once, not by every worker.
		reg, m, err := c.newMetrics(d.DB())
		if err != nil {
			return err
		}
		cfg.OnEvent = m.Observe
		stopMetrics, err := c.serveWorkerMetrics(ctx, o.metricsAddr, os.Getenv("LOCKSTEP_TOKEN"), reg, d.DB())
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	client, err := lockstep.NewClient(d, cfg)
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	kinds := ws.Kinds()
	slices.Sort(kinds)
	names := make([]string, 0, len(queues))
	for name, q := range queues {
		names = append(names, fmt.Sprintf("%s=%d", name, q.MaxWorkers))
	}
	slices.Sort(names)
	c.Logger.Info("working; stop with SIGINT or SIGTERM", "queues", strings.Join(names, ","), "kinds", strings.Join(kinds, ","))

	<-ctx.Done()
	stopCtx, interrupted, release := gracefulStop(o.stopTimeout,
		fmt.Errorf("running jobs did not finish within --stop-timeout %s", o.stopTimeout), c.Logger)
	defer release()
	c.Logger.Info("stopping: no new jobs are claimed; waiting for running jobs", "timeout", o.stopTimeout)
	if err := client.Stop(stopCtx); err != nil {
		if interrupted() {
			return errors.New("stopped by a second signal: running jobs were cancelled and will be retried")
		}
		return fmt.Errorf("%v: they were cancelled and will be retried", context.Cause(stopCtx))
	}
	return nil
}
