package lockorder_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// TestLimitedFixture: the claims of the sequenced and the rated queue do
// on loadLimited's rows what its comment says, so that the writer pairs
// meet the statements they are said to meet (the sequences' heads, the
// queue's rate window) on the rows they are said to meet them.
func TestLimitedFixture(t *testing.T) {
	for _, s := range servers(t) {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			ex := s.drv.Executor()
			ids := func(c *driver.LimitedClaim) []int64 {
				var out []int64
				for _, j := range c.Jobs {
					out = append(out, j.ID)
				}
				return out
			}
			claim := func(queue string, lim rowtype.QueueLimits) *driver.LimitedClaim {
				c, err := ex.JobClaimLimited(ctx, &driver.JobClaimParams{Queue: queue, Max: 4, Limits: lim, Grace: 10 * time.Minute})
				require.NoError(t, err)
				return c
			}
			statuses := func(want map[int64]rowtype.JobStatus) {
				t.Helper()
				for id, st := range want {
					require.Equal(t, st, status(t, s, id), "job %d", id)
				}
			}

			loadAlmostDone(t, s)
			c := claim("sequenced", sequencedLimits)
			require.Equal(t, []int64{9106, 9108}, ids(c))
			require.Equal(t, 4, c.Blocked)
			statuses(map[int64]rowtype.JobStatus{
				9101: rowtype.StatusRunning, 9102: rowtype.StatusBlocked, 9103: rowtype.StatusBlocked, 9104: rowtype.StatusFailed,
				9105: rowtype.StatusBlocked, 9107: rowtype.StatusBlocked, 9110: rowtype.StatusPending, 9111: rowtype.StatusBlocked,
			})
			limitsHold(t, s)
			// 9101 done: the release finds 9102 BLOCKED and s1's head.
			_, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: seqRunning, Attempt: 1, Status: rowtype.StatusDone, Queue: "sequenced", LimitKey: "s1"})
			require.NoError(t, err)
			statuses(map[int64]rowtype.JobStatus{9102: rowtype.StatusPending, 9103: rowtype.StatusBlocked})
			limitsHold(t, s)

			loadAlmostDone(t, s)
			// Before any claim, 9103 is not s1's head (9102 is): a DONE's
			// release leaves it BLOCKED.
			_, err = ex.JobFinish(ctx, &driver.JobFinishParams{ID: seqRunning, Attempt: 1, Status: rowtype.StatusDone, Queue: "sequenced", LimitKey: "s1"})
			require.NoError(t, err)
			statuses(map[int64]rowtype.JobStatus{9102: rowtype.StatusPending, 9103: rowtype.StatusBlocked})
			// A FAILED head holds its sequence: 9105 stays behind 9104.
			c = claim("sequenced", sequencedLimits)
			require.Equal(t, []int64{9102, 9106, 9108}, ids(c))
			statuses(map[int64]rowtype.JobStatus{9105: rowtype.StatusBlocked})
			limitsHold(t, s)

			loadAlmostDone(t, s)
			c = claim("rated", ratedLimits)
			require.Equal(t, []int64{9204, 9205}, ids(c))
			require.Equal(t, 2, c.Blocked)
			statuses(map[int64]rowtype.JobStatus{
				9202: rowtype.StatusBlocked, 9203: rowtype.StatusBlocked, 9206: rowtype.StatusPending,
				9208: rowtype.StatusPending, 9209: rowtype.StatusBlocked,
			})
			limitsHold(t, s)
			var starts, runningN int
			require.NoError(t, s.drv.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM lockstep_limit_starts WHERE queue = 'rated' AND limit_key = ''").Scan(&starts))
			require.Equal(t, ratedRate, starts, "the window's one start and the claim's two; the older ones pruned")
			// The window is full: the next claim takes nothing and says when
			// to come back.
			c = claim("rated", ratedLimits)
			require.Empty(t, c.Jobs)
			require.False(t, c.RetryAt.IsZero())
			require.NoError(t, s.drv.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM lockstep_jobs WHERE queue = 'rated' AND status = 'RUNNING'").Scan(&runningN))
			require.Equal(t, 3, runningN, "9201, 9204 and 9205")
		})
	}
}
