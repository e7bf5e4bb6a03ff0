package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
)

type runsListOptions struct {
	before     int64
	limit      int
	countLimit int
	asJSON     bool
}

func (o *runsListOptions) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Int64Var(&o.before, "before", 0, "list runs older than this run id (the next page of a listing)")
	f.IntVar(&o.limit, "limit", 50, "how many runs to list")
	f.IntVar(&o.countLimit, "count-limit", 100000, "count at most this many jobs of each run (larger runs show ≥)")
	f.BoolVar(&o.asJSON, "json", false, "print JSON instead of a table")
}

func newRunsCmd(c *app) *cobra.Command {
	var o runsListOptions
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List runs with their progress, show one (runs show ID), or create one (runs create --spec FILE)",
		Long: `List runs newest first, with their job counts by status; 'runs show ID'
shows one run, its newest jobs and, for a workflow, each job's
dependencies and the run's callbacks; 'runs create --spec FILE' creates a
run, with dependencies and callbacks, from a JSON spec.

Counts read at most --count-limit jobs per run, so a listing never scans a
huge run whole; the counts of a larger run are lower bounds, shown as ≥N.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return c.runsList(cmd.Context(), o) },
	}
	o.flags(cmd)

	var lo runsListOptions
	list := &cobra.Command{
		Use:   "list",
		Short: "List runs newest first, with their job counts (the default)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return c.runsList(cmd.Context(), lo) },
	}
	lo.flags(list)
	cmd.AddCommand(list, newRunsShowCmd(c), newRunsCreateCmd(c))
	return cmd
}

// runsListOut is `runs --json`: Next is the --before of the next page, 0
// when this page reached the oldest run.
type runsListOut struct {
	Runs []runOut `json:"runs"`
	Next int64    `json:"next"`
}

func (c *app) runsList(ctx context.Context, o runsListOptions) error {
	if err := checkListFlags(o.before, o.limit, o.countLimit); err != nil {
		return err
	}
	return c.withQueueClient(ctx, func(client *lockstep.Client) error {
		runs, err := client.Runs(ctx, lockstep.RunListParams{BeforeID: o.before, Limit: o.limit}, o.countLimit)
		if err != nil {
			return err
		}
		out := runsListOut{Runs: make([]runOut, 0, len(runs))}
		for _, r := range runs {
			out.Runs = append(out.Runs, toRunOut(r))
		}
		if len(runs) == o.limit && len(runs) > 0 {
			out.Next = runs[len(runs)-1].ID
		}
		if o.asJSON {
			return clienv.JSON(c.Stdout, out)
		}
		if len(runs) == 0 {
			_, err := fmt.Fprintln(c.Stdout, "no runs")
			return err
		}
		if err := writeRunsTable(c.Stdout, out.Runs); err != nil {
			return err
		}
		writeNextHint(c.Stdout, len(runs), out.Next, 0, false)
		return nil
	})
}

// runShowOut is `runs show --json`: the run, its counts and its newest
// jobs (Next is the --before of the next page of `jobs --run ID`).
type runShowOut struct {
	Run  runOut   `json:"run"`
	Jobs []jobOut `json:"jobs"`
	Next int64    `json:"next"`
	// Workflow is set for a run with dependencies or callbacks.
	Workflow *workflowOut `json:"workflow,omitempty"`
}

func newRunsShowCmd(c *app) *cobra.Command {
	var limit, countLimit, graphLimit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a run, its job counts and its newest jobs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseIDArg("run", args[0])
			if err != nil {
				return err
			}
			if err := checkListFlags(0, limit, countLimit); err != nil {
				return err
			}
			if graphLimit < 1 || graphLimit > lockstep.MaxRunGraphLimit {
				return fmt.Errorf("--graph-limit must be from 1 to %d, got %d", lockstep.MaxRunGraphLimit, graphLimit)
			}
			ctx := cmd.Context()
			return c.withQueueClient(ctx, func(client *lockstep.Client) error {
				sum, err := client.RunSummary(ctx, id, countLimit)
				if err != nil {
					return notFoundAs(err, "run", id)
				}
				page, err := client.JobPage(ctx, lockstep.JobPageParams{RunID: id, Limit: limit})
				if err != nil {
					return err
				}
				graph, err := client.RunGraph(ctx, id, graphLimit)
				if err != nil {
					return err
				}
				out := runShowOut{Run: toRunOut(sum), Jobs: toJobsOut(page.Jobs), Next: page.Next,
					Workflow: toWorkflowOut(graph, page.Jobs, graphLimit)}
				if asJSON {
					return clienv.JSON(c.Stdout, out)
				}
				return writeRunDetail(c, out, page)
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 20, "how many of the run's newest jobs to show")
	cmd.Flags().IntVar(&countLimit, "count-limit", 100000, "count at most this many of the run's jobs (more show ≥)")
	cmd.Flags().IntVar(&graphLimit, "graph-limit", 100, "show the dependencies of at most this many of a workflow's jobs (the first by id)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func writeRunDetail(c *app, out runShowOut, page *lockstep.JobPage) error {
	r := out.Run
	w := c.Stdout
	tw := clienv.Table(w)
	fmt.Fprintf(tw, "id:\t%d\n", r.ID)
	fmt.Fprintf(tw, "name:\t%s\n", outSafe(r.Name, false))
	fmt.Fprintf(tw, "status:\t%s\n", r.state())
	created, cancelled := "-", "-"
	if r.CreatedAt != nil {
		created = outTime(*r.CreatedAt)
	}
	if r.CancelledAt != nil {
		cancelled = outTime(*r.CancelledAt)
	}
	fmt.Fprintf(tw, "created:\t%s\n", created)
	fmt.Fprintf(tw, "cancelled:\t%s\n", cancelled)
	if len(r.Metadata) > 0 {
		fmt.Fprintf(tw, "metadata:\t%s\n", outCell(string(r.Metadata), 200))
	}
	fmt.Fprintf(tw, "progress:\t%s final\n", r.progress())
	for _, st := range allStatuses() {
		fmt.Fprintf(tw, "  %s:\t%s\n", st, outCount(int64(r.Counts[st]), r.CountsCapped))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.CountsCapped {
		fmt.Fprintln(w, "(the run has more jobs than --count-limit: the counts are lower bounds)")
	}
	fmt.Fprintln(w)
	if out.Workflow != nil {
		if err := writeWorkflow(w, out.Workflow); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if len(page.Jobs) == 0 {
		if page.Next == 0 {
			_, err := fmt.Fprintln(w, "no jobs")
			return err
		}
	} else {
		fmt.Fprintln(w, "newest jobs:")
		if err := writeJobsTable(w, page.Jobs); err != nil {
			return err
		}
	}
	if page.Next != 0 {
		fmt.Fprintf(w, "more: lockstep jobs --run %d --before %s\n", r.ID, strconv.FormatInt(page.Next, 10))
	}
	return nil
}
