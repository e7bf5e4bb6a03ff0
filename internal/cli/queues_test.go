//go:build unix

package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// cliClient is a client on the database the CLI runs on, for the test's
// own reads.
func cliClient(t *testing.T, l *lockstepCLI) (*lockstep.Client, driver.Driver) {
	t.Helper()
	drv := openCLIDatabase(t, l)
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	require.NoError(t, err)
	return client, drv
}

// settingsOf reads one queue's settings through the client; zero when it
// has none.
func settingsOf(t *testing.T, client *lockstep.Client, queue string) lockstep.QueueSettings {
	t.Helper()
	all, err := client.ListQueueSettings(context.Background())
	require.NoError(t, err)
	for _, s := range all {
		if s.Queue == queue {
			return s
		}
	}
	return lockstep.QueueSettings{}
}

// TestCLIQueues: pause, resume and max-workers change the settings every
// process reads (ListQueueSettings); list shows queues with jobs and
// queues with settings; bad input changes nothing.
func TestCLIQueues(t *testing.T) {
	forEachDialect(t, func(t *testing.T, l *lockstepCLI) {
		client, _ := cliClient(t, l)
		require.Equal(t, "no queue has jobs or settings\n", l.OK("queues"))
		l.enqueue("send", "--queue", "mail")

		var list queuesListOut
		l.json(&list, "queues", "list")
		require.Equal(t, queuesListOut{Queues: []queueOut{{Queue: "mail", Limits: limitsOut{Sequence: "none"}, Running: &countOut{}, Blocked: &countOut{}}},
			CountLimit: 100000}, list)

		require.Equal(t, "queue mail is paused\n", l.OK("queues", "pause", "mail"))
		paused := settingsOf(t, client, "mail")
		require.False(t, paused.Paused.IsZero())
		require.Zero(t, paused.MaxWorkers)

		var q queueOut
		l.json(&q, "queues", "max-workers", "mail", "3")
		require.Equal(t, "mail", q.Queue)
		require.True(t, q.Paused)
		require.Equal(t, 3, q.MaxWorkers)
		require.Equal(t, 3, settingsOf(t, client, "mail").MaxWorkers)
		require.True(t, settingsOf(t, client, "mail").Paused.Equal(paused.Paused), "the pause keeps its time")

		// A queue without jobs may be paused ahead of them, when asked to.
		require.Equal(t, "queue later is paused\n", l.OK("queues", "pause", "later", "--create"))
		out := l.OK("queues")
		require.Regexp(t, `(?m)^QUEUE\s+STATE\s+PAUSED_SINCE\s+MAX_WORKERS\s+LIMITS\s+RUNNING\s+BLOCKED\s+UPDATED$`, out)
		require.Regexp(t, `(?m)^later\s+PAUSED\s+\S+Z\s+as configured\s+none\s+0\s+0\s+\S+Z$`, out)
		require.Regexp(t, `(?m)^mail\s+PAUSED\s+\S+Z\s+3\s+none\s+0\s+0\s+\S+Z$`, out)

		// Bad input: one line, and nothing changes.
		for args, want := range map[string]string{
			"queues max-workers mail x":     `lockstep: invalid max workers "x": want 0 (clear the cap) to 10000`,
			"queues max-workers mail 10001": `lockstep: invalid max workers "10001": want 0 (clear the cap) to 10000`,
			"queues max-workers mail":       `lockstep: lockstep queues max-workers needs NAME N, got 1 argument ("mail")`,
			"queues pause":                  "lockstep: lockstep queues pause needs NAME, got no arguments",
		} {
			require.Equal(t, want, l.Fail(strings.Fields(args)...), args)
		}
		require.Equal(t, "lockstep: the queue name must not be empty", l.Fail("queues", "resume", " "))
		require.Contains(t, l.Fail("queues", "pause", strings.Repeat("q", 200), "--create"), "queue name is 200 bytes long")
		require.Equal(t, 3, settingsOf(t, client, "mail").MaxWorkers)

		require.Equal(t, "queue mail is resumed\n", l.OK("queues", "resume", "mail"))
		require.Equal(t, "queue mail runs as many workers as each process configures\n", l.OK("queues", "max-workers", "mail", "0"))
		s := settingsOf(t, client, "mail")
		require.True(t, s.Paused.IsZero())
		require.Zero(t, s.MaxWorkers)
		require.Equal(t, "queue later runs at most 10000 worker(s) per process\n", l.OK("queues", "max-workers", "later", "10000"))

		l.json(&list, "queues")
		require.Len(t, list.Queues, 2)
		require.False(t, list.Queues[1].Paused)
		require.Equal(t, "mail", list.Queues[1].Queue)
		require.Equal(t, 10000, list.Queues[0].MaxWorkers)
		require.NotNil(t, list.Queues[0].PausedAt)
	})
}

// TestCLIJobMetadataOutputUnique: enqueue attaches metadata and makes a
// job unique (a duplicate prints the holder's id, says so on stderr, and
// adds nothing); jobs show prints the metadata, the output a worker
// recorded and the unique key, as text and as JSON.
func TestCLIJobMetadataOutputUnique(t *testing.T) {
	forEachDialect(t, func(t *testing.T, l *lockstepCLI) {
		ctx := context.Background()
		_, drv := cliClient(t, l)
		id := l.enqueue("report", "--metadata", `{"by": "cron", "trace": "<t1>"}`, "--unique-key", "daily", `{"day": 1}`)

		// The same key, other args: a duplicate.
		r := l.Run("enqueue", "report", "--unique-key", "daily", `{"day": 2}`)
		require.Equal(t, 0, r.Code, r.Stderr)
		require.Equal(t, fmt.Sprintf("%d\n", id), r.Stdout)
		require.Equal(t, fmt.Sprintf("duplicate: job %d holds the same unique key; nothing was enqueued\n", id), r.Stderr)
		var dup enqueueOut
		l.json(&dup, "enqueue", "report", "--unique-key", "daily")
		require.True(t, dup.Duplicate)
		require.Equal(t, id, dup.ID)
		var fresh enqueueOut
		l.json(&fresh, "enqueue", "report", "--unique", `{"day": 1}`)
		require.False(t, fresh.Duplicate, "--unique compares the args, not the other job's key")
		require.NotEqual(t, id, fresh.ID)

		// A duplicate in a new run leaves that run empty, and says so.
		inRun := l.enqueue("export", "--unique", "--new-run", "first", `{"n": 1}`)
		r = l.Run("enqueue", "export", "--unique", "--new-run", "second", `{"n": 1}`)
		require.Equal(t, 0, r.Code, r.Stderr)
		require.Equal(t, fmt.Sprintf("%d\n", inRun), r.Stdout)
		require.Regexp(t, `^duplicate: job \d+ holds the same unique key; nothing was enqueued \(run \d+ was created empty\)\n$`, r.Stderr)

		for args, want := range map[string]string{
			"enqueue report --metadata {bad":                  "lockstep: --metadata is not valid JSON: invalid character 'b' looking for beginning of object key string (at byte 2)",
			"enqueue report --metadata=":                      "lockstep: --metadata is not valid JSON: unexpected end of JSON input (at byte 0)",
			"enqueue report --unique-key=":                    "lockstep: --unique-key must not be empty; use --unique to compare the args",
			"enqueue report --unique-period=-1h":              "lockstep: --unique-period must not be negative, got -1h0m0s",
			"enqueue report --unique=false --unique-by-queue": "lockstep: --unique=false contradicts the other --unique-* flags",
		} {
			require.Equal(t, want, l.Fail(strings.Fields(args)...), args)
		}
		require.Len(t, l.allJobs(), 3, "only the first, fresh and in-run jobs were added")

		// A worker finishes the job, recording output.
		claimed, err := drv.Executor().JobClaim(ctx, &driver.JobClaimParams{Queue: lockstep.DefaultQueue, Max: 10})
		require.NoError(t, err)
		require.NotEmpty(t, claimed)
		for _, j := range claimed {
			var output []byte
			if j.ID == id {
				output = []byte(`{"rows": 3, "file": "out.csv"}`)
			}
			ok, err := drv.Executor().JobFinish(ctx, &driver.JobFinishParams{ID: j.ID, Attempt: j.Attempts, Status: rowtype.StatusDone, Output: output})
			require.NoError(t, err)
			require.True(t, ok)
		}

		out := l.OK("jobs", "show", itoa(id))
		require.Regexp(t, `(?m)^unique key:\s+[0-9a-f]{64}$`, out)
		for _, want := range []string{"args:\n  {\n    \"day\": 1\n  }\n", "metadata:\n  {\n", `    "by": "cron",`, "output:\n  {\n", `    "rows": 3`, `    "file": "out.csv"`} {
			require.Contains(t, out, want)
		}
		j := l.job(id)
		require.Regexp(t, `^[0-9a-f]{64}$`, j.UniqueKey)
		require.JSONEq(t, `{"by": "cron", "trace": "<t1>"}`, string(j.Metadata))
		require.JSONEq(t, `{"rows": 3, "file": "out.csv"}`, string(j.Output))

		// A job with none of them shows none.
		out = l.OK("jobs", "show", itoa(inRun))
		require.Contains(t, out, "unique key:")
		require.NotContains(t, out, "metadata:")
		require.NotContains(t, out, "output:")
		plain := l.enqueue("plain")
		out = l.OK("jobs", "show", itoa(plain))
		require.NotContains(t, out, "unique key:")
		raw := l.OK("jobs", "show", itoa(plain), "--json")
		for _, key := range []string{`"unique_key"`, `"metadata"`, `"output"`} {
			require.NotContains(t, raw, key)
		}
	})
}
