package dashboard_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"

	"github.com/lockstep-queue/lockstep/dashboard"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// TestDashboardJobMetadataAndOutput: on each database the job page shows
// a job's metadata, its output and its unique key, pretty-printed and
// HTML-escaped; a job without them shows neither section.
func TestDashboardJobMetadataAndOutput(t *testing.T) {
	for _, db := range databases() {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newFixture(t, db.open(t))
			b := newBrowser(t, newDashboard(t, dashboard.Config{Client: f.client}))

			res, err := f.client.Insert(ctx, okArgs{N: 7}, &lockstep.InsertOpts{
				Queue:    "manual",
				Metadata: map[string]string{"by": "<script>alert(1)</script>"},
				Unique:   &lockstep.UniqueOpts{Key: "report-7"},
			})
			require.NoError(t, err)
			require.False(t, res.Duplicate)
			// Finished by hand, as a worker that recorded output would.
			ex := f.drv.Executor()
			claimed, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "manual", Max: 1})
			require.NoError(t, err)
			require.Len(t, claimed, 1)
			ok, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: res.ID, Attempt: 1, Status: rowtype.StatusDone,
				Output: []byte(`{"html":"<b>bold</b> & co","rows":3}`)})
			require.NoError(t, err)
			require.True(t, ok)
			j, err := f.client.Job(ctx, res.ID)
			require.NoError(t, err)
			require.NotEmpty(t, j.UniqueKey)

			body := b.page(fmt.Sprintf("/jobs/%d", res.ID))
			require.Contains(t, body, fmt.Sprintf(`data-testid="job-unique-key">%s<`, j.UniqueKey))
			require.Contains(t, body, "<h2>Metadata</h2>")
			require.Contains(t, body, `data-testid="job-metadata">{
  &#34;by&#34;: &#34;&lt;script&gt;alert(1)&lt;/script&gt;&#34;
}<`)
			require.Contains(t, body, "<h2>Output</h2>")
			require.Regexp(t, `data-testid="job-output">\{\n  &#34;html&#34;: &#34;&lt;b&gt;bold&lt;/b&gt; &amp; co&#34;,\n  &#34;rows&#34;: 3\n\}<`, body)
			require.NotContains(t, body, "<script>alert(1)")
			require.NotContains(t, body, "<b>bold</b>")

			body = b.page(fmt.Sprintf("/jobs/%d", f.doneA))
			for _, absent := range []string{"job-metadata", "job-output", "job-unique-key"} {
				require.NotContains(t, body, absent)
			}
		})
	}
}
