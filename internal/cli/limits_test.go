//go:build unix

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
)

// blockJobs claims the queue's jobs through the executor, as a worker's
// producer would, until want of them are BLOCKED: the first claim that
// meets a key creates its row (and leaves its jobs PENDING), the next one
// blocks the jobs its limit has no room for. It returns the jobs claimed.
func blockJobs(t *testing.T, drv driver.Driver, queue string, want int) []*lockstep.JobRow {
	t.Helper()
	ctx := context.Background()
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	require.NoError(t, err)
	var claimed []*lockstep.JobRow
	blocked := 0
	for range 10 {
		if blocked >= want {
			break
		}
		s, err := queueSettingsOf(ctx, client, queue)
		require.NoError(t, err)
		res, err := drv.Executor().JobClaimLimited(ctx, &driver.JobClaimParams{Queue: queue, Max: 10, Limits: s.Limits, Grace: time.Minute})
		require.NoError(t, err)
		claimed = append(claimed, res.Jobs...)
		blocked += res.Blocked
	}
	require.Equal(t, want, blocked, "jobs blocked")
	return claimed
}

// TestCLIQueueLimits: `queues limit` sets a queue's limits, changing only
// the flags given and refusing bad input in the user's words (changing
// nothing); `queues` shows each queue's limits, its RUNNING jobs against
// its concurrency limit and its BLOCKED jobs; `jobs --status BLOCKED`
// lists the held-back jobs with their keys, `jobs show` says why one is
// held back, and a BLOCKED job can be cancelled.
func TestCLIQueueLimits(t *testing.T) {
	forEachDialect(t, func(t *testing.T, l *lockstepCLI) {
		client, drv := cliClient(t, l)
		limits := func() lockstep.QueueLimits {
			t.Helper()
			return settingsOf(t, client, "mail").Limits
		}

		// The queue is set ahead of its first job.
		require.Equal(t, "queue mail has no limits\n", l.OK("queues", "limit", "mail", "--clear", "--create"))

		// Bad input: one line in the user's words, and nothing changes.
		for args, want := range map[string]string{
			"queues limit mail":                              "lockstep: nothing to set: give --concurrency, --key-concurrency, --sequence, --rate with --per, --rate-by-key, or --clear ('lockstep queues' shows the current limits)",
			"queues limit mail --concurrency -1":             "lockstep: --concurrency must be 0 (no limit) or a positive number up to 2147483647, got -1",
			"queues limit mail --key-concurrency 2147483648": "lockstep: --key-concurrency must be 0 (no limit) or a positive number up to 2147483647, got 2147483648",
			"queues limit mail --rate -5 --per 1s":           "lockstep: --rate must be 0 (no limit) or a positive number up to 2147483647, got -5",
			"queues limit mail --sequence sometimes":         `lockstep: unknown --sequence "sometimes": use none, release (a FAILED job lets the next job of its key run) or hold (it holds them until it is retried)`,
			"queues limit mail --rate 100":                   "lockstep: --rate 100 needs --per, the period its starts are counted over (e.g. --rate 100 --per 1s)",
			"queues limit mail --per 1s":                     "lockstep: --per needs --rate: the queue has no rate limit to count over it",
			"queues limit mail --rate-by-key":                "lockstep: --rate-by-key needs --rate and --per: the queue has no rate limit to count per key",
			"queues limit mail --rate 10 --per 0s":           "lockstep: --per must be between 1ms and 168h0m0s, got 0s",
			"queues limit mail --rate 10 --per 200h":         "lockstep: --per must be between 1ms and 168h0m0s, got 200h0m0s",
			"queues limit mail --rate 0 --per 1s":            "lockstep: --rate 0 removes the rate limit, so --per has nothing to count over: leave one of them out",
			"queues limit mail --clear --concurrency 3":      "lockstep: --clear removes every limit and cannot be combined with --concurrency: give the limits you want without it",
			"queues limit --concurrency 3":                   "lockstep: lockstep queues limit needs NAME, got no arguments",
		} {
			require.Equal(t, want, l.Fail(strings.Fields(args)...), args)
		}
		require.Equal(t, `lockstep: --concurrency wants a whole number, got "x"`, l.Fail("queues", "limit", "mail", "--concurrency", "x"))
		require.Equal(t, "lockstep: the queue name must not be empty", l.Fail("queues", "limit", " ", "--concurrency", "1"))
		require.Contains(t, l.Fail("queues", "limit", strings.Repeat("q", 200), "--concurrency", "1", "--create"), "queue name is 200 bytes long")
		require.Equal(t, lockstep.QueueLimits{}, limits())

		// Each flag changes its limit only.
		require.Equal(t, "queue mail has limits: concurrency 5\n", l.OK("queues", "limit", "mail", "--concurrency", "5"))
		require.Equal(t, lockstep.QueueLimits{Concurrency: 5}, limits())
		require.Equal(t, "queue mail has limits: concurrency 5, per key 1, sequence hold\n",
			l.OK("queues", "limit", "mail", "--key-concurrency", "1", "--sequence", "HOLD"))
		var q queueOut
		l.json(&q, "queues", "limit", "mail", "--rate", "100", "--per", "1s", "--rate-by-key")
		require.Equal(t, limitsOut{Concurrency: 5, KeyConcurrency: 1, Sequence: "hold", Rate: 100, RatePeriodSeconds: 1, RateByKey: true}, q.Limits)
		require.Nil(t, q.Running, "a change counts nothing")
		require.Equal(t, lockstep.QueueLimits{Concurrency: 5, KeyConcurrency: 1, Sequence: lockstep.SequenceHold,
			Rate: 100, RatePeriod: time.Second, RateByKey: true}, limits())
		require.Equal(t, "queue mail has limits: concurrency 5, per key 1, sequence hold, rate 200/1s per key\n",
			l.OK("queues", "limit", "mail", "--rate", "200"), "the period is kept")
		require.Equal(t, "queue mail has limits: concurrency 5, per key 1, sequence hold, rate 200/1m0s\n",
			l.OK("queues", "limit", "mail", "--per", "1m", "--rate-by-key=false"))
		require.Equal(t, "queue mail has limits: concurrency 5, per key 1, sequence hold\n",
			l.OK("queues", "limit", "mail", "--rate", "0"), "--rate 0 takes its period along")
		require.Equal(t, lockstep.QueueLimits{Concurrency: 5, KeyConcurrency: 1, Sequence: lockstep.SequenceHold}, limits())
		require.Equal(t, "queue mail has limits: concurrency 5, per key 1\n", l.OK("queues", "limit", "mail", "--sequence", "none"))
		require.Equal(t, "lockstep: --per needs --rate: the queue has no rate limit to count over it", l.Fail("queues", "limit", "mail", "--per", "1s"))
		require.Equal(t, lockstep.QueueLimits{Concurrency: 5, KeyConcurrency: 1}, limits(), "a refused change changes nothing")

		// Jobs with keys: two of acct-1's three are held back by its limit.
		require.Equal(t, "lockstep: --limit-key must not be empty; omit it for a job without a key", l.Fail("enqueue", "send", "--queue", "mail", "--limit-key="))
		require.Contains(t, l.Fail("enqueue", "send", "--queue", "mail", "--limit-key", strings.Repeat("k", 256)), "limit key is 256 bytes; the limit is 255")
		var a1 []int64
		for range 3 {
			a1 = append(a1, l.enqueue("send", "--queue", "mail", "--limit-key", "acct-1"))
		}
		a2 := l.enqueue("send", "--queue", "mail", "--limit-key", "acct-2")
		require.Equal(t, "acct-1", l.job(a1[0]).LimitKey)
		claimed := blockJobs(t, drv, "mail", 2)
		require.Equal(t, []int64{a1[0], a2}, jobIDs(claimed))

		out := l.OK("queues")
		require.Regexp(t, `(?m)^QUEUE\s+STATE\s+PAUSED_SINCE\s+MAX_WORKERS\s+LIMITS\s+RUNNING\s+BLOCKED\s+UPDATED$`, out)
		require.Regexp(t, `(?m)^mail\s+active\s+-\s+as configured\s+concurrency 5, per key 1\s+2/5\s+2\s+\S+Z$`, out)
		var list queuesListOut
		l.json(&list, "queues", "list", "--count-limit", "1")
		require.Len(t, list.Queues, 1)
		require.Equal(t, &countOut{N: 1, Capped: true}, list.Queues[0].Blocked)
		require.Equal(t, 1, list.CountLimit)
		require.Equal(t, "lockstep: --count-limit must be at least 1, got 0", l.Fail("queues", "--count-limit", "0"))

		// The BLOCKED jobs, with their key.
		require.Equal(t, `lockstep: unknown job status "held": use WAITING, PENDING, BLOCKED, RUNNING, DONE, FAILED or CANCELLED`,
			l.Fail("jobs", "--status", "held"))
		var page jobPageOut
		l.json(&page, "jobs", "--status", "blocked")
		require.Equal(t, []int64{a1[2], a1[1]}, ids(page.Jobs))
		require.Equal(t, "acct-1", page.Jobs[0].LimitKey)
		out = l.OK("jobs", "--queue", "mail", "--status", "BLOCKED")
		require.Regexp(t, `(?m)^ID\s+RUN\s+QUEUE\s+KIND\s+STATUS\s+LIMIT_KEY\s+ATTEMPTS\s+CREATED\s+LAST_ERROR$`, out)
		require.Regexp(t, fmt.Sprintf(`(?m)^%d\s+-\s+mail\s+send\s+BLOCKED\s+acct-1\s+0/25\s+\S+\s+-$`, a1[1]), out)
		require.Regexp(t, fmt.Sprintf(`(?m)^%d\s+-\s+mail\s+send\s+RUNNING\s+acct-2\s+1/25\s`, a2), l.OK("jobs", "--queue", "mail"))

		out = l.OK("jobs", "show", itoa(a1[1]))
		require.Regexp(t, `(?m)^status:\s+BLOCKED$`, out)
		require.Regexp(t, `(?m)^limit key:\s+acct-1$`, out)
		require.Regexp(t, `(?m)^blocked by limit:\s+key acct-1 at its limit \(at most 1 RUNNING per key\)$`, out)
		require.Regexp(t, `(?m)^limit key:\s+acct-2$`, l.OK("jobs", "show", itoa(a2)))
		require.NotContains(t, l.OK("jobs", "show", itoa(a2)), "blocked by limit")

		// A sequence says so.
		l.OK("queues", "limit", "mail", "--sequence", "hold")
		require.Regexp(t, `(?m)^blocked by limit:\s+key acct-1 at its limit \(a sequence: one job at a time in insert order, and a FAILED job holds the rest until it is retried\)$`,
			l.OK("jobs", "show", itoa(a1[1])))

		// A BLOCKED job can be cancelled.
		require.Equal(t, fmt.Sprintf("job %d is CANCELLED\n", a1[2]), l.OK("cancel", "job", itoa(a1[2])))
		require.Equal(t, lockstep.StatusCancelled, l.job(a1[2]).Status)
		require.Regexp(t, `(?m)^mail\s+active\s+-\s+as configured\s+concurrency 5, per key 1, sequence hold\s+2/5\s+1\s+\S+Z$`, l.OK("queues"))

		// A run spec's jobs carry their keys too.
		r := l.RunStdin(`{"name": "keyed", "jobs": [{"key": "a", "kind": "send", "queue": "mail", "limit_key": "acct-9"}]}`,
			"runs", "create", "--spec", "-", "--json")
		require.Equal(t, 0, r.Code, r.Stderr)
		var created createRunOut
		require.NoError(t, json.Unmarshal([]byte(r.Stdout), &created), r.Stdout)
		require.Equal(t, "acct-9", l.job(created.Jobs[0].ID).LimitKey)

		// --clear removes them all.
		require.Equal(t, "queue mail has no limits\n", l.OK("queues", "limit", "mail", "--clear"))
		require.Equal(t, lockstep.QueueLimits{}, limits())
		// Removing the limits sweeps at once: the job they held back is
		// PENDING again, and nothing is shown as blocked.
		require.Equal(t, lockstep.StatusPending, l.job(a1[1]).Status)
		require.Regexp(t, `(?m)^mail\s+active\s+-\s+as configured\s+none\s+2\s+0\s+\S+Z$`, l.OK("queues"))
	})
}

func jobIDs(jobs []*lockstep.JobRow) []int64 {
	out := make([]int64, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}

// TestCLIBlockedStatusInHelp: every listing of statuses in the help names
// BLOCKED.
func TestCLIBlockedStatusInHelp(t *testing.T) {
	for _, args := range [][]string{{"jobs", "--help"}, {"jobs", "list", "--help"}, {"cancel", "job", "--help"}, {"cancel", "run", "--help"}} {
		code, out, errOut := runCLI(t, args...)
		require.Equal(t, 0, code, errOut)
		require.Regexp(t, regexp.MustCompile(`WAITING, PENDING, BLOCKED`), out, args)
	}
	code, out, _ := runCLI(t, "queues", "limit", "--help")
	require.Equal(t, 0, code)
	for _, flag := range []string{"--concurrency", "--key-concurrency", "--sequence", "--rate", "--per", "--rate-by-key", "--clear"} {
		require.Contains(t, out, flag)
	}
}
