package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// bulkOptions are a bulk action's flags: the jobs (ids, or a filter) and
// how it runs.
type bulkOptions struct {
	ids                               []string
	status, queue, kind, view, search string
	runID                             int64
	since                             time.Duration
	yes, asJSON                       bool
	batch                             int
}

func (o *bulkOptions) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringSliceVar(&o.ids, "id", nil, "a job id (repeat, or comma-separate); with ids, the filter flags are not read")
	f.StringVar(&o.status, "status", "", "only jobs in this status")
	f.StringVar(&o.queue, "queue", "", "only jobs of this queue")
	f.StringVar(&o.kind, "kind", "", "only jobs of this kind")
	f.StringVar(&o.view, "view", "", "only jobs of a view: scheduled or retrying (PENDING), or failed (also dead: FAILED, no attempt left)")
	f.StringVar(&o.search, "search", "", "only jobs whose args or metadata contain this text (case-insensitive)")
	f.Int64Var(&o.runID, "run", 0, "only jobs of this run")
	f.DurationVar(&o.since, "since", 0, "only jobs that finished within this long (e.g. 1h)")
	f.BoolVar(&o.yes, "yes", false, "do it; without --yes only the preview count is printed")
	f.IntVar(&o.batch, "batch", lockstep.DefaultBulkBatchSize, "jobs written per transaction")
	f.BoolVar(&o.asJSON, "json", false, "print JSON")
}

// newJobsBulkCmd is 'jobs retry', 'jobs cancel' or 'jobs delete'.
func newJobsBulkCmd(c *app, action lockstep.BulkAction, short, long string) *cobra.Command {
	var o bulkOptions
	cmd := &cobra.Command{
		Use:   string(action) + " [flags]",
		Short: short,
		Long: long + `

Select jobs by --id, or by a filter (--status, --queue, --kind, --view,
--search, --run, --since); with no filter, every job the action applies to.
Without --yes nothing changes: the command prints how many jobs the action
would select (for a filter, counted by reading the whole table in windows of
its primary key, without locks). With --yes it runs in batches of --batch
jobs, each its own transaction, in ascending id order; each job's status is
checked again as it is written, and one that moved on is skipped. Progress is
drawn on a terminal only.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return c.jobsBulk(cmd.Context(), action, o) },
	}
	o.flags(cmd)
	return cmd
}

// bulkOut is a bulk action's JSON.
type bulkOut struct {
	Action  string `json:"action"`
	Preview bool   `json:"preview"`
	// Selected is the preview's count (or the number of ids given).
	Selected int64 `json:"selected"`
	Matched  int   `json:"matched"`
	Changed  int   `json:"changed"`
	Skipped  int   `json:"skipped"`
	Batches  int   `json:"batches"`
}

func (o bulkOptions) params(action lockstep.BulkAction) (lockstep.BulkParams, error) {
	p := lockstep.BulkParams{Action: action, BatchSize: o.batch}
	for _, s := range o.ids {
		for _, part := range strings.Split(s, ",") {
			id, err := parseIDArg("job", part)
			if err != nil {
				return p, err
			}
			p.IDs = append(p.IDs, id)
		}
	}
	f := lockstep.JobFilter{Queue: o.queue, Kind: o.kind, Search: o.search, RunID: o.runID}
	if o.status != "" {
		st, err := parseStatusFlag(o.status)
		if err != nil {
			return p, err
		}
		f.Status = st
	}
	st, view, err := parseViewFlag(o.view, f.Status)
	if err != nil {
		return p, err
	}
	f.Status, f.View = st, view
	if f.Status != "" && !action.Applies(f.Status) {
		return p, fmt.Errorf("jobs %s applies to %s jobs, not %s", action, statusList(action.Statuses()), f.Status)
	}
	switch {
	case len(o.search) > lockstep.MaxSearchLen:
		return p, fmt.Errorf("--search is at most %d bytes, got %d", lockstep.MaxSearchLen, len(o.search))
	case o.runID < 0:
		return p, fmt.Errorf("--run must be a positive run id, got %d", o.runID)
	case o.since < 0:
		return p, fmt.Errorf("--since must be a positive duration such as 1h, got %s", o.since)
	case o.since > 0 && action == lockstep.BulkCancel:
		return p, errors.New("--since selects jobs by when they finished; jobs cancel applies to live jobs, which have not")
	case o.batch < 1 || o.batch > lockstep.MaxBulkBatchSize:
		return p, fmt.Errorf("--batch must be 1 to %d, got %d", lockstep.MaxBulkBatchSize, o.batch)
	}
	if o.since > 0 {
		f.FinishedAfter = time.Now().Add(-o.since)
	}
	p.Filter = f
	return p, nil
}

func statusList(sts []rowtype.JobStatus) string {
	names := make([]string, len(sts))
	for i, s := range sts {
		names[i] = string(s)
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func (c *app) jobsBulk(ctx context.Context, action lockstep.BulkAction, o bulkOptions) error {
	p, err := o.params(action)
	if err != nil {
		return err
	}
	return c.withQueueClient(ctx, func(client *lockstep.Client) error {
		out := bulkOut{Action: string(action), Preview: !o.yes}
		if len(p.IDs) > 0 {
			out.Selected = int64(len(p.IDs))
		} else {
			n, err := client.BulkCount(ctx, action, p.Filter)
			if err != nil {
				return err
			}
			out.Selected = n
		}
		if !o.yes {
			if o.asJSON {
				return clienv.JSON(c.Stdout, out)
			}
			what := "jobs match"
			if len(p.IDs) > 0 {
				what = "jobs given"
			}
			_, err := fmt.Fprintf(c.Stdout, "%d %s: %s would apply to those that are %s.\nnothing changed: run again with --yes to %s them\n",
				out.Selected, what, action, statusList(action.Statuses()), action)
			return err
		}
		done := c.bulkProgress(out.Selected, action)
		p.Progress = func(pr lockstep.BulkProgress) { done(pr.Matched) }
		res, err := client.Bulk(ctx, p)
		done(-1)
		out.Matched, out.Changed, out.Skipped, out.Batches = res.Matched, res.Changed, res.Skipped, res.Batches
		if err != nil {
			// The batches before the error are written: say so.
			return fmt.Errorf("%w (before it: %d jobs %s in %d batches)", err, res.Changed, action.Past(), res.Batches)
		}
		if o.asJSON {
			return clienv.JSON(c.Stdout, out)
		}
		_, err = fmt.Fprintf(c.Stdout, "%d jobs %s in %d batches; %d skipped (no longer %s)\n",
			res.Changed, action.Past(), res.Batches, res.Skipped, statusList(action.Statuses()))
		return err
	})
}

// bulkProgress draws a bar on a terminal (stderr), and nothing elsewhere;
// the returned func takes the jobs handled so far, -1 at the end.
func (c *app) bulkProgress(total int64, action lockstep.BulkAction) func(int) {
	if !clienv.IsTerminal(c.Stderr) || total <= 0 {
		return func(int) {}
	}
	bar := progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(c.Stderr),
		progressbar.OptionSetDescription(string(action)),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionClearOnFinish())
	return func(n int) {
		if n < 0 {
			_ = bar.Finish()
			return
		}
		_ = bar.Set64(int64(n))
	}
}
