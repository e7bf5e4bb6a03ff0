package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
)

// queueListLimit bounds how many queues with jobs `queues list` reads.
const queueListLimit = 1000

// queueOut is a queue and its shared settings in JSON. MaxWorkers 0 means
// as each process configured it.
type queueOut struct {
	Queue      string     `json:"queue"`
	Paused     bool       `json:"paused"`
	PausedAt   *time.Time `json:"paused_at"`
	MaxWorkers int        `json:"max_workers"`
	UpdatedAt  *time.Time `json:"updated_at"`
}

func toQueueOut(s lockstep.QueueSettings) queueOut {
	return queueOut{
		Queue: s.Queue, Paused: !s.Paused.IsZero(), PausedAt: outTimePtr(s.Paused),
		MaxWorkers: s.MaxWorkers, UpdatedAt: outTimePtr(s.UpdatedAt),
	}
}

// queuesListOut is `queues list --json`. Capped means more queues have
// jobs than were read: some without settings may be missing.
type queuesListOut struct {
	Queues []queueOut `json:"queues"`
	Capped bool       `json:"capped"`
}

func newQueuesCmd(c *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "queues",
		Short: "List queues with their settings, pause and resume them, cap their workers",
		Long: `List the queues (those with jobs or with settings) and their shared
settings, or change them. Settings live in the database: every process that
serves a queue follows them within a second or so.

  queues pause NAME            stop claiming the queue's jobs (running ones finish)
  queues resume NAME           claim them again
  queues max-workers NAME N    run at most N of its jobs at once per process (0: as configured)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return c.queuesList(cmd.Context(), asJSON) },
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of a table")

	var listJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List queues and their settings (the default)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return c.queuesList(cmd.Context(), listJSON) },
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print JSON instead of a table")

	pause := c.queueSettingCmd("pause NAME", "Pause a queue: no process claims its jobs until it is resumed",
		cobra.ExactArgs(1), func(ctx context.Context, client *lockstep.Client, args []string) (string, error) {
			if err := client.PauseQueue(ctx, args[0]); err != nil {
				return "", err
			}
			return "is paused", nil
		})
	resume := c.queueSettingCmd("resume NAME", "Resume a paused queue",
		cobra.ExactArgs(1), func(ctx context.Context, client *lockstep.Client, args []string) (string, error) {
			if err := client.ResumeQueue(ctx, args[0]); err != nil {
				return "", err
			}
			return "is resumed", nil
		})
	maxWorkers := c.queueSettingCmd("max-workers NAME N", "Cap the queue's workers in each process at N (0 clears the cap)",
		// N is checked before the database is opened.
		cobra.MatchAll(cobra.ExactArgs(2), func(_ *cobra.Command, args []string) error {
			_, err := parseMaxWorkers(args[1])
			return err
		}), func(ctx context.Context, client *lockstep.Client, args []string) (string, error) {
			n, err := parseMaxWorkers(args[1])
			if err != nil {
				return "", err
			}
			if err := client.SetQueueMaxWorkers(ctx, args[0], n); err != nil {
				return "", err
			}
			if n == 0 {
				return "runs as many workers as each process configures", nil
			}
			return fmt.Sprintf("runs at most %d worker(s) per process", n), nil
		})
	maxWorkers.Long = `Cap how many of the queue's jobs each process runs at once, overriding its
configured max workers (raising it too, up to 10000) while the cap is set;
0 clears the cap. Running jobs are not stopped: a lower cap takes effect as
they finish.`
	cmd.AddCommand(list, pause, resume, maxWorkers)
	return cmd
}

func parseMaxWorkers(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 || n > lockstep.MaxQueueWorkers {
		return 0, fmt.Errorf("invalid max workers %q: want 0 (clear the cap) to %d", s, lockstep.MaxQueueWorkers)
	}
	return n, nil
}

// queueSettingCmd is a command that changes one queue's settings with
// change, then reports them: the sentence change returns, or with --json
// the settings as they are now.
func (c *app) queueSettingCmd(use, short string, args cobra.PositionalArgs,
	change func(context.Context, *lockstep.Client, []string) (string, error)) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args,
		RunE: func(cmd *cobra.Command, args []string) error {
			queue := args[0]
			if strings.TrimSpace(queue) == "" {
				return errors.New("the queue name must not be empty")
			}
			ctx := cmd.Context()
			return c.withQueueClient(ctx, func(client *lockstep.Client) error {
				did, err := change(ctx, client, args)
				if err != nil {
					return err
				}
				if !asJSON {
					_, err := fmt.Fprintf(c.Stdout, "queue %s %s\n", outSafe(queue, false), did)
					return err
				}
				all, err := client.ListQueueSettings(ctx)
				if err != nil {
					return fmt.Errorf("read queue settings back: %w", err)
				}
				i := slices.IndexFunc(all, func(s lockstep.QueueSettings) bool { return s.Queue == queue })
				if i < 0 {
					return fmt.Errorf("read queue settings back: queue %q has none", queue)
				}
				return clienv.JSON(c.Stdout, toQueueOut(all[i]))
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the queue's settings as JSON")
	return cmd
}

func (c *app) queuesList(ctx context.Context, asJSON bool) error {
	return c.withQueueClient(ctx, func(client *lockstep.Client) error {
		settings, err := client.ListQueueSettings(ctx)
		if err != nil {
			return err
		}
		// A queue with jobs but no settings runs as configured; a queue
		// with settings but no jobs (paused ahead of its first job) is
		// listed too.
		withJobs, err := client.Queues(ctx, queueListLimit)
		if err != nil {
			return err
		}
		out := queuesListOut{Queues: make([]queueOut, 0, len(settings)+len(withJobs)), Capped: len(withJobs) >= queueListLimit}
		seen := map[string]bool{}
		for _, s := range settings {
			seen[s.Queue] = true
			out.Queues = append(out.Queues, toQueueOut(s))
		}
		for _, q := range withJobs {
			if !seen[q] {
				out.Queues = append(out.Queues, queueOut{Queue: q})
			}
		}
		slices.SortFunc(out.Queues, func(a, b queueOut) int { return strings.Compare(a.Queue, b.Queue) })
		if asJSON {
			return clienv.JSON(c.Stdout, out)
		}
		return writeQueuesTable(c.Stdout, out)
	})
}

func writeQueuesTable(w io.Writer, out queuesListOut) error {
	if len(out.Queues) == 0 {
		_, err := fmt.Fprintln(w, "no queue has jobs or settings")
		return err
	}
	tw := clienv.Table(w)
	fmt.Fprintln(tw, "QUEUE\tSTATE\tPAUSED_SINCE\tMAX_WORKERS\tUPDATED")
	for _, q := range out.Queues {
		state, since, maxWorkers, updated := "active", "-", "as configured", "-"
		if q.Paused {
			state, since = "PAUSED", outTime(*q.PausedAt)
		}
		if q.MaxWorkers > 0 {
			maxWorkers = strconv.Itoa(q.MaxWorkers)
		}
		if q.UpdatedAt != nil {
			updated = outTime(*q.UpdatedAt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", outCell(q.Queue, 40), state, since, maxWorkers, updated)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if out.Capped {
		_, err := fmt.Fprintf(w, "only the first %d queues with jobs were read; more may have jobs\n", queueListLimit)
		return err
	}
	return nil
}
