package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
	"github.com/lockstep-queue/lockstep/migrate"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// Demo timings: short, so the whole demo takes a few seconds.
const (
	demoDeadline      = 25 * time.Second
	demoPollInterval  = 50 * time.Millisecond
	demoHeartbeat     = 200 * time.Millisecond
	demoReapAfter     = 2 * time.Second
	demoMaxAttempts   = 5
	demoExportQueue   = "export"
	demoExportJobs    = 20
	demoExportWorkers = 2
	demoSlowMillis    = 250
)

func newDemoCmd(c *app) *cobra.Command {
	var dbPath string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a self-contained demo on an embedded SQLite file (no server needed)",
		Long: `Run a self-contained demo of the queue on an embedded SQLite file: no
database server is needed, and --dsn is not used.

The demo migrates a new database, creates three runs of jobs, starts a client
with workers for four kinds of job and waits until every job is final:

  resize        succeeds
  flaky         fails its first attempt(s) and is retried after 100ms;
                one job fails every attempt and ends FAILED
  rate_limited  snoozes 200ms on its first claim, without using up an attempt
  slow          a long export step; its run is cancelled half-way, while
                some of its jobs are running and others are still pending

It then prints, from the database, each run's job counts, each kind's
attempts, and what happened to a few jobs. It takes a few seconds.

The database is a temporary file removed at the end, unless --db names one
to keep. The library's own log lines are shown from level error only,
unless --log-level is given.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger := c.Logger
			if !cmd.Flags().Changed("log-level") {
				// Retries, snoozes and discarded results are what the demo
				// is about; the summary tells them better than the logs.
				logger = c.NewLogger(slog.LevelError)
			}
			rep, err := runDemo(cmd.Context(), demoOptions{
				dbPath: dbPath, logger: logger, progress: progressWriter(c.Stdout, asJSON),
			})
			if err != nil {
				return err
			}
			if asJSON {
				return clienv.JSON(c.Stdout, rep)
			}
			return rep.writeText(c.Stdout)
		},
	}
	cmd.Flags().StringVar(&dbPath, "db", "", "SQLite file to use and keep (default: a temporary file, removed afterwards)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON")
	return cmd
}

func progressWriter(w io.Writer, quiet bool) io.Writer {
	if quiet {
		return io.Discard
	}
	return w
}

type demoOptions struct {
	dbPath   string // "" for a temporary file
	logger   *slog.Logger
	progress io.Writer // live progress lines
}

// demoRun is one run the demo creates: its jobs and the max attempts each
// was given, which the report compares with the stored value to count
// snoozes (a snooze gives its attempt back by raising max_attempts).
type demoRun struct {
	name string
	jobs []lockstep.InsertManyParams

	id          int64
	maxAttempts map[int64]int // job id -> max attempts at enqueue
}

func (r *demoRun) add(args lockstep.JobArgs, opts lockstep.InsertOpts) {
	if opts.MaxAttempts == 0 {
		opts.MaxAttempts = demoMaxAttempts
	}
	r.jobs = append(r.jobs, lockstep.InsertManyParams{Args: args, Opts: &opts})
}

// demoPlan builds the three runs.
func demoPlan() []*demoRun {
	thumbs := &demoRun{name: "thumbnails"}
	for i := range 16 {
		thumbs.add(resizeArgs{Image: fmt.Sprintf("photo-%02d.jpg", i+1), Width: 320, Millis: 20 + 15*(i%4)}, lockstep.InsertOpts{})
	}
	for _, ep := range []string{"cdn-purge", "search-index"} {
		thumbs.add(rateLimitedArgs{Endpoint: ep}, lockstep.InsertOpts{})
	}

	billing := &demoRun{name: "billing-sync"}
	for i, fails := range []int{1, 1, 2, 1, 2, 1} {
		billing.add(flakyArgs{Account: fmt.Sprintf("acct-%d", 1001+i), FailTimes: fails}, lockstep.InsertOpts{})
	}
	// This one never gets through: three attempts, then FAILED.
	billing.add(flakyArgs{Account: "acct-9999", FailTimes: 1 << 10}, lockstep.InsertOpts{MaxAttempts: 3})
	for _, ep := range []string{"invoices", "refunds", "payouts"} {
		billing.add(rateLimitedArgs{Endpoint: ep}, lockstep.InsertOpts{})
	}
	for i := range 4 {
		billing.add(resizeArgs{Image: fmt.Sprintf("invoice-%d.png", i+1), Width: 800, Millis: 30}, lockstep.InsertOpts{})
	}

	export := &demoRun{name: "nightly-export"}
	for i := range demoExportJobs {
		export.add(slowArgs{Table: fmt.Sprintf("orders_%02d", i+1), Millis: demoSlowMillis}, lockstep.InsertOpts{Queue: demoExportQueue})
	}
	return []*demoRun{thumbs, billing, export}
}

func runDemo(ctx context.Context, o demoOptions) (rep *demoReport, err error) {
	begin := time.Now()
	path, keep := o.dbPath, o.dbPath != ""
	if !keep {
		dir, err := os.MkdirTemp("", "lockstep-demo-")
		if err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
		defer func() { _ = os.RemoveAll(dir) }()
		path = filepath.Join(dir, "demo.db")
	}
	say := func(format string, args ...any) {
		fmt.Fprintf(o.progress, "%6.2fs  %s\n", time.Since(begin).Seconds(), fmt.Sprintf(format, args...))
	}

	drv, err := sqlite.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	defer func() { _ = drv.Close() }()
	if keep {
		say("database: %s (kept)", path)
	} else {
		say("database: %s (temporary, removed at the end)", path)
	}
	m, err := migrate.New(drv)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if _, err := m.Up(ctx); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	say("schema migrated to version %d", m.Latest())

	slow := &slowWorker{}
	client, err := lockstep.NewClient(drv, lockstep.Config{
		Workers: demoWorkers(slow),
		Queues: map[string]lockstep.QueueConfig{
			lockstep.DefaultQueue: {MaxWorkers: 8},
			demoExportQueue:       {MaxWorkers: demoExportWorkers},
		},
		Logger:            o.logger,
		PollInterval:      demoPollInterval,
		HeartbeatInterval: demoHeartbeat,
		ReapAfter:         demoReapAfter,
		MaxAttempts:       demoMaxAttempts,
	})
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if err := client.Start(ctx); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		return client.Stop(sctx)
	}
	defer func() {
		if serr := stop(); serr != nil && err == nil {
			err = fmt.Errorf("demo: %w", serr)
		}
	}()
	say("client started: queue %q with 8 workers, queue %q with %d; poll %s, heartbeat %s, reap after %s",
		lockstep.DefaultQueue, demoExportQueue, demoExportWorkers, demoPollInterval, demoHeartbeat, demoReapAfter)

	runs := demoPlan()
	for _, r := range runs {
		run, res, err := client.InsertRun(ctx, r.name, nil, r.jobs...)
		if err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
		r.id = run.ID
		r.maxAttempts = make(map[int64]int, len(res))
		for i, j := range res {
			r.maxAttempts[j.ID] = r.jobs[i].Opts.MaxAttempts
		}
		say("created run %q (#%d) with %d jobs (ids %d–%d)", r.name, r.id, len(res), res[0].ID, res[len(res)-1].ID)
	}

	export := runs[len(runs)-1]
	cancelAt, err := waitDemo(ctx, client, runs, export, begin, say)
	if err != nil {
		return nil, err
	}
	if err := stop(); err != nil {
		return nil, fmt.Errorf("demo: stop client: %w", err)
	}
	say("client stopped")

	rep, err = buildReport(ctx, client, runs, export, slow.seen())
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	rep.Database, rep.Kept = path, keep
	rep.Elapsed = time.Since(begin).Round(time.Millisecond).String()
	rep.CancelAt = cancelAt
	return rep, nil
}

// waitDemo polls the database until every job of the runs is final,
// cancelling the export run once half of its jobs are done. It returns the
// export run's counts just before the cancel.
func waitDemo(ctx context.Context, client *lockstep.Client, runs []*demoRun, export *demoRun, begin time.Time, say func(string, ...any)) (*countsJSON, error) {
	deadline := time.Now().Add(demoDeadline)
	tick := time.NewTicker(demoPollInterval)
	defer tick.Stop()
	var cancelAt *countsJSON
	for {
		open := 0
		var last []string
		for _, r := range runs {
			_, counts, err := client.Run(ctx, r.id)
			if err != nil {
				return nil, fmt.Errorf("demo: read run %d: %w", r.id, err)
			}
			open += counts[lockstep.StatusPending] + counts[lockstep.StatusRunning]
			last = append(last, fmt.Sprintf("%s %v", r.name, countsOf(counts)))
			if r == export && cancelAt == nil && counts[lockstep.StatusDone] >= len(r.jobs)/2 {
				before := countsOf(counts)
				cancelAt = &before
				say("cancelling run %q (#%d): %d done, %d running, %d pending", r.name, r.id,
					before.Done, before.Running, before.Pending)
				res, err := client.CancelRun(ctx, r.id)
				switch {
				case errors.Is(err, lockstep.ErrRunFinished):
					// Its last jobs ended between the count and the cancel.
					say("run %q finished before the cancel reached it: it keeps its history", r.name)
				case err != nil:
					return nil, fmt.Errorf("demo: %w", err)
				default:
					say("run %q is %s; %d of its jobs were moved to CANCELLED", r.name, res.Run.Status, len(res.Cancelled))
				}
				open++ // look again: the counts above are from before the cancel
			}
		}
		if open == 0 {
			say("every job is final")
			return cancelAt, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("demo: jobs still open after %s: %v", demoDeadline, last)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("demo: interrupted: %w", context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// listRunJobs reads every job of a run, in ascending id order.
func listRunJobs(ctx context.Context, client *lockstep.Client, runID int64) ([]*lockstep.JobRow, error) {
	var out []*lockstep.JobRow
	var after int64
	for {
		page, err := client.Jobs(ctx, rowtype.JobListParams{RunID: runID, AfterID: after, Limit: 200})
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < 200 {
			return out, nil
		}
		after = page[len(page)-1].ID
	}
}
