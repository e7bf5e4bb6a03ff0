package labcli

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
	"github.com/lockstep-queue/lockstep/internal/dsn"
	"github.com/lockstep-queue/lockstep/lab/chaos"
)

// ledgerKind is the chaos test's kind of job: `lab chaos` starts
// `lockstep work --kind ledger` processes, whose jobs record every
// execution in a ledger table that the check reads.
func ledgerKind() clienv.WorkKind {
	return clienv.WorkKind{
		Name: "ledger",
		Help: `--kind ledger runs the chaos test's kind: each job records its start and end
in the table lockstep_chaos_ledger (see lockstep lab chaos).`,
		Register: func(d driver.Driver, ws *lockstep.Workers) error {
			return chaos.NewLedgerWorker(d).Register(ws)
		},
	}
}

func newChaosCmd(c *clienv.Env) *cobra.Command {
	var cfg chaos.Config
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Kill worker processes with SIGKILL while they work; check that no job was lost or finished twice",
		Long: `Run the process chaos test on a scratch database: enqueue --jobs ledger jobs in
runs of --run-size, start --processes "lockstep work --kind ledger" processes
(this binary), and while they work kill one at random with SIGKILL every
--kill-min to --kill-max and start another in its place; cancel --cancel-runs
runs half way. When every job is final, stop the processes with SIGTERM and
check, against the jobs it enqueued, the runs it cancelled and the pids it
killed:

  every job not in a cancelled run is DONE, none is lost;
  each job's final state was written exactly once (a trigger-written audit
  of every status change) and nothing changed it afterwards;
  each attempt of a job executed at most once (a ledger each execution
  writes its start and end into, in statements of its own);
  a job ran again only when the process running it had been killed;
  a DONE job's last execution completed.

It exits non-zero when a check fails. The database (--dsn or $LOCKSTEP_DSN)
must be migrated and hold no job; the jobs are left behind for inspection.`,
		Example: `  lockstep lab chaos --dsn postgres://localhost/scratch --jobs 50000`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(c.DSN) == "" {
				return errors.New("lab chaos needs --dsn (or $LOCKSTEP_DSN) naming a scratch database; it will not default to ./" + dsn.DefaultSQLitePath)
			}
			bin, err := os.Executable()
			if err != nil {
				return fmt.Errorf("lab chaos: find this binary: %w", err)
			}
			logs, err := os.MkdirTemp("", "lockstep-chaos-")
			if err != nil {
				return fmt.Errorf("lab chaos: %w", err)
			}
			cfg.Binary, cfg.DSN, cfg.LogDir = bin, c.DSN, logs
			if !cmd.Flags().Changed("seed") {
				cfg.Seed = uint64(time.Now().UnixNano())
			}
			cfg.Progress = c.Stdout
			if asJSON {
				cfg.Progress = c.Stderr
			}
			fmt.Fprintf(cfg.Progress, "chaos: seed %d; worker logs in %s\n", cfg.Seed, logs)
			res, err := chaos.Run(cmd.Context(), cfg)
			if res != nil {
				if asJSON {
					if eerr := clienv.JSON(c.Stdout, res); eerr != nil {
						return errors.Join(err, eerr)
					}
				} else {
					fmt.Fprintln(c.Stdout, res.String())
					for _, p := range res.Problems {
						fmt.Fprintln(c.Stdout, "problem:", p)
					}
				}
			}
			if err != nil {
				return err
			}
			if !res.OK() {
				return fmt.Errorf("lab chaos: %d problems", res.ProblemCount)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Jobs, "jobs", 5000, "jobs to enqueue")
	f.IntVar(&cfg.RunSize, "run-size", 100, "jobs per run")
	f.IntVar(&cfg.Processes, "processes", 4, "worker processes working at once")
	f.IntVar(&cfg.Workers, "workers", 10, "workers per process")
	f.IntVar(&cfg.WorkMillis, "work-ms", 100, "mean milliseconds a job works (uniform in [0, 2×])")
	f.DurationVar(&cfg.KillMin, "kill-min", time.Second, "shortest wait between kills")
	f.DurationVar(&cfg.KillMax, "kill-max", 3*time.Second, "longest wait between kills")
	f.IntVar(&cfg.CancelRuns, "cancel-runs", 3, "runs cancelled half way")
	f.DurationVar(&cfg.Heartbeat, "heartbeat", 300*time.Millisecond, "the workers' --heartbeat")
	f.DurationVar(&cfg.ReapAfter, "reap-after", 3*time.Second, "the workers' --reap-after")
	f.DurationVar(&cfg.Timeout, "timeout", 30*time.Minute, "longest the whole run may take")
	f.Uint64Var(&cfg.Seed, "seed", 0, "seed of the random choices (default: from the clock; printed)")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON (progress goes to stderr)")
	return cmd
}
