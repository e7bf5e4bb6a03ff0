package dashboard_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/dashboard"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/lab/planguard"
	"github.com/lockstep-queue/lockstep/migrate"
)

// BenchmarkPages renders each page against 1,000,000 jobs (planguard's
// million-mostly-done: 1,000 runs of 1,000 jobs in 4 queues, 3,003
// PENDING, 50 RUNNING, the rest DONE), generated on the server, on
// MariaDB, Oracle MySQL and PostgreSQL. Loading takes a minute or so per
// database and is not timed.
//
//	go test -run '^$' -bench BenchmarkPages -benchtime 20x ./dashboard/
//
// With LOCKSTEP_BENCH_RETAINED=N, N more DONE jobs are appended after the
// million (the newest ids, in queue q1, finished an hour ago): a table
// that keeps its history, e.g. N=9000000 for ten million jobs.
func BenchmarkPages(b *testing.B) {
	retained := 0
	if v := os.Getenv("LOCKSTEP_BENCH_RETAINED"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			b.Fatalf("LOCKSTEP_BENCH_RETAINED=%q: want a count of jobs", v)
		}
		retained = n
	}
	for _, db := range []struct {
		name    string
		sqlName string
		dsn     func(testing.TB) string
		open    func(ctx context.Context, dsn string) (driver.Driver, error)
		update  string // sets a job's args by id, in the dialect's placeholders
	}{
		{"MariaDB", "mysql", testdb.MySQL, func(ctx context.Context, dsn string) (driver.Driver, error) { return mysql.Open(ctx, dsn) }, "UPDATE lockstep_jobs SET args = ? WHERE id = ?"},
		{"OracleMySQL", "mysql", testdb.OracleMySQL, func(ctx context.Context, dsn string) (driver.Driver, error) { return mysql.Open(ctx, dsn) }, "UPDATE lockstep_jobs SET args = ? WHERE id = ?"},
		{"PostgreSQL", "pgx", testdb.Postgres, func(ctx context.Context, dsn string) (driver.Driver, error) { return postgres.Open(ctx, dsn) }, "UPDATE lockstep_jobs SET args = $1::jsonb WHERE id = $2"},
	} {
		b.Run(db.name, func(b *testing.B) {
			ctx := context.Background()
			dsn := db.dsn(b)
			drv, err := db.open(ctx, dsn)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = drv.Close() })
			// The lock monitor's own pool, as lockstep serve opens it.
			monitor, err := sql.Open(db.sqlName, dsn)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = monitor.Close() })
			m, err := migrate.New(drv)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := m.Up(ctx); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			if err := planguard.Load(ctx, drv, planguard.MillionMostlyDone()); err != nil {
				b.Fatal(err)
			}
			b.Logf("loaded 1,000,000 jobs in %s", time.Since(start).Round(time.Second))
			if retained > 0 {
				start = time.Now()
				if err := planguard.AppendDone(ctx, drv, "q1", "planguard", retained); err != nil {
					b.Fatal(err)
				}
				b.Logf("appended %d DONE jobs in %s", retained, time.Since(start).Round(time.Second))
			}
			// Two needles for the search: one among the newest jobs, one
			// half-way down the table (500,000 ids from the top).
			for _, n := range []struct {
				id   int64
				text string
			}{{999_990, "needle-new"}, {500_000, "needle-deep"}} {
				if _, err := drv.DB().ExecContext(ctx, db.update, fmt.Sprintf(`{"tag": %q}`, n.text), n.id); err != nil {
					b.Fatal(err)
				}
			}
			client, err := lockstep.NewClient(drv, lockstep.Config{Logger: quietLogger()})
			if err != nil {
				b.Fatal(err)
			}
			s := newDashboard(b, dashboard.Config{Client: client, DB: monitor})
			for _, p := range []struct{ name, path string }{
				{"queues", "/"},
				{"queues-table", "/queues/table"},
				{"runs", "/runs"},
				{"runs-older", "/runs?before=500"},
				{"run-newest", "/runs/1000"},
				{"run-oldest", "/runs/1"},
				{"run-pending", "/runs/500?status=PENDING"},
				{"jobs", "/jobs"},
				{"jobs-queue", "/jobs?queue=q1"},
				{"jobs-failed-none", "/jobs?status=FAILED"},
				{"jobs-older", "/jobs?before=500000"},
				{"job", "/jobs/500000"},
				{"search-id", "/jobs?q=500000"},
				{"search-newest", "/jobs?q=needle-new"},
				{"search-deep", "/jobs?q=needle-deep"},
				{"search-none", "/jobs?q=no-such-text"},
				{"locks", "/locks"},
				// A bulk action's preview: windows of 100,000 ids, newest
				// first, within the preview's budget (150 ms); then
				// "count them all" (all=1), every window (MySQL and
				// MariaDB count FAILED through the status-led index).
				{"bulk-preview-failed", "/jobs/bulk?action=retry&status=FAILED"},
				{"bulk-preview-kind-since", "/jobs/bulk?action=delete&kind=planguard&since=1h"},
				{"bulk-preview-failed-all", "/jobs/bulk?action=retry&status=FAILED&all=1"},
				{"bulk-preview-kind-since-all", "/jobs/bulk?action=delete&kind=planguard&since=1h&all=1"},
			} {
				if retained > 0 && strings.HasSuffix(p.name, "-all") {
					// Every window of ten million ids: seconds, past the
					// dashboard's ReadTimeout on Oracle MySQL (BENCHMARKS.md).
					continue
				}
				b.Run(p.name, func(b *testing.B) { benchPage(b, s, p.path, "") })
			}
			if retained > 0 {
				// Building the text index over ten million rows takes
				// longer than the rest of the benchmark together.
				b.Logf("the text index's pages are not measured with LOCKSTEP_BENCH_RETAINED")
				return
			}
			// The search again with the optional text index ('lockstep
			// migrate text-index up'): the deep needle is found in one
			// page.
			start = time.Now()
			if err := migrate.TextIndex(ctx, drv, true); err != nil {
				b.Fatal(err)
			}
			b.Logf("created the text index in %s", time.Since(start).Round(time.Second))
			for _, p := range []struct{ name, path, want string }{
				{"indexed-search-newest", "/jobs?q=needle-new", `id="job-999990"`},
				{"indexed-search-deep", "/jobs?q=needle-deep", `id="job-500000"`},
				{"indexed-search-none", "/jobs?q=no-such-text", "the search went through every job by the text index"},
			} {
				b.Run(p.name, func(b *testing.B) { benchPage(b, s, p.path, p.want) })
			}
		})
	}
}

// benchPage renders path each time round, and fails unless it answers
// 200 with want (when given) in the page.
func benchPage(b *testing.B, s http.Handler, path, want string) {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = "127.0.0.1"
	for b.Loop() {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		if want != "" && !strings.Contains(rec.Body.String(), want) {
			b.Fatalf("GET %s: the page lacks %q", path, want)
		}
	}
}
