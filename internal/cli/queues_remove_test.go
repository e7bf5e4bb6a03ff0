package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCLIQueuesRemove: a queue created by a mistyped name can be removed
// again, and so can a queue whose jobs are gone; a queue with live jobs
// cannot (its jobs would lose their pause and limits mid-run).
func TestCLIQueuesRemove(t *testing.T) {
	forEachDialect(t, func(t *testing.T, l *lockstepCLI) {
		require.Equal(t, "queue mial is paused\n", l.OK("queues", "pause", "mial", "--create"))
		require.Regexp(t, `(?m)^mial\s+PAUSED\s`, l.OK("queues"))
		require.Equal(t, "queue mial: settings removed\n", l.OK("queues", "remove", "mial"))
		require.NotContains(t, l.OK("queues"), "mial")
		require.Equal(t, "lockstep: queue mial has no settings to remove", l.Fail("queues", "remove", "mial"))

		// Live jobs keep their queue's settings.
		id := l.enqueue("send", "--queue", "mail")
		l.OK("queues", "limit", "mail", "--concurrency", "2")
		require.Equal(t, "lockstep: queue mail still has live jobs (1 PENDING): cancel them or let them finish first", l.Fail("queues", "remove", "mail"))
		require.Regexp(t, `(?m)^mail\s+active\s+-\s+as configured\s+concurrency 2\s`, l.OK("queues"))
		l.OK("cancel", "job", itoa(id))
		require.Equal(t, "queue mail: settings removed\n", l.OK("queues", "remove", "mail"))
		require.Regexp(t, `(?m)^mail\s+active\s+-\s+as configured\s+none\s`, l.OK("queues"), "listed for its jobs, without settings")
	})
}
