package lockstep_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/internal/faultproxy"
	"github.com/lockstep-queue/lockstep/internal/statusaudit"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/lab/chaos"
	"github.com/lockstep-queue/lockstep/migrate"
)

// faultDialect is a server the fault tests run on.
type faultDialect struct {
	name string
	// dialect is the driver's Dialect(): what decides the statement text
	// a fault rule matches.
	dialect string
	dsn     func(t testing.TB) string // a fresh, empty database
	open    func(ctx context.Context, dsn string) (driver.Driver, error)
	// start starts a server of the test's own, for the restart test.
	start func(context.Context, testdb.ServerOptions) (*testdb.Server, error)
}

func openMySQL(ctx context.Context, dsn string) (driver.Driver, error) { return mysql.Open(ctx, dsn) }

var faultDialects = []faultDialect{
	{"mariadb", "mysql", testdb.MySQL, openMySQL, testdb.StartMySQLServer},
	{"oraclemysql", "mysql", testdb.OracleMySQL, openMySQL, testdb.StartOracleMySQLServer},
	{"postgres", "postgres", testdb.Postgres, func(ctx context.Context, dsn string) (driver.Driver, error) { return postgres.Open(ctx, dsn) }, testdb.StartPostgresServer},
}

// logRecorder is a slog handler that keeps every record's message, so a
// test can wait for the client to say something (observable state).
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.msgs = append(l.msgs, r.Message)
	l.mu.Unlock()
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

func (l *logRecorder) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if m == msg {
			n++
		}
	}
	return n
}

// faultSetup migrates a fresh database, installs the status audit and the
// ledger, and enqueues n ledger jobs through a direct connection (the
// client under test goes through the proxy or the restarting server).
func faultSetup(t *testing.T, ctx context.Context, d faultDialect, dsn string, n int) (driver.Driver, map[int64]int64) {
	t.Helper()
	direct, err := d.open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = direct.Close() })
	m, err := migrate.New(direct)
	require.NoError(t, err)
	_, err = m.Up(ctx)
	require.NoError(t, err)
	require.NoError(t, statusaudit.Install(ctx, direct))
	require.NoError(t, chaos.InstallLedger(ctx, direct))
	c, err := lockstep.NewClient(direct, lockstep.Config{})
	require.NoError(t, err)
	params := make([]lockstep.InsertManyParams, n)
	for i := range params {
		params[i] = lockstep.InsertManyParams{Args: chaos.LedgerArgs{Millis: 5}}
	}
	idsRes, err := c.InsertMany(ctx, params)
	require.NoError(t, err)
	ids := insertedIDs(idsRes)
	jobs := make(map[int64]int64, n)
	for _, id := range ids {
		jobs[id] = 0
	}
	return direct, jobs
}

func openJobs(t *testing.T, drv driver.Driver) int {
	t.Helper()
	var n int
	require.NoError(t, drv.DB().QueryRow("SELECT COUNT(*) FROM lockstep_jobs WHERE status IN ('PENDING', 'RUNNING')").Scan(&n))
	return n
}

// TestConnectionFaults puts a TCP proxy between the client and the server
// and drops connections at chosen statements: before the server sees a
// statement, or after it ran (and committed) but before the client hears.
// Every job must end DONE, its final state written once, no attempt
// executed twice and no job run again (no process was killed: a lost
// connection is no excuse).
func TestConnectionFaults(t *testing.T) {
	type scenario struct {
		name  string
		match map[string]string // Dialect() → statement text that trips the drop
		after bool
		// dropAll: no rule; every connection is cut once jobs are done.
		dropAll bool
	}
	scenarios := []scenario{
		{name: "claim cut mid-transaction, before its update",
			match: map[string]string{"mysql": "SET status = 'RUNNING'", "postgres": "SKIP LOCKED"}},
		{name: "finish cut before the server sees it",
			match: map[string]string{"mysql": "SET status = 'DONE'", "postgres": "SET status = 'DONE'"}},
		{name: "finish committed, reply lost",
			match: map[string]string{"mysql": "SET status = 'DONE'", "postgres": "SET status = 'DONE'"},
			after: true},
		{name: "every connection cut mid-run", dropAll: true},
	}
	for _, d := range faultDialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) {
					ctx := context.Background()
					const n = 60
					dsn := d.dsn(t)
					direct, jobs := faultSetup(t, ctx, d, dsn, n)

					p, proxied := behindProxy(t, ctx, d, dsn)

					var fault *faultproxy.Fault
					if !sc.dropAll {
						fault = p.DropOn(faultproxy.Rule{Match: []byte(sc.match[d.dialect]), After: sc.after, Times: 1})
					}
					ws := lockstep.NewWorkers()
					// The ledger is written directly: the faults are the
					// queue's to survive, not the ledger's.
					require.NoError(t, chaos.NewLedgerWorker(direct).Register(ws))
					logs := &logRecorder{}
					client, err := lockstep.NewClient(proxied, lockstep.Config{
						Workers: ws, Logger: slog.New(logs),
						PollInterval: 50 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond,
						ReapAfter: time.Second, ReapInterval: 100 * time.Millisecond,
					})
					require.NoError(t, err)
					require.NoError(t, client.Start(ctx))
					stopped := false
					defer func() {
						if !stopped {
							_ = client.Stop(ctx)
						}
					}()
					if sc.dropAll {
						eventually(t, 30*time.Second, "a third of the jobs to finish", func() bool { return openJobs(t, direct) <= 2*n/3 })
						require.Positive(t, p.DropAll())
					} else {
						select {
						case <-fault.Fired():
						case <-time.After(30 * time.Second):
							t.Fatalf("the rule on %q never fired", sc.match[d.dialect])
						}
					}
					eventually(t, 60*time.Second, "every job to be final", func() bool { return openJobs(t, direct) == 0 })
					require.NoError(t, client.Stop(ctx))
					stopped = true

					res, err := chaos.Check(ctx, direct, chaos.Known{Jobs: jobs, Killed: map[int]bool{}})
					require.NoError(t, err)
					require.Empty(t, res.Problems, "%d problems", res.ProblemCount)
					require.Equal(t, n, res.Done)
					require.Zero(t, res.ReExecuted, "a lost connection must not make a job run twice")
					// A DONE whose reply was lost is confirmed by reading
					// the row, not reported as discarded.
					require.Zero(t, logs.count("lockstep: result discarded: the job was cancelled or reclaimed meanwhile"))
					t.Logf("%s: %d connections accepted, %d dropped; %d reaps; %s",
						sc.name, p.Stats().Accepted, p.Stats().Dropped, res.Reaps, strings.Join(logs.distinct(), " | "))
				})
			}
		})
	}
}

func (l *logRecorder) distinct() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, m := range l.msgs {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

// behindProxy puts a fault proxy in front of dsn's server and opens a
// driver through it.
func behindProxy(t *testing.T, ctx context.Context, d faultDialect, dsn string) (*faultproxy.Proxy, driver.Driver) {
	t.Helper()
	target, err := testdb.DSNAddr(dsn)
	require.NoError(t, err)
	p, err := faultproxy.New(ctx, target)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	viaProxy, err := testdb.DSNWithAddr(dsn, p.Addr())
	require.NoError(t, err)
	proxied, err := d.open(ctx, everyStatementText(d, viaProxy))
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxied.Close() })
	return p, proxied
}

// everyStatementText makes pgx send a statement's text with every
// execution, in one round trip (its default prepares once per connection,
// in a round trip of its own), so that a rule sees each execution and a
// drop "after" a statement comes after it ran. MySQL's interpolated
// statements always carry their text.
func everyStatementText(d faultDialect, dsn string) string {
	if d.dialect != "postgres" {
		return dsn
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "default_query_exec_mode=exec"
}

// TestLostClaimCommitIsReaped: the connection is cut after a claim
// committed and before its client heard, so jobs are RUNNING that no one
// runs. The reaper (here in a second client, on a direct connection) must
// return them and they must then be run once, their lost attempt never
// executed. The claim is made deterministic: client A starts on an empty
// queue with a poll an hour long, the rule is armed once A's first (empty)
// claim is seen, and A's own enqueue wakes the claim the rule cuts.
func TestLostClaimCommitIsReaped(t *testing.T) {
	// MySQL's claim is a transaction whose COMMIT travels as its own
	// statement; PostgreSQL's is one autocommit statement.
	match := map[string]string{"mysql": "COMMIT", "postgres": "SKIP LOCKED"}
	for _, d := range faultDialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			const n = 30
			dsn := d.dsn(t)
			direct, _ := faultSetup(t, ctx, d, dsn, 1)
			p, proxied := behindProxy(t, ctx, d, dsn)

			ws := lockstep.NewWorkers()
			require.NoError(t, chaos.NewLedgerWorker(direct).Register(ws))
			claims := make(chan int, 100)
			a, err := lockstep.NewClient(proxied, lockstep.Config{
				Workers: ws, Logger: slog.New(&logRecorder{}), DisableReaper: true, DisableNotify: true,
				PollInterval: time.Hour, MinPollInterval: time.Hour,
				HeartbeatInterval: 100 * time.Millisecond, ReapAfter: time.Second,
				OnEvent: func(e lockstep.Event) {
					if e.Kind == lockstep.EventClaimed {
						select {
						case claims <- e.Count:
						default:
						}
					}
				},
			})
			require.NoError(t, err)
			require.NoError(t, a.Start(ctx))
			defer func() { _ = a.Stop(ctx) }()
			// The one job faultSetup enqueued is claimed and run first; the
			// slot it frees makes A claim once more, finding nothing. Then
			// A is idle for an hour unless woken: the next claim is the
			// one its enqueue below wakes.
			waitClaims(t, claims, 1, 0)
			eventually(t, 30*time.Second, "the first job to be DONE", func() bool { return openJobs(t, direct) == 0 })

			fault := p.DropOn(faultproxy.Rule{Match: []byte(match[d.dialect]), After: true, Times: 1})
			params := make([]lockstep.InsertManyParams, n)
			for i := range params {
				params[i] = lockstep.InsertManyParams{Args: chaos.LedgerArgs{Millis: 5}}
			}
			idsRes, err := a.InsertMany(ctx, params)
			require.NoError(t, err)
			ids := insertedIDs(idsRes)
			select {
			case <-fault.Fired():
			case <-time.After(30 * time.Second):
				t.Fatal("the claim was never cut")
			}
			var running int
			require.NoError(t, direct.DB().QueryRow("SELECT COUNT(*) FROM lockstep_jobs WHERE status = 'RUNNING'").Scan(&running))
			require.Positive(t, running, "the cut claim committed: its jobs are RUNNING with no one to run them")

			// B reaps and runs them; A, told its claim failed, holds nothing.
			ws2 := lockstep.NewWorkers()
			require.NoError(t, chaos.NewLedgerWorker(direct).Register(ws2))
			b, err := lockstep.NewClient(direct, lockstep.Config{
				Workers: ws2, Logger: slog.New(&logRecorder{}),
				PollInterval: 50 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond,
				ReapAfter: time.Second, ReapInterval: 100 * time.Millisecond,
			})
			require.NoError(t, err)
			require.NoError(t, b.Start(ctx))
			defer func() { _ = b.Stop(ctx) }()
			eventually(t, 60*time.Second, "every job to be final", func() bool { return openJobs(t, direct) == 0 })
			require.NoError(t, b.Stop(ctx))
			require.NoError(t, a.Stop(ctx))

			all := map[int64]int64{}
			for _, id := range ids {
				all[id] = 0
			}
			var first int64
			require.NoError(t, direct.DB().QueryRow("SELECT MIN(id) FROM lockstep_jobs").Scan(&first))
			all[first] = 0
			res, err := chaos.Check(ctx, direct, chaos.Known{Jobs: all, Killed: map[int]bool{}})
			require.NoError(t, err)
			require.Empty(t, res.Problems, "%d problems", res.ProblemCount)
			require.Equal(t, n+1, res.Done)
			require.Equal(t, running, res.Reaps, "each job of the lost claim was reaped once")
			require.Zero(t, res.ReExecuted, "the lost attempt never ran, so nothing ran twice")
		})
	}
}

// waitClaims waits until the claims reported on ch include the sizes
// want, in that order.
func waitClaims(t *testing.T, ch chan int, want ...int) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for len(want) > 0 {
		select {
		case n := <-ch:
			if n == want[0] {
				want = want[1:]
			}
		case <-timeout:
			t.Fatalf("timed out waiting for claims of sizes %v", want)
		}
	}
}
