package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
)

func newCancelCmd(c *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cancel",
		Short: "Cancel a run (cancel run ID) or a job (cancel job ID)",
		Long: `Cancel a run and its WAITING, PENDING, BLOCKED and RUNNING jobs, or one job.
A run whose jobs have all ended (DONE or FAILED) cannot be cancelled: it
keeps its history.
Cancelling a job of a workflow cancels the jobs that depend on it too,
unless they were created to run on a dependency's failure.

Running jobs' contexts are cancelled at their worker's next heartbeat; their
late results are discarded.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCancelRunCmd(c), newCancelJobCmd(c))
	return cmd
}

// cancelRunOut is `cancel run --json`: the run, and the ids of the jobs
// the cancel moved to CANCELLED.
type cancelRunOut struct {
	Run       runRowOut `json:"run"`
	Cancelled []int64   `json:"cancelled"`
}

func newCancelRunCmd(c *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "run ID",
		Short: "Cancel a run and its WAITING, PENDING, BLOCKED and RUNNING jobs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseIDArg("run", args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			return c.withQueueClient(ctx, func(client *lockstep.Client) error {
				res, err := client.CancelRun(ctx, id)
				if errors.Is(err, lockstep.ErrRunFinished) {
					return fmt.Errorf("cannot cancel run %d: it has finished (every job has ended), so there is nothing to cancel; it stays as it is (see: lockstep runs show %d)", id, id)
				}
				if err != nil {
					return notFoundAs(err, "run", id)
				}
				out := cancelRunOut{Run: toRunRowOut(res.Run), Cancelled: res.Cancelled}
				if out.Cancelled == nil {
					out.Cancelled = []int64{}
				}
				if asJSON {
					return clienv.JSON(c.Stdout, out)
				}
				_, err = fmt.Fprintf(c.Stdout, "run %d (%s) is %s; %d of its jobs were cancelled\n",
					res.Run.ID, outSafe(res.Run.Name, false), res.Run.Status, len(res.Cancelled))
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// jobChangeOut is `cancel job --json` and `retry job --json`: whether the
// command changed the job, and the job as it is now.
type jobChangeOut struct {
	Changed bool   `json:"changed"`
	Job     jobOut `json:"job"`
}

func newCancelJobCmd(c *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "job ID",
		Short: "Cancel a WAITING, PENDING, BLOCKED or RUNNING job",
		Long: `Cancel a WAITING, PENDING, BLOCKED or RUNNING job. Cancelling a job that is already
CANCELLED changes nothing and succeeds; a DONE or FAILED job cannot be
cancelled.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseIDArg("job", args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			return c.withQueueClient(ctx, func(client *lockstep.Client) error {
				ok, err := client.CancelJob(ctx, id)
				if err != nil {
					return notFoundAs(err, "job", id)
				}
				job, err := client.Job(ctx, id)
				if err != nil {
					return notFoundAs(err, "job", id)
				}
				if !ok && job.Status != lockstep.StatusCancelled {
					return fmt.Errorf("cannot cancel job %d: it is %s; only WAITING, PENDING, BLOCKED or RUNNING jobs can be cancelled", id, job.Status)
				}
				if asJSON {
					return clienv.JSON(c.Stdout, jobChangeOut{Changed: ok, Job: toJobOut(job)})
				}
				if !ok {
					_, err = fmt.Fprintf(c.Stdout, "job %d was already CANCELLED\n", id)
					return err
				}
				_, err = fmt.Fprintf(c.Stdout, "job %d is CANCELLED\n", id)
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
