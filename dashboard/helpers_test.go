package dashboard_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/dashboard"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/drivertest"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// The job kinds of the fixture.
type okArgs struct {
	N    int    `json:"n"`
	Note string `json:"note"`
}

func (okArgs) Kind() string { return "ok" }

type failArgs struct {
	Reason string `json:"reason"`
}

func (failArgs) Kind() string { return "fail" }

// testDatabase is a database the page tests run on.
type testDatabase struct {
	name string
	open func(t *testing.T) driver.Driver
}

// databases are the databases every page test runs on.
func databases() []testDatabase {
	return []testDatabase{
		{"SQLite", openSQLite},
		{"MariaDB", openMariaDB},
		{"OracleMySQL", openOracleMySQL},
		{"PostgreSQL", openPostgres},
	}
}

func openSQLite(t *testing.T) driver.Driver {
	drv, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "dash.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	drivertest.Migrate(t, drv)
	return drv
}

func openMariaDB(t *testing.T) driver.Driver {
	drv, err := mysql.Open(context.Background(), testdb.MySQL(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	drivertest.Migrate(t, drv)
	return drv
}

func openOracleMySQL(t *testing.T) driver.Driver {
	drv, err := mysql.Open(context.Background(), testdb.OracleMySQL(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	drivertest.Migrate(t, drv)
	return drv
}

func openPostgres(t *testing.T) driver.Driver {
	drv, err := postgres.Open(context.Background(), testdb.Postgres(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	drivertest.Migrate(t, drv)
	return drv
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// fixture is what the handler tests look at:
//   - run alpha, queue "work": two jobs DONE, one FAILED (permanently,
//     with its error in the history);
//   - run beta, queue "idle": three PENDING jobs (no worker serves idle);
//   - a PENDING job in no run, queue "idle".
type fixture struct {
	drv            driver.Driver
	client         *lockstep.Client
	alpha, beta    int64
	alphaJobs      []int64
	betaJobs       []int64
	failed, lonely int64
	doneA, doneB   int64
	failureMessage string
	argsNoteInJobs string
}

func newFixture(t *testing.T, drv driver.Driver) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{drv: drv, failureMessage: "the printer is on fire <b>&", argsNoteInJobs: "pretty <printed> args"}
	finished := make(chan lockstep.Event, 16)
	ws := lockstep.NewWorkers()
	lockstep.AddWorker(ws, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[okArgs]) error { return nil }))
	lockstep.AddWorker(ws, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[failArgs]) error {
		return &lockstep.PermanentError{Err: errors.New(job.Args.Reason)}
	}))
	worker, err := lockstep.NewClient(drv, lockstep.Config{
		Workers: ws, Logger: quietLogger(),
		Queues:       map[string]lockstep.QueueConfig{"work": {MaxWorkers: 2}},
		PollInterval: 50 * time.Millisecond, MinPollInterval: 5 * time.Millisecond,
		OnEvent: func(e lockstep.Event) {
			if e.Kind == lockstep.EventJobFinished {
				finished <- e
			}
		},
	})
	require.NoError(t, err)
	require.NoError(t, worker.Start(ctx))
	work := &lockstep.InsertOpts{Queue: "work", MaxAttempts: 3}
	run, idsRes, err := worker.InsertRun(ctx, "alpha", nil,
		lockstep.InsertManyParams{Args: okArgs{N: 1, Note: f.argsNoteInJobs}, Opts: work},
		lockstep.InsertManyParams{Args: okArgs{N: 2}, Opts: work},
		lockstep.InsertManyParams{Args: failArgs{Reason: f.failureMessage}, Opts: work},
	)
	require.NoError(t, err)
	ids := insertedIDs(idsRes)
	f.alpha, f.alphaJobs, f.doneA, f.doneB, f.failed = run.ID, ids, ids[0], ids[1], ids[2]
	timeout := time.After(30 * time.Second)
	for range 3 {
		select {
		case <-finished:
		case <-timeout:
			t.Fatal("the fixture's jobs did not finish")
		}
	}
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, worker.Stop(stopCtx))

	// A client without workers from here on: nothing is claimed any more.
	f.client, err = lockstep.NewClient(drv, lockstep.Config{Logger: quietLogger()})
	require.NoError(t, err)
	idle := &lockstep.InsertOpts{Queue: "idle"}
	run, betaRes, err := f.client.InsertRun(ctx, "beta <script>alert(1)</script>", nil,
		lockstep.InsertManyParams{Args: okArgs{N: 10}, Opts: idle},
		lockstep.InsertManyParams{Args: okArgs{N: 11}, Opts: idle},
		lockstep.InsertManyParams{Args: okArgs{N: 12}, Opts: idle},
	)
	require.NoError(t, err)
	f.beta, f.betaJobs = run.ID, insertedIDs(betaRes)
	lonelyRes, err := f.client.Insert(ctx, okArgs{N: 99}, idle)
	require.NoError(t, err)
	f.lonely = lonelyRes.ID

	for id, want := range map[int64]lockstep.JobStatus{f.doneA: lockstep.StatusDone, f.doneB: lockstep.StatusDone, f.failed: lockstep.StatusFailed} {
		j, err := f.client.Job(ctx, id)
		require.NoError(t, err)
		require.Equal(t, want, j.Status, "job %d", id)
	}
	return f
}

// browser is an HTTP client with a cookie jar that does not follow
// redirects, so tests see the 303s.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowser(t *testing.T, h http.Handler) *browser {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &browser{t: t, base: srv.URL, c: &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       60 * time.Second,
	}}
}

type response struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(method, path string, form url.Values, header map[string]string) response {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	require.NoError(b.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.c.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return response{status: resp.StatusCode, header: resp.Header, body: string(raw)}
}

func (b *browser) get(path string) response { return b.do(http.MethodGet, path, nil, nil) }

// page GETs path and requires a 200.
func (b *browser) page(path string) string {
	b.t.Helper()
	r := b.get(path)
	require.Equal(b.t, http.StatusOK, r.status, "GET %s: %s", path, r.body)
	return r.body
}

var reCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf loads a page and returns the token its forms carry.
func (b *browser) csrf(path string) string {
	b.t.Helper()
	body := b.page(path)
	m := reCSRF.FindStringSubmatch(body)
	require.NotNil(b.t, m, "no CSRF field on %s", path)
	return m[1]
}

func newDashboard(t testing.TB, cfg dashboard.Config) *dashboard.Server {
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	s, err := dashboard.New(cfg)
	require.NoError(t, err)
	return s
}

// insertedIDs are the ids of inserted jobs, in input order.
func insertedIDs(res []lockstep.InsertResult) []int64 {
	ids := make([]int64, len(res))
	for i, r := range res {
		ids[i] = r.ID
	}
	return ids
}
