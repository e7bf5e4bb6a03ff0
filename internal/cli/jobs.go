package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
)

type jobsListOptions struct {
	runID  int64
	status string
	queue  string
	kind   string
	view   string
	search string
	before int64
	limit  int
	scan   int
	asJSON bool
}

func (o *jobsListOptions) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Int64Var(&o.runID, "run", 0, "only jobs of this run")
	f.StringVar(&o.status, "status", "", "only jobs in this status: "+statusNames)
	f.StringVar(&o.queue, "queue", "", "only jobs of this queue")
	f.StringVar(&o.kind, "kind", "", "only jobs of this kind")
	f.StringVar(&o.search, "search", "", "only jobs whose args or metadata contain this text (case-insensitive; within each page's --scan window, and below it through the text index if 'lockstep migrate text-index up' created one)")
	f.StringVar(&o.view, "view", "", "only PENDING jobs that are scheduled (available later) or retrying (after a failed attempt, waiting for the next), or the failed (also dead) jobs: FAILED, no attempt left")
	f.Int64Var(&o.before, "before", 0, "list jobs older than this job id (the next page of a listing)")
	f.IntVar(&o.limit, "limit", 50, "how many jobs to list")
	f.IntVar(&o.scan, "scan", 10000, "examine at most this many job ids per page when filtering")
	f.BoolVar(&o.asJSON, "json", false, "print JSON instead of a table")
}

func newJobsCmd(c *app) *cobra.Command {
	var o jobsListOptions
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List jobs newest first, or show one (jobs show ID)",
		Long: `List jobs newest first, optionally filtered by run, status, queue and kind;
'jobs show ID' shows every field of one job, its args, metadata, output and
error history.

Two views of PENDING jobs: --view scheduled lists those available later
(enqueued with --in or --at, a retry's backoff, a snooze); --view retrying
those whose last attempt failed, with the time of the next (AVAILABLE) and
the last error. --view failed (or --view dead) lists the jobs that failed
for good: FAILED, with no attempt left or failed permanently, and their last
error (the same jobs as --status FAILED; 'jobs retry --view failed' brings
them back).

A page examines at most --scan job ids, so a filter that matches few jobs
never scans the whole table: such a page may hold fewer than --limit jobs
(even none) and still have a next page, printed as "next page: --before N".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return c.jobsList(cmd.Context(), o) },
	}
	o.flags(cmd)

	var lo jobsListOptions
	list := &cobra.Command{
		Use:   "list",
		Short: "List jobs newest first (the default)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return c.jobsList(cmd.Context(), lo) },
	}
	lo.flags(list)
	cmd.AddCommand(list, newJobsShowCmd(c),
		newJobsBulkCmd(c, lockstep.BulkRetry, "Retry FAILED jobs in bulk: those given by --id, or every one matching a filter",
			"Put FAILED jobs back to PENDING, available now, as 'retry job' does; a job of\na cancelled run stays FAILED."),
		newJobsBulkCmd(c, lockstep.BulkCancel, "Cancel jobs in bulk: those given by --id, or every one matching a filter",
			"Cancel WAITING, PENDING, BLOCKED and RUNNING jobs, as 'cancel job' does: a RUNNING\njob's worker is told at its next heartbeat."),
		newJobsBulkCmd(c, lockstep.BulkDelete, "Delete finished jobs in bulk: those given by --id, or every one matching a filter",
			"Delete DONE, FAILED and CANCELLED jobs, as retention does; a job cancelled while\nits worker still runs it is kept until the worker stops."))
	return cmd
}

func (c *app) jobsList(ctx context.Context, o jobsListOptions) error {
	p := lockstep.JobPageParams{RunID: o.runID, Queue: o.queue, Kind: o.kind, Search: o.search, BeforeID: o.before, Limit: o.limit, Window: o.scan}
	if len(o.search) > lockstep.MaxSearchLen {
		return fmt.Errorf("--search is at most %d bytes, got %d", lockstep.MaxSearchLen, len(o.search))
	}
	if o.status != "" {
		st, err := parseStatusFlag(o.status)
		if err != nil {
			return err
		}
		p.Status = st
	}
	st, view, err := parseViewFlag(o.view, p.Status)
	if err != nil {
		return err
	}
	p.Status, p.View = st, view
	if o.runID < 0 {
		return fmt.Errorf("--run must be a positive run id, got %d", o.runID)
	}
	if o.scan < 1 {
		return fmt.Errorf("--scan must be at least 1, got %d", o.scan)
	}
	if err := checkListFlags(o.before, o.limit, 1); err != nil {
		return err
	}
	return c.withQueueClient(ctx, func(client *lockstep.Client) error {
		page, err := client.JobPage(ctx, p)
		if err != nil {
			return err
		}
		if o.asJSON {
			return clienv.JSON(c.Stdout, toJobPageOut(page))
		}
		if len(page.Jobs) == 0 && page.Next == 0 && !page.Indexed {
			_, err := fmt.Fprintln(c.Stdout, "no jobs")
			return err
		}
		if len(page.Jobs) > 0 {
			if err := writeJobsTable(c.Stdout, page.Jobs); err != nil {
				return err
			}
		}
		writeNextHint(c.Stdout, len(page.Jobs), page.Next, page.Examined, page.Indexed)
		return nil
	})
}

func newJobsShowCmd(c *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show every field of a job: args, metadata, output, unique key, error history",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseIDArg("job", args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			return c.withQueueClient(ctx, func(client *lockstep.Client) error {
				job, err := client.Job(ctx, id)
				if err != nil {
					return notFoundAs(err, "job", id)
				}
				if asJSON {
					return clienv.JSON(c.Stdout, toJobOut(job))
				}
				var limits lockstep.QueueLimits
				if job.Status == lockstep.StatusBlocked {
					// Why it is held back: its queue's limits now.
					s, err := queueSettingsOf(ctx, client, job.Queue)
					if err != nil {
						return err
					}
					limits = s.Limits
				}
				return writeJobDetail(c.Stdout, job, limits)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
