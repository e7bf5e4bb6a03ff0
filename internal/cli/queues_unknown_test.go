package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/clitest"
)

// TestCLIQueuesRefuseUnknownQueue: pause, resume, max-workers and limit
// refuse a queue with no jobs and no settings (a typo would otherwise
// become a queue that stays listed), suggesting the known queue it may
// have meant; --create sets it anyway, and then it is known.
func TestCLIQueuesRefuseUnknownQueue(t *testing.T) {
	for _, d := range schemaDialects() {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			l := &lockstepCLI{&clitest.CLI{T: t, Bin: clitest.Binary(t), DSN: d.dsn(t)}}
			l.OK("migrate", "up")
			require.Equal(t, `lockstep: queue "mail" has no jobs and no settings (no queue has any yet). To set it before its first job anyway, add --create`,
				l.Fail("queues", "pause", "mail"))
			l.enqueue("send", "--queue", "mail")
			l.enqueue("send", "--queue", "billing")

			for _, args := range [][]string{
				{"queues", "pause", "mial"},
				{"queues", "resume", "mial"},
				{"queues", "max-workers", "mial", "3"},
				{"queues", "limit", "mial", "--concurrency", "1"},
				{"queues", "limit", "mial", "--clear"},
			} {
				require.Equal(t, `lockstep: queue "mial" has no jobs and no settings; did you mean "mail"? To set it before its first job anyway, add --create`,
					l.Fail(args...), "%v", args)
			}
			require.Equal(t, `lockstep: queue "nosuchqueue" has no jobs and no settings (known queues: "billing", "mail"). To set it before its first job anyway, add --create`,
				l.Fail("queues", "pause", "nosuchqueue"))
			var list queuesListOut
			l.json(&list, "queues")
			require.Len(t, list.Queues, 2, "no refused command created a queue")

			// Known by its jobs, or by its settings once created.
			require.Equal(t, "queue mail is paused\n", l.OK("queues", "pause", "mail"))
			require.Equal(t, "queue later is paused\n", l.OK("queues", "pause", "later", "--create"))
			require.Equal(t, "queue later is resumed\n", l.OK("queues", "resume", "later"))
			require.Equal(t, `lockstep: queue "latr" has no jobs and no settings; did you mean "later"? To set it before its first job anyway, add --create`,
				l.Fail("queues", "max-workers", "latr", "2"))
			l.json(&list, "queues")
			require.Len(t, list.Queues, 3)
		})
	}
}
