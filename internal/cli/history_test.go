package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCLIHistory: jobs cancelled through the CLI are counted in the
// history rollup (the CLI's client flushes at once), by queue and kind;
// the table has a row per step with its columns, and --json the same.
func TestCLIHistory(t *testing.T) {
	forEachDialect(t, func(t *testing.T, l *lockstepCLI) {
		a := l.enqueue("send", "--queue", "mail")
		b := l.enqueue("charge", "--queue", "pay")
		l.OK("cancel", "job", itoa(a))
		l.OK("cancel", "job", itoa(b))

		sum := func(args ...string) (cancelled int64, buckets int) {
			var h historyOut
			l.json(&h, append([]string{"history"}, args...)...)
			for _, b := range h.Buckets {
				cancelled += b.Cancelled
			}
			return cancelled, len(h.Buckets)
		}
		n, buckets := sum()
		require.Equal(t, int64(2), n)
		require.Contains(t, []int{60, 61}, buckets, "a minute a row over the last hour")
		n, _ = sum("--queue", "mail")
		require.Equal(t, int64(1), n)
		n, _ = sum("--kind", "charge", "--since", "24h")
		require.Equal(t, int64(1), n)
		n, buckets = sum("--kind", "other", "--since", "6h")
		require.Zero(t, n)
		require.Contains(t, []int{72, 73}, buckets, "5 minutes a row over 6 hours")

		out := l.OK("history", "--since", "10m")
		require.Regexp(t, `(?m)^TIME\(UTC\)\s+DONE\s+FAILED\s+RETRIED\s+CANCELLED\s+FAILURE%\s+AVG_RUN$`, out)
		require.Regexp(t, `(?m)^\d{4}-\d\d-\d\d \d\d:\d\d\s+0\s+0\s+0\s+[12]\s+-\s+-$`, out, "both cancels, in one minute or two")
		require.Contains(t, l.Fail("history", "--step", "90s"), "--step must be a whole number of minutes")
	})
}
