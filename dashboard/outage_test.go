package dashboard_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/dashboard"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/drivertest"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/internal/faultproxy"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// outagePassword is in the DSN the dashboard's client uses; no page may
// show it.
const outagePassword = "Outage-Secret-8d1f"

// outageDB is one server kind, started for the test alone, since the test
// stops it.
type outageDB struct {
	name, env string
	start     func(context.Context, testdb.ServerOptions) (*testdb.Server, error)
	// open returns a driver on a fresh database of srv, through a DSN
	// that carries outagePassword.
	open func(t *testing.T, ctx context.Context, srv *testdb.Server, dsn string) driver.Driver
}

func outageDBs() []outageDB {
	return []outageDB{
		{"MariaDB", testdb.EnvMySQLDSN, testdb.StartMySQLServer, openMySQLWithPassword},
		{"OracleMySQL", testdb.EnvOracleMySQLDSN, testdb.StartOracleMySQLServer, openMySQLWithPassword},
		{"PostgreSQL", testdb.EnvPostgresDSN, testdb.StartPostgresServer, openPostgresWithPassword},
	}
}

// openMySQLWithPassword connects as a user with a password and the
// rights the dashboard needs: PROCESS for the lock monitor (MariaDB's lock
// tables, SHOW ENGINE INNODB STATUS on both), SELECT on performance_schema
// for MySQL's lock tables.
func openMySQLWithPassword(t *testing.T, ctx context.Context, srv *testdb.Server, dsn string) driver.Driver {
	admin, err := sql.Open("mysql", srv.AdminDSN())
	require.NoError(t, err)
	defer admin.Close()
	cfg, err := gomysql.ParseDSN(dsn)
	require.NoError(t, err)
	for _, stmt := range []string{
		fmt.Sprintf("CREATE USER 'dash'@'127.0.0.1' IDENTIFIED BY '%s'", outagePassword),
		fmt.Sprintf("GRANT ALL ON `%s`.* TO 'dash'@'127.0.0.1'", cfg.DBName),
		"GRANT PROCESS ON *.* TO 'dash'@'127.0.0.1'",
		"GRANT SELECT ON performance_schema.* TO 'dash'@'127.0.0.1'",
	} {
		_, err := admin.ExecContext(ctx, stmt)
		require.NoError(t, err)
	}
	cfg.User, cfg.Passwd = "dash", outagePassword
	drv, err := mysql.Open(ctx, cfg.FormatDSN())
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	return drv
}

// openPostgresWithPassword puts a password in the URL (the test server
// trusts local connections, so it is not checked, but it is in the
// driver's configuration).
func openPostgresWithPassword(t *testing.T, ctx context.Context, _ *testdb.Server, dsn string) driver.Driver {
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	u.User = url.UserPassword(u.User.Username(), outagePassword)
	drv, err := postgres.Open(ctx, u.String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	return drv
}

// outageFixture is a queue with a run of two jobs and a job on its own.
type outageFixture struct {
	run        int64
	jobs       []int64
	lonely     int64
	victim     int64    // the job the stalled or refused cancel names
	paths      []string // every page that reads the database
	partials   []string // what htmx reloads
	csrf       string
	cancelPath string
}

func newOutageFixture(t *testing.T, ctx context.Context, client *lockstep.Client, b *browser) *outageFixture {
	idle := &lockstep.InsertOpts{Queue: "idle"}
	run, jobsRes, err := client.InsertRun(ctx, "outage-run", nil,
		lockstep.InsertManyParams{Args: okArgs{N: 1}, Opts: idle},
		lockstep.InsertManyParams{Args: okArgs{N: 2}, Opts: idle})
	require.NoError(t, err)
	jobs := insertedIDs(jobsRes)
	lonelyRes, err := client.Insert(ctx, okArgs{N: 3}, idle)
	require.NoError(t, err)
	lonely := lonelyRes.ID
	// The cancel sent while the database is unreachable names a job of its
	// own, which requireData does not read: a request stalled in the
	// network may still reach the server once the network is back (the
	// proxy delivers what it held), and commit after its caller gave up.
	victimRes, err := client.Insert(ctx, okArgs{N: 4}, &lockstep.InsertOpts{Queue: "victim"})
	require.NoError(t, err)
	f := &outageFixture{run: run.ID, jobs: jobs, lonely: lonely, victim: victimRes.ID}
	f.paths = []string{
		"/", "/runs", fmt.Sprintf("/runs/%d", run.ID), "/jobs", "/jobs?queue=idle",
		fmt.Sprintf("/jobs/%d", lonely), "/locks", "/queue/idle",
	}
	f.partials = []string{"/queues/table", "/locks/waits"}
	f.csrf = b.csrf("/jobs")
	f.cancelPath = fmt.Sprintf("/jobs/%d/cancel", f.victim)
	return f
}

// requireData checks that every page answers 200 with the fixture's data.
func (f *outageFixture) requireData(t *testing.T, b *browser) {
	t.Helper()
	require.Contains(t, b.page("/"), `data-testid="queue-idle-pending">3<`)
	require.Contains(t, b.page("/runs"), "outage-run")
	require.Contains(t, b.page(fmt.Sprintf("/runs/%d", f.run)), fmt.Sprintf(`id="job-%d"`, f.jobs[0]))
	require.Contains(t, b.page("/jobs"), fmt.Sprintf(`id="job-%d"`, f.lonely))
	require.Contains(t, b.page(fmt.Sprintf("/jobs/%d", f.lonely)), `data-testid="job-status"><span class="status st-pending">PENDING<`)
	require.Contains(t, b.page("/locks"), `data-testid="waits-none"`)
	require.Contains(t, b.page("/queue/idle"), `data-testid="queue-count-pending">3<`)
	for _, p := range f.partials {
		r := b.do(http.MethodGet, p, nil, map[string]string{"HX-Request": "true"})
		require.Equal(t, http.StatusOK, r.status, "%s: %s", p, r.body)
	}
	r := b.get("/healthz")
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.Equal(t, "ok\n", r.body)
}

// requireUnavailable sends every request at once and checks that each
// answers within bound (and, with atLeast, not before: the database did
// not answer, the deadline did): every page 503 in the layout with the
// message and without the password; htmx the message alone; /healthz a
// short reason; an action that it may not have been made. It returns the
// longest answer time.
func (f *outageFixture) requireUnavailable(t *testing.T, b *browser, atLeast, bound time.Duration, reasons ...string) time.Duration {
	t.Helper()
	type request struct {
		path   string
		method string
		form   url.Values
		header map[string]string
		page   bool // a page that reads the database
	}
	var reqs []request
	for _, p := range f.paths {
		reqs = append(reqs, request{path: p, method: http.MethodGet, page: true})
	}
	for _, p := range f.partials {
		reqs = append(reqs, request{path: p, method: http.MethodGet, header: map[string]string{"HX-Request": "true"}})
	}
	reqs = append(reqs,
		request{path: f.cancelPath, method: http.MethodPost, form: url.Values{"csrf": {f.csrf}, "next": {"/jobs"}}},
		request{path: "/queues/pause", method: http.MethodPost, form: url.Values{"csrf": {f.csrf}, "queue": {"idle"}}},
		request{path: "/queues/limits", method: http.MethodPost, form: url.Values{"csrf": {f.csrf}, "queue": {"idle"}, "concurrency": {"2"}}},
		request{path: "/healthz", method: http.MethodGet},
		request{path: "/static/dashboard.css", method: http.MethodGet})

	// Responses are checked here, in the test's goroutine.
	resps := make([]response, len(reqs))
	took := make([]time.Duration, len(reqs))
	var wg sync.WaitGroup
	for i, rq := range reqs {
		wg.Go(func() {
			begin := time.Now()
			resps[i] = b.do(rq.method, rq.path, rq.form, rq.header)
			took[i] = time.Since(begin)
		})
	}
	wg.Wait()

	var slowest time.Duration
	for i, rq := range reqs {
		r, d, name := resps[i], took[i], rq.method+" "+rq.path
		require.NotContains(t, r.body, outagePassword, name)
		if rq.path == "/static/dashboard.css" {
			require.Equal(t, http.StatusOK, r.status, "what needs no database still works")
			continue
		}
		require.Less(t, d, bound, name)
		slowest = max(slowest, d)
		require.Equal(t, http.StatusServiceUnavailable, r.status, "%s: %s", name, r.body)
		if atLeast > 0 && rq.path != "/healthz" {
			require.Contains(t, r.body, fmt.Sprintf("no answer within %v", atLeast), name)
		}
		switch {
		case rq.page:
			require.GreaterOrEqual(t, d, atLeast, "%s answered before its deadline: %s", name, r.body)
			require.Contains(t, r.body, `data-testid="db-unavailable">Database unavailable: `, name)
			require.Contains(t, r.body, `data-testid="nav-queues"`, "%s: in the layout", name)
			require.Equal(t, "5", r.header.Get("Retry-After"), name)
			if rq.path == "/" {
				// The queues table reloads itself (htmx).
				require.Contains(t, r.body, `hx-get="/queues/table"`)
			} else {
				// The error page reloads itself.
				require.Contains(t, r.body, `<meta http-equiv="refresh" content="5">`, name)
			}
		case rq.header != nil:
			require.True(t, strings.HasPrefix(r.body, "Database unavailable: "), "%s: %s", name, r.body)
			require.NotContains(t, r.body, "<html", name)
		case rq.method == http.MethodPost:
			require.Contains(t, r.body, "may or may not have been made")
			require.NotContains(t, r.body, `http-equiv="refresh"`, "a POST is not repeated")
		default: // /healthz
			reason, ok := strings.CutPrefix(strings.TrimSpace(r.body), "database unavailable: ")
			require.True(t, ok, r.body)
			require.Contains(t, reasons, reason)
		}
	}
	return slowest
}

// TestDashboardDatabaseOutage: the database server stops under a running
// dashboard. Every page answers 503 with "Database unavailable" in the
// layout at once (connections are refused), htmx refreshes and /healthz
// too; once the server is back, the same dashboard serves data again.
func TestDashboardDatabaseOutage(t *testing.T) {
	t.Parallel()
	for _, c := range outageDBs() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if os.Getenv(c.env) != "" {
				t.Skip("an external server is configured; this test stops a server of its own")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			srv, err := c.start(ctx, testdb.ServerOptions{Logf: t.Logf})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, srv.Close()) })
			dsn, err := srv.NewDatabase(ctx)
			require.NoError(t, err)
			drv := c.open(t, ctx, srv, dsn)
			drivertest.Migrate(t, drv)
			client, err := lockstep.NewClient(drv, lockstep.Config{Logger: quietLogger()})
			require.NoError(t, err)
			const readTimeout = 5 * time.Second
			dash := newDashboard(t, dashboard.Config{Client: client, ReadTimeout: readTimeout})
			runCtx, stopRun := context.WithCancel(ctx)
			ran := make(chan error, 1)
			go func() { ran <- dash.Run(runCtx) }()
			defer func() { stopRun(); require.NoError(t, <-ran) }()
			b := newBrowser(t, dash)
			f := newOutageFixture(t, ctx, client, b)
			f.requireData(t, b)

			require.NoError(t, srv.Stop(ctx))
			// Connections are refused: pages answer at once. The action
			// (the client retries an idempotent cancel while the
			// connection fails) answers when ReadTimeout ends.
			slowest := f.requireUnavailable(t, b, 0, readTimeout+time.Second, "connection refused", "connection lost")
			t.Logf("during the outage the slowest answer took %v", slowest.Round(time.Millisecond))

			require.NoError(t, srv.Start(ctx))
			// The pools reconnect by themselves: a connection from before
			// the stop may fail one more request (see requireRecovers).
			requireRecovers(t, b, f)
			f.requireData(t, b)
			j, err := client.Job(ctx, f.victim)
			require.NoError(t, err)
			require.Equal(t, lockstep.StatusPending, j.Status, "the cancel during the outage did not happen")
			require.True(t, queueSettings(t, client, "idle").Paused.IsZero(), "nor the pause")

			// A quick restart, right after the pools' last use: pgx
			// reuses a connection idle for under a second unchecked.
			begin := time.Now()
			require.NoError(t, srv.Restart(ctx))
			t.Logf("quick restart took %v", time.Since(begin).Round(time.Millisecond))
			requireRecovers(t, b, f)
			f.requireData(t, b)
		})
	}
}

// requireRecovers waits (a bounded poll) until every page answers 200
// again, and logs how many requests failed first. go-sql-driver/mysql
// drops dead connections before using them; pgx only checks a connection
// idle for over a second, so the first statement on a connection from
// before a quick restart can fail, and the page with it.
func requireRecovers(t *testing.T, b *browser, f *outageFixture) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	failed := 0
	check := func(path string, header map[string]string) {
		for {
			r := b.do(http.MethodGet, path, nil, header)
			if r.status == http.StatusOK {
				return
			}
			require.Equal(t, http.StatusServiceUnavailable, r.status, "%s: %s", path, r.body)
			failed++
			require.True(t, time.Now().Before(deadline), "%s still failing: %s", path, r.body)
			t.Logf("recovering: %s answered %d: %.300s", path, r.status, r.body)
		}
	}
	check("/healthz", nil)
	for _, p := range f.paths {
		check(p, nil)
	}
	for _, p := range f.partials {
		check(p, map[string]string{"HX-Request": "true"})
	}
	t.Logf("%d request(s) failed before every page answered again", failed)
}

// TestDashboardDatabaseStalls: the network to the database stops
// delivering anything (a fault proxy holds every byte). Every page, htmx
// refresh, action and /healthz still answers, 503, when Config.ReadTimeout
// ends (all at once: none waits beyond its own deadline for another's
// stalled query), and the dashboard serves data again once the network is
// back.
func TestDashboardDatabaseStalls(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, driverName string
		dsn              func(testing.TB) string
		open             func(context.Context, string) (driver.Driver, error)
	}{
		{"MariaDB", "mysql", testdb.MySQL, func(ctx context.Context, dsn string) (driver.Driver, error) { return mysql.Open(ctx, dsn) }},
		{"OracleMySQL", "mysql", testdb.OracleMySQL, func(ctx context.Context, dsn string) (driver.Driver, error) { return mysql.Open(ctx, dsn) }},
		{"PostgreSQL", "pgx", testdb.Postgres, func(ctx context.Context, dsn string) (driver.Driver, error) { return postgres.Open(ctx, dsn) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			dsn := c.dsn(t)
			target, err := testdb.DSNAddr(dsn)
			require.NoError(t, err)
			p, err := faultproxy.New(ctx, target)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, p.Close()) })
			proxied, err := testdb.DSNWithAddr(dsn, p.Addr())
			require.NoError(t, err)
			drv, err := c.open(ctx, proxied)
			require.NoError(t, err)
			t.Cleanup(func() { _ = drv.Close() })
			drivertest.Migrate(t, drv)
			client, err := lockstep.NewClient(drv, lockstep.Config{Logger: quietLogger()})
			require.NoError(t, err)
			// The lock monitor's own pool, as serve opens it (without the
			// queue pool's planner settings, which make PostgreSQL's
			// pg_locks queries slow).
			monitor, err := sql.Open(c.driverName, proxied)
			require.NoError(t, err)
			t.Cleanup(func() { _ = monitor.Close() })
			const readTimeout = 2 * time.Second
			b := newBrowser(t, newDashboard(t, dashboard.Config{Client: client, DB: monitor, ReadTimeout: readTimeout}))
			f := newOutageFixture(t, ctx, client, b)
			f.requireData(t, b)

			p.Stall(true)
			slowest := f.requireUnavailable(t, b, readTimeout, readTimeout+2*time.Second, fmt.Sprintf("no answer within %v", readTimeout))
			t.Logf("while stalled the slowest answer took %v (ReadTimeout %v)", slowest.Round(time.Millisecond), readTimeout)

			p.Stall(false)
			requireRecovers(t, b, f)
			f.requireData(t, b)
		})
	}
}
