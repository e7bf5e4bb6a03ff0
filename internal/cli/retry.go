package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
)

func newRetryCmd(c *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "retry",
		Short: "Put a FAILED job back to PENDING (retry job ID)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newRetryJobCmd(c))
	return cmd
}

func newRetryJobCmd(c *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "job ID",
		Short: "Put a FAILED job back to PENDING, available now",
		Long: `Put a FAILED job back to PENDING, available now, with one more attempt if
it had none left. A job in any other status, or of a cancelled run, is an
error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseIDArg("job", args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			return c.withQueueClient(ctx, func(client *lockstep.Client) error {
				ok, err := client.RetryJob(ctx, id)
				if errors.Is(err, lockstep.ErrRunCancelled) {
					msg := fmt.Sprintf("cannot retry job %d: its run is cancelled", id)
					if job, jerr := client.Job(ctx, id); jerr == nil && job.RunID != 0 {
						msg = fmt.Sprintf("cannot retry job %d: its run %d is cancelled", id, job.RunID)
					}
					return errors.New(msg)
				}
				if err != nil {
					return notFoundAs(err, "job", id)
				}
				job, err := client.Job(ctx, id)
				if err != nil {
					return notFoundAs(err, "job", id)
				}
				if !ok {
					return fmt.Errorf("cannot retry job %d: it is %s; only FAILED jobs can be retried", id, job.Status)
				}
				if asJSON {
					return clienv.JSON(c.Stdout, jobChangeOut{Changed: true, Job: toJobOut(job)})
				}
				_, err = fmt.Fprintf(c.Stdout, "job %d is PENDING again\n", id)
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
