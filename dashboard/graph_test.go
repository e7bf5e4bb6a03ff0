package dashboard_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/dashboard"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// workflowFixture is a run in every status a workflow shows, moved there
// by hand (claims and finishes through the executor, a cancel through the
// client) so that nothing runs behind the test's back:
//
//	a(DONE) → b(RUNNING) → d(CANCELLED), e(WAITING)
//	a       → c(CANCELLED) → d
//	f(PENDING)
//	callback on success (CANCELLED: c was cancelled)
type workflowFixture struct {
	run                  int64
	a, b, c, d, e, f, cb int64
	client               *lockstep.Client
}

func newWorkflowFixture(t *testing.T, drv driver.Driver) *workflowFixture {
	t.Helper()
	ctx := context.Background()
	client, err := lockstep.NewClient(drv, lockstep.Config{Logger: quietLogger()})
	require.NoError(t, err)
	job := func(key, queue string, deps ...string) lockstep.InsertManyParams {
		return lockstep.InsertManyParams{Args: okArgs{Note: key}, Opts: &lockstep.InsertOpts{Queue: queue}, Key: key, DependsOn: deps}
	}
	run, res, err := client.InsertRun(ctx, "etl <nightly>", &lockstep.RunOpts{
		Callbacks: []lockstep.RunCallback{{On: lockstep.CallbackOnSuccess, Args: failArgs{Reason: "report"}, Opts: &lockstep.InsertOpts{Queue: "cb"}}},
	}, job("a", "g"), job("b", "g", "a"), job("c", "h", "a"), job("d", "g", "b", "c"), job("e", "g", "b"), job("f", "h"))
	require.NoError(t, err)
	w := &workflowFixture{run: run.ID, client: client,
		a: res[0].ID, b: res[1].ID, c: res[2].ID, d: res[3].ID, e: res[4].ID, f: res[5].ID}

	ex := drv.Executor()
	claim := func(want int64) *lockstep.JobRow {
		got, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "g", Max: 1})
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, want, got[0].ID)
		return got[0]
	}
	a := claim(w.a)
	ok, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: a.ID, Attempt: a.Attempts, Status: rowtype.StatusDone, RunID: a.RunID, Dependents: a.Dependents})
	require.NoError(t, err)
	require.True(t, ok)
	claim(w.b)
	ok, err = client.CancelJob(ctx, w.c)
	require.NoError(t, err)
	require.True(t, ok)

	g, err := client.RunGraph(ctx, run.ID, 0)
	require.NoError(t, err)
	got := map[int64]lockstep.JobStatus{}
	for _, j := range g.Jobs {
		got[j.ID] = j.Status
		if j.Callback != "" {
			w.cb = j.ID
		}
	}
	require.Equal(t, map[int64]lockstep.JobStatus{
		w.a: lockstep.StatusDone, w.b: lockstep.StatusRunning, w.c: lockstep.StatusCancelled, w.d: lockstep.StatusCancelled,
		w.e: lockstep.StatusWaiting, w.f: lockstep.StatusPending, w.cb: lockstep.StatusCancelled,
	}, got)
	return w
}

var reEdge = regexp.MustCompile(`data-testid="edge-(\d+)-(\d+)"`)

// TestDashboardRunGraph: on each database the run page of a workflow
// draws its graph — one linked node per job, coloured by status, with a
// title; an edge per dependency; the callback as its own node fed by the
// jobs nothing else depends on — and a run without dependencies draws
// none. WAITING is among the filters and the queue table's columns.
func TestDashboardRunGraph(t *testing.T) {
	for _, db := range databases() {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			w := newWorkflowFixture(t, db.open(t))
			b := newBrowser(t, newDashboard(t, dashboard.Config{Client: w.client}))

			body := b.page(fmt.Sprintf("/runs/%d", w.run))
			require.Contains(t, body, `data-testid="run-graph"`)
			require.Contains(t, body, `<desc id="run-graph-desc">Workflow graph: 6 jobs in 3 columns by dependency depth, 1 callbacks, 8 edges; each job links to its page</desc>`)
			for id, class := range map[int64]string{
				w.a: "st-done", w.b: "st-running", w.c: "st-cancelled", w.d: "st-cancelled",
				w.e: "st-waiting", w.f: "st-pending", w.cb: "st-cancelled callback",
			} {
				require.Regexp(t, fmt.Sprintf(`<a href="/jobs/%d" data-testid="node-%d" aria-label="[^"]+">\n<g class="graph-node %s">\n<title>`, id, id, class), body, "node %d", id)
			}
			require.Contains(t, body, fmt.Sprintf(`<title>Job %d, ok: WAITING (waiting on 1)</title>`, w.e))
			require.Contains(t, body, fmt.Sprintf(`<title>Callback job %d, fail, on success: CANCELLED</title>`, w.cb))
			require.Contains(t, body, `⤷ success: fail</text>`)

			var edges []string
			for _, m := range reEdge.FindAllStringSubmatch(body, -1) {
				edges = append(edges, m[1]+"→"+m[2])
			}
			e := func(from, to int64) string { return fmt.Sprintf("%d→%d", from, to) }
			require.ElementsMatch(t, []string{
				e(w.a, w.b), e(w.a, w.c), e(w.b, w.d), e(w.c, w.d), e(w.b, w.e),
				e(w.d, w.cb), e(w.e, w.cb), e(w.f, w.cb), // the sinks feed the callback
			}, edges)
			require.NotContains(t, body, "<script>", "the run's name is escaped")

			// Every status is a filter, WAITING included, and filters.
			require.Contains(t, body, fmt.Sprintf(`<a href="/runs/%d?status=WAITING">WAITING</a>`, w.run))
			waiting := b.page(fmt.Sprintf("/runs/%d?status=WAITING", w.run))
			require.Contains(t, waiting, fmt.Sprintf(`data-testid="job-%d"`, w.e))
			require.NotContains(t, waiting, fmt.Sprintf(`data-testid="job-%d"`, w.f))
			require.Contains(t, b.page("/queues/table"), `<th class="num">WAITING</th>`)
			require.Contains(t, b.page("/queues/table"), `data-testid="queue-g-waiting">1<`)

			// A run of independent jobs has no graph.
			plain, _, err := w.client.InsertRun(ctx, "plain", nil, lockstep.InsertManyParams{Args: okArgs{N: 1}})
			require.NoError(t, err)
			body = b.page(fmt.Sprintf("/runs/%d", plain.ID))
			require.NotContains(t, body, "run-graph")
			require.False(t, strings.Contains(body, "<h2>Workflow</h2>"))
		})
	}
}

// TestDashboardRunGraphTooLarge: a workflow beyond the page's limit is
// not drawn, and the page says why.
func TestDashboardRunGraphTooLarge(t *testing.T) {
	drv := openSQLite(t)
	client, err := lockstep.NewClient(drv, lockstep.Config{Logger: quietLogger()})
	require.NoError(t, err)
	jobs := make([]lockstep.InsertManyParams, 501)
	jobs[0] = lockstep.InsertManyParams{Args: okArgs{N: 0}, Key: "root"}
	for i := 1; i < len(jobs); i++ {
		jobs[i] = lockstep.InsertManyParams{Args: okArgs{N: i}, DependsOn: []string{"root"}}
	}
	run, _, err := client.InsertRun(context.Background(), "wide", nil, jobs...)
	require.NoError(t, err)
	b := newBrowser(t, newDashboard(t, dashboard.Config{Client: client}))
	body := b.page(fmt.Sprintf("/runs/%d", run.ID))
	require.Contains(t, body, `data-testid="run-graph-too-large">This run has more than 500 jobs: its graph is not drawn.`)
	require.NotContains(t, body, `data-testid="run-graph"`)
}
