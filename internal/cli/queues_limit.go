package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockstep-queue/lockstep"
)

// maxLimit bounds a count limit: the databases store each in a 32-bit
// integer column, and a larger number would fail there, in the
// database's words, rather than here in the user's.
const maxLimit = math.MaxInt32

// limitOptions are the flags of `queues limit`. Only the flags given
// change the queue's limits; the others keep their current values.
type limitOptions struct {
	concurrency, keyConcurrency, rate int
	sequence                          string
	per                               time.Duration
	rateByKey, clear                  bool

	// given records which flags were set on the command line; seq is
	// --sequence parsed.
	given map[string]bool
	seq   lockstep.SequencePolicy
}

// limitFlags are the flags that set a limit, in the order errors name them.
var limitFlags = []string{"concurrency", "key-concurrency", "sequence", "rate", "per", "rate-by-key"}

func (o *limitOptions) flags(f *pflag.FlagSet) {
	f.IntVar(&o.concurrency, "concurrency", 0, "at most N of the queue's jobs RUNNING at once, across every process (0: no limit)")
	f.IntVar(&o.keyConcurrency, "key-concurrency", 0, "at most N jobs of one limit key RUNNING at once (0: no limit)")
	f.StringVar(&o.sequence, "sequence", "", "run each limit key's jobs one at a time in insert order: none, release (a FAILED job lets the next run) or hold (it holds them until retried)")
	f.IntVar(&o.rate, "rate", 0, "at most N job starts per --per, across every process (0: no rate limit)")
	f.DurationVar(&o.per, "per", 0, "the period --rate counts starts over, e.g. 1s or 1m (1ms to 168h)")
	f.BoolVar(&o.rateByKey, "rate-by-key", false, "count --rate per limit key instead of for the whole queue")
	f.BoolVar(&o.clear, "clear", false, "remove every limit of the queue")
}

// parseSequence parses a sequence policy by the name the CLI shows.
func parseSequence(s string) (lockstep.SequencePolicy, error) {
	for _, p := range []lockstep.SequencePolicy{lockstep.SequenceNone, lockstep.SequenceRelease, lockstep.SequenceHold} {
		if strings.EqualFold(strings.TrimSpace(s), p.String()) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown --sequence %q: use none, release (a FAILED job lets the next job of its key run) or hold (it holds them until it is retried)", s)
}

// check validates the flags before the database is opened: each value
// on its own, and the combinations no current limits can make right.
func (o *limitOptions) check(f *pflag.FlagSet) error {
	o.given = map[string]bool{}
	var given []string
	for _, name := range limitFlags {
		if f.Changed(name) {
			o.given[name] = true
			given = append(given, "--"+name)
		}
	}
	switch {
	case o.clear && len(given) > 0:
		return fmt.Errorf("--clear removes every limit and cannot be combined with %s: give the limits you want without it", strings.Join(given, ", "))
	case !o.clear && len(given) == 0:
		return errors.New("nothing to set: give --concurrency, --key-concurrency, --sequence, --rate with --per, --rate-by-key, or --clear ('lockstep queues' shows the current limits)")
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"concurrency", o.concurrency}, {"key-concurrency", o.keyConcurrency}, {"rate", o.rate}} {
		if o.given[v.name] && (v.n < 0 || v.n > maxLimit) {
			return fmt.Errorf("--%s must be 0 (no limit) or a positive number up to %d, got %d", v.name, maxLimit, v.n)
		}
	}
	if o.given["sequence"] {
		seq, err := parseSequence(o.sequence)
		if err != nil {
			return err
		}
		o.seq = seq
	}
	if o.given["per"] && (o.per < lockstep.MinRatePeriod || o.per > lockstep.MaxRatePeriod) {
		return fmt.Errorf("--per must be between %s and %s, got %s", lockstep.MinRatePeriod, lockstep.MaxRatePeriod, o.per)
	}
	if o.given["rate"] && o.rate == 0 {
		// --rate 0 removes the rate limit, its period and per-key count.
		switch {
		case o.given["per"]:
			return errors.New("--rate 0 removes the rate limit, so --per has nothing to count over: leave one of them out")
		case o.given["rate-by-key"] && o.rateByKey:
			return errors.New("--rate 0 removes the rate limit, so --rate-by-key has nothing to count: leave one of them out")
		}
	}
	return nil
}

// apply is the queue's current limits with the flags given applied.
func (o *limitOptions) apply(cur lockstep.QueueLimits) (lockstep.QueueLimits, error) {
	if o.clear {
		return lockstep.QueueLimits{}, nil
	}
	l := cur
	if o.given["concurrency"] {
		l.Concurrency = o.concurrency
	}
	if o.given["key-concurrency"] {
		l.KeyConcurrency = o.keyConcurrency
	}
	if o.given["sequence"] {
		l.Sequence = o.seq
	}
	if o.given["rate"] {
		l.Rate = o.rate
		if o.rate == 0 {
			l.RatePeriod, l.RateByKey = 0, false
		}
	}
	if o.given["per"] {
		l.RatePeriod = o.per
	}
	if o.given["rate-by-key"] {
		l.RateByKey = o.rateByKey
	}
	switch {
	case l.Rate > 0 && l.RatePeriod == 0:
		return l, fmt.Errorf("--rate %d needs --per, the period its starts are counted over (e.g. --rate %d --per 1s)", l.Rate, l.Rate)
	case l.Rate == 0 && o.given["per"]:
		return l, errors.New("--per needs --rate: the queue has no rate limit to count over it")
	case l.Rate == 0 && l.RateByKey:
		return l, errors.New("--rate-by-key needs --rate and --per: the queue has no rate limit to count per key")
	}
	return l, nil
}

// queueLimitCmd is `queues limit NAME [flags]`.
func (c *app) queueLimitCmd() *cobra.Command {
	var o limitOptions
	cmd := c.queueSettingCmd("limit NAME", "Limit a queue's jobs across every process: concurrency, per key, sequences, rate",
		// The flags are checked before the database is opened.
		func(cmd *cobra.Command, args []string) error {
			if err := cobra.ExactArgs(1)(cmd, args); err != nil {
				return err
			}
			return o.check(cmd.Flags())
		}, func(ctx context.Context, client *lockstep.Client, args []string) (string, error) {
			cur, err := queueSettingsOf(ctx, client, args[0])
			if err != nil {
				return "", err
			}
			l, err := o.apply(cur.Limits)
			if err != nil {
				return "", err
			}
			if err := client.SetQueueLimits(ctx, args[0], l); err != nil {
				return "", err
			}
			if !l.Any() {
				return "has no limits", nil
			}
			return "has limits: " + limitsText(toLimitsOut(l)), nil
		})
	cmd.Long = `Limit how the queue's jobs run, across every process that serves it: the
claim enforces the limits, counting the queue's RUNNING jobs in the
database. Only the flags given change; the others keep their current
values ('lockstep queues' shows them). 0 removes a limit; --clear removes
them all.

  --concurrency N        at most N of the queue's jobs RUNNING at once
  --key-concurrency N    at most N RUNNING per limit key (enqueue --limit-key)
  --sequence hold        each key's jobs one at a time, in insert order; a
                         FAILED job holds the rest until it is retried
                         (release: lets the next one run; none: no sequences)
  --rate N --per D       at most N job starts in any period D; with
                         --rate-by-key, N per limit key

A job a claim finds over its key's limit, or behind earlier jobs of its
sequence, becomes BLOCKED ('lockstep jobs --status BLOCKED'); it is made
PENDING again when its key has room. Jobs over a rate limit stay PENDING
and are made available when a start frees up. Running jobs are not
stopped: a lower limit takes effect as they finish.`
	cmd.Example = `  lockstep queues limit mail --concurrency 5
  lockstep queues limit sync --key-concurrency 1 --sequence hold
  lockstep queues limit api --rate 100 --per 1s
  lockstep queues limit api --rate 0
  lockstep queues limit mail --clear`
	o.flags(cmd.Flags())
	return cmd
}
