package cli

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/dashboard"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
)

// queueStatsOut is one queue of `stats --json`. Counts has every status
// and Finished DONE and FAILED (jobs that reached them within the window);
// a capped count means "at least N". The oldest available PENDING job's age
// is by the database's clock, null when none is available.
// JobsPerSecond is (Finished DONE + FAILED) / the window. Ready and
// Scheduled split PENDING: available now, and available later (a delayed
// insert, a retry's backoff, a snooze); Scheduled is null when both
// counts are capped and the split is unknown.
type queueStatsOut struct {
	Queue                   string                          `json:"queue"`
	Counts                  map[lockstep.JobStatus]countOut `json:"counts"`
	Ready                   countOut                        `json:"ready"`
	Scheduled               *countOut                       `json:"scheduled"`
	Finished                map[lockstep.JobStatus]countOut `json:"finished"`
	WindowSeconds           float64                         `json:"window_seconds"`
	JobsPerSecond           float64                         `json:"jobs_per_second"`
	JobsPerSecondCapped     bool                            `json:"jobs_per_second_capped"`
	OldestAvailableAt       *time.Time                      `json:"oldest_available_at"`
	OldestPendingAgeSeconds *float64                        `json:"oldest_pending_age_seconds"`
	OldestPendingAgeCapped  bool                            `json:"oldest_pending_age_capped"`
	Now                     *time.Time                      `json:"now"`
}

// statsOut is `stats --json`.
type statsOut struct {
	WindowSeconds float64         `json:"window_seconds"`
	CountLimit    int             `json:"count_limit"`
	Queues        []queueStatsOut `json:"queues"`
	// ReplicaLagSeconds: with --read-dsn, how far the replica read from
	// is behind the primary.
	ReplicaLagSeconds *float64 `json:"replica_lag_seconds,omitempty"`
}

func toQueueStatsOut(st *lockstep.QueueStats, window time.Duration) queueStatsOut {
	if st.Window > 0 {
		window = st.Window
	}
	out := queueStatsOut{
		Queue: st.Queue, Counts: map[lockstep.JobStatus]countOut{}, Finished: map[lockstep.JobStatus]countOut{},
		WindowSeconds: window.Seconds(), Now: outTimePtr(st.Now), OldestAvailableAt: outTimePtr(st.OldestAvailableAt),
	}
	for _, s := range allStatuses() {
		n := st.Counts[s]
		out.Counts[s] = countOut{N: n.N, Capped: n.Capped}
	}
	out.Ready = countOut{N: st.Ready.N, Capped: st.Ready.Capped}
	if sched, ok := st.Scheduled(); ok {
		out.Scheduled = &countOut{N: sched.N, Capped: sched.Capped}
	}
	var finished int64
	for _, s := range []lockstep.JobStatus{lockstep.StatusDone, lockstep.StatusFailed} {
		n := st.Finished[s]
		out.Finished[s] = countOut{N: n.N, Capped: n.Capped}
		finished += n.N
		out.JobsPerSecondCapped = out.JobsPerSecondCapped || n.Capped
	}
	if window > 0 {
		out.JobsPerSecond = float64(finished) / window.Seconds()
	}
	if !st.OldestAvailableAt.IsZero() && !st.Now.IsZero() {
		age := max(st.Now.Sub(st.OldestAvailableAt), 0).Seconds()
		out.OldestPendingAgeSeconds = &age
		out.OldestPendingAgeCapped = st.OldestCapped
	}
	return out
}

func newStatsCmd(c *app) *cobra.Command {
	var window time.Duration
	var countLimit int
	var asJSON bool
	var readDSN string
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Show each queue's jobs by status, its oldest waiting job and its throughput",
		Long: `Show, for each queue that has jobs: how many are in each status, how many
of the PENDING ones are SCHEDULED (available later: enqueued with --in or
--at, waiting out a retry's backoff or a snooze), how long the oldest
available PENDING job has waited, and how many jobs per second finished
(DONE or FAILED) over the last --window.

Each count reads at most --count-limit index entries, so stats stay cheap on
a huge queue; a count that reaches the limit is shown as ≥N.

With --read-dsn the counts are read from that replica of the --dsn
database, and its lag is printed first.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if window <= 0 {
				return fmt.Errorf("--window must be positive, got %s", window)
			}
			if countLimit < 1 {
				return fmt.Errorf("--count-limit must be at least 1, got %d", countLimit)
			}
			ctx := cmd.Context()
			return c.withStatsClient(ctx, readDSN, func(client *lockstep.Client, lag *time.Duration) error {
				stats, err := client.Stats(ctx, &lockstep.StatsParams{CountLimit: countLimit, Window: window})
				if err != nil {
					return err
				}
				out := statsOut{WindowSeconds: window.Seconds(), CountLimit: countLimit, Queues: make([]queueStatsOut, 0, len(stats))}
				if lag != nil {
					secs := lag.Seconds()
					out.ReplicaLagSeconds = &secs
				}
				for _, st := range stats {
					out.Queues = append(out.Queues, toQueueStatsOut(st, window))
				}
				if asJSON {
					return clienv.JSON(c.Stdout, out)
				}
				if lag != nil {
					fmt.Fprintf(c.Stdout, "read from the --read-dsn replica, %s behind the primary\n", outAge(*lag))
				}
				if len(out.Queues) == 0 {
					_, err := fmt.Fprintln(c.Stdout, "no queue has jobs")
					return err
				}
				tw := clienv.Table(c.Stdout)
				// SCHEDULED is the part of PENDING available later: a
				// queue of 200 delayed jobs is not 200 jobs waiting.
				fmt.Fprintf(tw, "QUEUE\t%s\tSCHEDULED\tOLDEST_PENDING\tJOBS/S(%s)\n", statusHeader(), window)
				for _, q := range out.Queues {
					fmt.Fprintf(tw, "%s", outCell(q.Queue, 40))
					for _, s := range allStatuses() {
						fmt.Fprintf(tw, "\t%s", outCount(q.Counts[s].N, q.Counts[s].Capped))
					}
					sched := "?"
					if q.Scheduled != nil {
						sched = outCount(q.Scheduled.N, q.Scheduled.Capped)
					}
					fmt.Fprintf(tw, "\t%s", sched)
					oldest := "-"
					if q.OldestPendingAgeSeconds != nil {
						oldest = outAge(time.Duration(*q.OldestPendingAgeSeconds * float64(time.Second)))
						if q.OldestPendingAgeCapped {
							// More jobs are available than were read: one of
							// a later priority may have waited longer.
							oldest = "≥" + oldest
						}
					}
					rate := strconv.FormatFloat(q.JobsPerSecond, 'f', 2, 64)
					if q.JobsPerSecondCapped {
						rate = "≥" + rate
					}
					fmt.Fprintf(tw, "\t%s\t%s\n", oldest, rate)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().DurationVar(&window, "window", time.Minute, "how far back to count finished jobs for JOBS/S")
	cmd.Flags().IntVar(&countLimit, "count-limit", 100000, "count at most this many jobs of each status of each queue (more show ≥)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	cmd.Flags().StringVar(&readDSN, "read-dsn", "", "read the counts from this replica of the --dsn database (its lag is shown)")
	return cmd
}

// withStatsClient runs fn with a client on the --dsn database, or on the
// --read-dsn replica with its lag.
func (c *app) withStatsClient(ctx context.Context, readDSN string, fn func(*lockstep.Client, *time.Duration) error) error {
	if readDSN == "" {
		return c.withQueueClient(ctx, func(client *lockstep.Client) error { return fn(client, nil) })
	}
	d, err := c.OpenReadDriver(ctx, readDSN)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	readLag, err := dashboard.ReplicaLag(d.DB(), d.Dialect())
	if err != nil {
		return err
	}
	lag, err := readLag(ctx)
	if err != nil {
		return fmt.Errorf("--read-dsn: %w", err)
	}
	client, err := lockstep.NewClient(d, lockstep.Config{Logger: c.Logger})
	if err != nil {
		return err
	}
	return fn(client, &lag)
}
