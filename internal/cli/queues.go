package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
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
// as each process configured it. Running and Blocked are its RUNNING and
// BLOCKED jobs as `queues list` counted them (Running against
// Limits.Concurrency); absent where they were not counted.
type queueOut struct {
	Queue      string     `json:"queue"`
	Paused     bool       `json:"paused"`
	PausedAt   *time.Time `json:"paused_at"`
	MaxWorkers int        `json:"max_workers"`
	Limits     limitsOut  `json:"limits"`
	Running    *countOut  `json:"running,omitempty"`
	Blocked    *countOut  `json:"blocked,omitempty"`
	UpdatedAt  *time.Time `json:"updated_at"`
}

// limitsOut is a queue's limits in JSON; 0 (and sequence "none") is no
// limit. Rate jobs start per RatePeriodSeconds, per limit key when
// RateByKey.
type limitsOut struct {
	Concurrency       int     `json:"concurrency"`
	KeyConcurrency    int     `json:"key_concurrency"`
	Sequence          string  `json:"sequence"`
	Rate              int     `json:"rate"`
	RatePeriodSeconds float64 `json:"rate_period_seconds"`
	RateByKey         bool    `json:"rate_by_key"`
}

func toLimitsOut(l lockstep.QueueLimits) limitsOut {
	return limitsOut{
		Concurrency: l.Concurrency, KeyConcurrency: l.KeyConcurrency, Sequence: l.Sequence.String(),
		Rate: l.Rate, RatePeriodSeconds: l.RatePeriod.Seconds(), RateByKey: l.RateByKey,
	}
}

func toQueueOut(s lockstep.QueueSettings) queueOut {
	return queueOut{
		Queue: s.Queue, Paused: !s.Paused.IsZero(), PausedAt: outTimePtr(s.Paused),
		MaxWorkers: s.MaxWorkers, Limits: toLimitsOut(s.Limits), UpdatedAt: outTimePtr(s.UpdatedAt),
	}
}

// limitsText is a queue's limits in a few words, as the queues table and
// `queues limit` show them: "none", or e.g. "concurrency 5, per key 1,
// sequence hold, rate 100/1s per key".
func limitsText(l limitsOut) string {
	var parts []string
	if l.Concurrency > 0 {
		parts = append(parts, fmt.Sprintf("concurrency %d", l.Concurrency))
	}
	if l.KeyConcurrency > 0 {
		parts = append(parts, fmt.Sprintf("per key %d", l.KeyConcurrency))
	}
	if l.Sequence != "" && l.Sequence != lockstep.SequenceNone.String() {
		parts = append(parts, "sequence "+l.Sequence)
	}
	if l.Rate > 0 {
		r := fmt.Sprintf("rate %d/%s", l.Rate, l.ratePeriod())
		if l.RateByKey {
			r += " per key"
		}
		parts = append(parts, r)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// queuesListOut is `queues list --json`. Capped means more queues have
// jobs than were read: some without settings may be missing, and the
// queues with settings but not read have no counts. CountLimit bounds
// each count (a capped count is a lower bound).
type queuesListOut struct {
	Queues     []queueOut `json:"queues"`
	Capped     bool       `json:"capped"`
	CountLimit int        `json:"count_limit"`
}

func newQueuesCmd(c *app) *cobra.Command {
	var asJSON bool
	var countLimit int
	cmd := &cobra.Command{
		Use:   "queues",
		Short: "List queues with their settings, pause and resume them, cap their workers",
		Long: `List the queues (those with jobs or with settings) and their shared
settings, or change them. Settings live in the database: every process that
serves a queue follows them within a second or so.

  queues pause NAME            stop claiming the queue's jobs (running ones finish)
  queues resume NAME           claim them again
  queues max-workers NAME N    run at most N of its jobs at once per process (0: as configured)
  queues limit NAME --concurrency N --key-concurrency N --sequence hold --rate N --per 1s ...
                               limit its jobs across every process (see queues limit --help)
  queues remove NAME           remove its settings once it has no live jobs (undo a typo)

The listing shows each queue's limits, its RUNNING jobs (against its
concurrency limit, as RUNNING/LIMIT) and its BLOCKED jobs: the ones its
limits hold back (their key at its limit, or earlier jobs of their sequence
not ended yet). 'lockstep jobs --queue NAME --status BLOCKED' lists them,
with their keys. Each count reads at most --count-limit index entries.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return c.queuesList(cmd.Context(), asJSON, countLimit) },
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	cmd.Flags().IntVar(&countLimit, "count-limit", 100000, "count at most this many RUNNING and BLOCKED jobs of each queue (more show ≥)")

	var listJSON bool
	var listCountLimit int
	list := &cobra.Command{
		Use:   "list",
		Short: "List queues, their settings and limits (the default)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.queuesList(cmd.Context(), listJSON, listCountLimit)
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print JSON instead of a table")
	list.Flags().IntVar(&listCountLimit, "count-limit", 100000, "count at most this many RUNNING and BLOCKED jobs of each queue (more show ≥)")

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
	cmd.AddCommand(list, pause, resume, maxWorkers, c.queueLimitCmd(), c.queueRemoveCmd())
	return cmd
}

// queueRemoveCmd is `queues remove NAME`: the way back from a mistyped
// --create, or from a queue that is gone. It removes the queue's settings
// row, and refuses while the queue has live jobs (their counts read first;
// a job enqueued after them runs as its processes configure the queue).
func (c *app) queueRemoveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a queue's settings (pause, max workers, limits) once it has no live jobs",
		Long: `Remove a queue's shared settings — its pause, max workers and limits — so
that it is no longer listed once it has no jobs: the way back from a
mistyped name given with --create. Refused while the queue has WAITING,
PENDING, BLOCKED or RUNNING jobs; its finished jobs are left to retention.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			queue := args[0]
			ctx := cmd.Context()
			return c.withQueueClient(ctx, func(client *lockstep.Client) error {
				st, err := client.QueueStats(ctx, queue, &lockstep.StatsParams{CountLimit: 1000})
				if err != nil {
					return err
				}
				var live []string
				for _, s := range liveStatuses() {
					if n := st.Counts[s]; n.N > 0 {
						live = append(live, outCount(n.N, n.Capped)+" "+string(s))
					}
				}
				if len(live) > 0 {
					return fmt.Errorf("queue %s still has live jobs (%s): cancel them or let them finish first", outSafe(queue, false), strings.Join(live, ", "))
				}
				removed, err := client.RemoveQueueSettings(ctx, queue)
				if err != nil {
					return err
				}
				if !removed {
					return fmt.Errorf("queue %s has no settings to remove", outSafe(queue, false))
				}
				_, err = fmt.Fprintf(c.Stdout, "queue %s: settings removed\n", outSafe(queue, false))
				return err
			})
		},
	}
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
// the settings as they are now. A queue the database does not know (no
// jobs, no settings) is refused unless --create is given: the change
// would create its settings row, and a mistyped name would become a queue
// that stays listed.
func (c *app) queueSettingCmd(use, short string, args cobra.PositionalArgs,
	change func(context.Context, *lockstep.Client, []string) (string, error)) *cobra.Command {
	var asJSON, create bool
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
				if !create {
					if err := knownQueue(ctx, client, queue); err != nil {
						return err
					}
				}
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
	cmd.Flags().BoolVar(&create, "create", false, "set it even if the queue has no jobs and no settings yet (ahead of its first job)")
	return cmd
}

// knownQueue refuses a queue that has neither jobs nor settings, naming
// the known queues it may have meant. It reads the settings rows, then
// the queues with jobs (one bounded read of the queue index); with more
// queues than that read returns, it asks about this one.
func knownQueue(ctx context.Context, client *lockstep.Client, queue string) error {
	settings, err := client.ListQueueSettings(ctx)
	if err != nil {
		return err
	}
	var known []string
	for _, s := range settings {
		if s.Queue == queue {
			return nil
		}
		known = append(known, s.Queue)
	}
	withJobs, err := client.Queues(ctx, queueListLimit)
	if err != nil {
		return err
	}
	if slices.Contains(withJobs, queue) {
		return nil
	}
	if len(withJobs) >= queueListLimit {
		st, err := client.QueueStats(ctx, queue, &lockstep.StatsParams{CountLimit: 1})
		if err != nil {
			return err
		}
		for _, n := range st.Counts {
			if n.N > 0 {
				return nil
			}
		}
	}
	known = append(known, withJobs...)
	slices.Sort(known)
	known = slices.Compact(known)
	msg := fmt.Sprintf("queue %q has no jobs and no settings", queue)
	switch near := nearQueues(queue, known); {
	case len(near) > 0:
		msg += "; did you mean " + orList(quoteAll(near)) + "?"
	case len(known) == 0:
		msg += " (no queue has any yet)."
	case len(known) <= 10:
		msg += " (known queues: " + strings.Join(quoteAll(known), ", ") + ")."
	default:
		msg += " ('lockstep queues' lists the known ones)."
	}
	return errors.New(msg + " To set it before its first job anyway, add --create")
}

// nearQueues are the known queues that name might be a typo of: within
// two edits, the same but for case, or one starting with the other.
func nearQueues(name string, known []string) []string {
	var near []string
	lower := strings.ToLower(name)
	for _, k := range known {
		kl := strings.ToLower(k)
		if editDistance(lower, kl) <= 2 || (len(lower) > 2 && strings.HasPrefix(kl, lower)) || (len(kl) > 2 && strings.HasPrefix(lower, kl)) {
			near = append(near, k)
		}
	}
	return near
}

// queueSettingsOf is one queue's settings; zero (no limits, not paused)
// when it has none.
func queueSettingsOf(ctx context.Context, client *lockstep.Client, queue string) (lockstep.QueueSettings, error) {
	all, err := client.ListQueueSettings(ctx)
	if err != nil {
		return lockstep.QueueSettings{}, err
	}
	for _, s := range all {
		if s.Queue == queue {
			return s, nil
		}
	}
	return lockstep.QueueSettings{Queue: queue}, nil
}

func (c *app) queuesList(ctx context.Context, asJSON bool, countLimit int) error {
	if countLimit < 1 {
		return fmt.Errorf("--count-limit must be at least 1, got %d", countLimit)
	}
	return c.withQueueClient(ctx, func(client *lockstep.Client) error {
		settings, err := client.ListQueueSettings(ctx)
		if err != nil {
			return err
		}
		// A queue with jobs but no settings runs as configured; a queue
		// with settings but no jobs (paused ahead of its first job) is
		// listed too. The stats of the queues with jobs give their
		// RUNNING and BLOCKED counts.
		stats, err := client.Stats(ctx, &lockstep.StatsParams{CountLimit: countLimit, MaxQueues: queueListLimit})
		if err != nil {
			return err
		}
		capped := len(stats) >= queueListLimit
		out := queuesListOut{Queues: make([]queueOut, 0, len(settings)+len(stats)), Capped: capped, CountLimit: countLimit}
		byQueue := map[string]int{}
		for _, s := range settings {
			byQueue[s.Queue] = len(out.Queues)
			q := toQueueOut(s)
			if !capped {
				// Not among the queues with jobs, which were all read: it
				// has none. Its counts are filled in below if it has.
				q.Running, q.Blocked = &countOut{}, &countOut{}
			}
			out.Queues = append(out.Queues, q)
		}
		for _, st := range stats {
			i, ok := byQueue[st.Queue]
			if !ok {
				i = len(out.Queues)
				out.Queues = append(out.Queues, queueOut{Queue: st.Queue, Limits: toLimitsOut(lockstep.QueueLimits{})})
			}
			running, blocked := st.Counts[lockstep.StatusRunning], st.Counts[lockstep.StatusBlocked]
			out.Queues[i].Running = &countOut{N: running.N, Capped: running.Capped}
			out.Queues[i].Blocked = &countOut{N: blocked.N, Capped: blocked.Capped}
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
	fmt.Fprintln(tw, "QUEUE\tSTATE\tPAUSED_SINCE\tMAX_WORKERS\tLIMITS\tRUNNING\tBLOCKED\tUPDATED")
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
		// RUNNING is shown against the queue's concurrency limit, as
		// RUNNING/LIMIT; "-" is a count not read (beyond the queues read).
		running, blocked := "-", "-"
		if q.Running != nil {
			running = outCount(q.Running.N, q.Running.Capped)
			if q.Limits.Concurrency > 0 {
				running += "/" + strconv.Itoa(q.Limits.Concurrency)
			}
		}
		if q.Blocked != nil {
			blocked = outCount(q.Blocked.N, q.Blocked.Capped)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", outCell(q.Queue, 40), state, since, maxWorkers,
			limitsText(q.Limits), running, blocked, updated)
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

// ratePeriod is the rate's period as a duration.
func (l limitsOut) ratePeriod() time.Duration {
	return time.Duration(math.Round(l.RatePeriodSeconds * float64(time.Second)))
}
