package cli

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
)

// TestScheduledJobsAreShownScheduled: jobs enqueued to run later are
// PENDING but not ready, and every view says so — `stats` splits PENDING
// into ready and SCHEDULED, `jobs` gains an AVAILABLE column, `jobs show`
// says when. (They used to be counted and listed as if ready: "200
// PENDING, oldest available —".)
func TestScheduledJobsAreShownScheduled(t *testing.T) {
	forEachDialect(t, func(t *testing.T, l *lockstepCLI) {
		ready := l.enqueue("mail", "--queue", "mail")
		var later []int64
		for range 3 {
			later = append(later, l.enqueue("mail", "--queue", "mail", "--in", "1h"))
		}

		var st statsOut
		l.json(&st, "stats")
		require.Len(t, st.Queues, 1)
		q := st.Queues[0]
		require.Equal(t, countOut{N: 4}, q.Counts["PENDING"])
		require.Equal(t, countOut{N: 1}, q.Ready)
		require.Equal(t, &countOut{N: 3}, q.Scheduled)
		out := l.OK("stats")
		require.Regexp(t, `(?m)^QUEUE\s+WAITING\s+PENDING\s+BLOCKED\s+RUNNING\s+DONE\s+FAILED\s+CANCELLED\s+SCHEDULED\s+OLDEST_PENDING\s`, out)
		require.Regexp(t, `(?m)^mail\s+0\s+4\s+0\s+0\s+0\s+0\s+0\s+3\s`, out)

		out = l.OK("jobs")
		require.Regexp(t, `(?m)^ID\s+RUN\s+QUEUE\s+KIND\s+STATUS\s+AVAILABLE\s+ATTEMPTS\s+CREATED\s+LAST_ERROR$`, out)
		require.Regexp(t, fmt.Sprintf(`(?m)^%d\s+-\s+mail\s+mail\s+PENDING\s+now\s`, ready), out)
		for _, id := range later {
			require.Regexp(t, fmt.Sprintf(`(?m)^%d\s+-\s+mail\s+mail\s+PENDING\s+in (59m\d+s|1h0m0s)\s`, id), out)
		}
		require.Regexp(t, `(?m)^available:\s+\S+ \(scheduled: in (59m\d+s|1h0m0s)\)$`, l.OK("jobs", "show", itoa(later[0])))
		require.NotContains(t, l.OK("jobs", "show", itoa(ready)), "scheduled")

		// The views: a job whose attempt failed is retrying (and, in its
		// backoff, scheduled too); --view lists each.
		ctx := context.Background()
		ex := openCLIDatabase(t, l).Executor()
		failing := l.enqueue("mail", "--queue", "retry")
		jobs, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "retry", Max: 1})
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		ok, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: failing, Attempt: 1, Status: lockstep.StatusPending, RetryAfter: time.Hour, Error: "smtp: 421 try later"})
		require.NoError(t, err)
		require.True(t, ok)
		var page jobPageOut
		l.json(&page, "jobs", "--view", "retrying")
		require.Equal(t, []int64{failing}, ids(page.Jobs))
		l.json(&page, "jobs", "--view", "SCHEDULED")
		require.Equal(t, []int64{failing, later[2], later[1], later[0]}, ids(page.Jobs))
		out = l.OK("jobs", "--view", "retrying")
		require.Regexp(t, fmt.Sprintf(`(?m)^%d\s+-\s+retry\s+mail\s+PENDING\s+in (59m\d+s|1h0m0s)\s+1/25\s+\S+\s+smtp: 421 try later$`, failing), out)
		require.Equal(t, `lockstep: unknown --view "later": use scheduled, retrying or failed (also dead)`, l.Fail("jobs", "--view", "later"))

		// The failed view, also called dead: the jobs that failed for good
		// (FAILED, no attempt left), not the one still retrying.
		dead := l.enqueue("mail", "--queue", "retry", "--max-attempts", "1")
		jobs, err = ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "retry", Max: 1})
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		require.Equal(t, dead, jobs[0].ID)
		ok, err = ex.JobFinish(ctx, &driver.JobFinishParams{ID: dead, Attempt: 1, Status: lockstep.StatusFailed, Error: "smtp: 550 no such user"})
		require.NoError(t, err)
		require.True(t, ok)
		for _, v := range []string{"failed", "dead", "DEAD"} {
			l.json(&page, "jobs", "--view", v)
			require.Equal(t, []int64{dead}, ids(page.Jobs), "--view %s", v)
		}
		l.json(&page, "jobs", "--view", "dead", "--status", "failed")
		require.Equal(t, []int64{dead}, ids(page.Jobs))
		require.Regexp(t, fmt.Sprintf(`(?m)^%d\s+-\s+retry\s+mail\s+FAILED\s+1/1\s+\S+\s+smtp: 550 no such user$`, dead), l.OK("jobs", "--view", "failed"))
		require.Equal(t, "lockstep: --view dead is the FAILED jobs (no attempt left); it cannot be combined with --status PENDING", l.Fail("jobs", "--view", "dead", "--status", "pending"))

		// A page with no scheduled job keeps its narrow table.
		require.Regexp(t, `(?m)^ID\s+RUN\s+QUEUE\s+KIND\s+STATUS\s+ATTEMPTS\s+CREATED\s+LAST_ERROR$`, l.OK("jobs", "--before", itoa(later[0])))
	})
}
