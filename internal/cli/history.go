package cli

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// historyBucketOut is one step of `history --json`: the jobs finished in
// [start, start+step), summed over the queues and kinds chosen. Failure
// rate is failed / (done + failed) in percent, null with neither; average
// run time is over done, failed and retried attempts, null with none.
type historyBucketOut struct {
	Start          time.Time `json:"start"`
	Done           int64     `json:"done"`
	Failed         int64     `json:"failed"`
	Retried        int64     `json:"retried"`
	Cancelled      int64     `json:"cancelled"`
	FailurePercent *float64  `json:"failure_percent"`
	AvgRunMillis   *float64  `json:"avg_run_ms"`
}

// historyOut is `history --json`.
type historyOut struct {
	Since       time.Time          `json:"since"`
	StepSeconds float64            `json:"step_seconds"`
	Queue       string             `json:"queue,omitempty"`
	Kind        string             `json:"kind,omitempty"`
	Buckets     []historyBucketOut `json:"buckets"`
}

// historyStep is the step of a range: a minute up to an hour, then
// coarser, so a table stays a screen or two long.
func historyStep(since time.Duration) time.Duration {
	switch {
	case since <= time.Hour:
		return time.Minute
	case since <= 6*time.Hour:
		return 5 * time.Minute
	case since <= 24*time.Hour:
		return 15 * time.Minute
	case since <= 7*24*time.Hour:
		return 2 * time.Hour
	}
	return 24 * time.Hour
}

func newHistoryCmd(c *app) *cobra.Command {
	var queue, kind string
	var since, step time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Show the jobs finished per minute (or coarser) from the history rollup",
		Long: `Show how many jobs were done, failed (for good), retried (a failed attempt
with attempts left) and cancelled, their failure rate and average run time,
step by step over the last --since, from the history rollup in the
database: what every process's workers finished, counted per minute,
queue and kind and flushed every 10 s (and at stop). The rollup outlives
the jobs themselves (retention keeps it 30 days by default).

The step is a minute up to an hour, 5 minutes up to 6 hours, 15 minutes up
to a day, 2 hours up to a week, then a day; --step sets it. Times are UTC.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if since <= 0 {
				return fmt.Errorf("--since must be positive, got %s", since)
			}
			if step == 0 {
				step = historyStep(since)
			}
			if step < time.Minute || step%time.Minute != 0 {
				return fmt.Errorf("--step must be a whole number of minutes, got %s", step)
			}
			ctx := cmd.Context()
			return c.withQueueClient(ctx, func(client *lockstep.Client) error {
				now := time.Now().UTC()
				to := now.Truncate(step).Add(step)
				from := now.Add(-since).Truncate(step)
				rows, err := client.History(ctx, lockstep.HistoryParams{Since: from, Queue: queue, Kind: kind})
				if err != nil {
					return err
				}
				out := historyOut{Since: from, StepSeconds: step.Seconds(), Queue: queue, Kind: kind, Buckets: []historyBucketOut{}}
				for _, b := range rowtype.HistorySeries(rows, from, to, step) {
					o := historyBucketOut{Start: b.Bucket, Done: b.Done, Failed: b.Failed, Retried: b.Retried, Cancelled: b.Cancelled}
					if n := b.Done + b.Failed; n > 0 {
						v := 100 * float64(b.Failed) / float64(n)
						o.FailurePercent = &v
					}
					if n := b.Attempts(); n > 0 {
						v := float64(b.RunMillis) / float64(n)
						o.AvgRunMillis = &v
					}
					out.Buckets = append(out.Buckets, o)
				}
				if asJSON {
					return clienv.JSON(c.Stdout, out)
				}
				tw := clienv.Table(c.Stdout)
				fmt.Fprintf(tw, "TIME(UTC)\tDONE\tFAILED\tRETRIED\tCANCELLED\tFAILURE%%\tAVG_RUN\n")
				layout := "2006-01-02 15:04"
				for _, b := range out.Buckets {
					rate, avg := "-", "-"
					if b.FailurePercent != nil {
						rate = strconv.FormatFloat(*b.FailurePercent, 'f', 1, 64)
					}
					if b.AvgRunMillis != nil {
						avg = (time.Duration(*b.AvgRunMillis * float64(time.Millisecond))).Round(time.Millisecond).String()
					}
					fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\n", b.Start.Format(layout), b.Done, b.Failed, b.Retried, b.Cancelled, rate, avg)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&queue, "queue", "", "only this queue's jobs")
	cmd.Flags().StringVar(&kind, "kind", "", "only jobs of this kind")
	cmd.Flags().DurationVar(&since, "since", time.Hour, "how far back to show")
	cmd.Flags().DurationVar(&step, "step", 0, "the length of each row (default: by --since)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	return cmd
}
