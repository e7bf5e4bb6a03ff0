package soak_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/drivertest"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/lab/soak"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// EnvDuration sets the soak's load duration (a Go duration) for a full
// run: LOCKSTEP_SOAK_DURATION=10m go test -timeout 0 ./lab/soak/
const EnvDuration = "LOCKSTEP_SOAK_DURATION"

// EnvSeed sets the seed, to replay a run's choices.
const EnvSeed = "LOCKSTEP_SOAK_SEED"

func soakDuration(t *testing.T) time.Duration {
	if s := os.Getenv(EnvDuration); s != "" {
		d, err := time.ParseDuration(s)
		require.NoError(t, err, EnvDuration)
		require.Positive(t, d, EnvDuration)
		return d
	}
	if testing.Short() {
		return 15 * time.Second
	}
	return 60 * time.Second
}

func soakSeed(t *testing.T, def uint64) uint64 {
	if s := os.Getenv(EnvSeed); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, EnvSeed)
		return n
	}
	return def
}

type opener = func(ctx context.Context) (driver.Driver, error)

// target is one database and isolation level under test.
type target struct {
	name string
	open func(t *testing.T) opener
	// session is the level the pools' sessions must report; txLevel the
	// level the queue's transactions must be seen to run at.
	session, txLevel string
}

func targets() []target {
	return []target{
		mysqlReadCommitted("MariaDB-ReadCommitted", testdb.MySQL),
		mysqlRepeatableRead("MariaDB-RepeatableRead", testdb.MySQL),
		{"PostgreSQL", func(t *testing.T) opener {
			u, err := url.Parse(testdb.Postgres(t))
			require.NoError(t, err)
			// pgxpool's default of max(4, CPUs) connections would make the
			// workers queue for connections rather than for rows.
			q := u.Query()
			q.Set("pool_max_conns", "24")
			u.RawQuery = q.Encode()
			dsn := u.String()
			return func(ctx context.Context) (driver.Driver, error) { return postgres.Open(ctx, dsn) }
		}, "read committed", "READ COMMITTED"},
		{"SQLite", func(t *testing.T) opener {
			path := filepath.Join(t.TempDir(), "soak.db")
			return func(ctx context.Context) (driver.Driver, error) { return sqlite.Open(ctx, path) }
		}, "SERIALIZABLE", "SERIALIZABLE"},
		// Last, so that the earlier targets keep their default seeds.
		mysqlReadCommitted("OracleMySQL-ReadCommitted", testdb.OracleMySQL),
		mysqlRepeatableRead("OracleMySQL-RepeatableRead", testdb.OracleMySQL),
	}
}

// galeraTarget is the three-node Galera cluster with one writer, as
// docs/scaling.md advises: every pool on a DSN naming the three nodes, so
// all write through the first while it is ready. (Writes through all
// three at once break what rests on row locks, which are local to a
// node: limits, sequences, workflow promotion; see docs/scaling.md.)
func galeraTarget() target {
	return target{"Galera", func(t *testing.T) opener {
		u, err := testdb.MultiHostURL(testdb.Galera(t))
		require.NoError(t, err)
		return func(ctx context.Context) (driver.Driver, error) { return mysql.Open(ctx, u) }
	}, "READ-COMMITTED", "READ COMMITTED"}
}

// galeraAllNodesTarget is the three-node Galera cluster with writes through
// every node at once: the soak's pools open in turn on node 1, 2 and 3,
// each on that node alone. Their sessions read causally
// (wsrep_sync_wait=1, as docs/scaling.md advises when one process hands
// another the id of a run it created): a pool that enqueues into a run
// another node just created must find it.
func galeraAllNodesTarget() target {
	return target{"GaleraAllNodes", func(t *testing.T) opener {
		dsns, err := testdb.WithSessionVar(testdb.Galera(t), "wsrep_sync_wait", "1")
		require.NoError(t, err)
		var next atomic.Int64
		return func(ctx context.Context) (driver.Driver, error) {
			return mysql.Open(ctx, dsns[int(next.Add(1)-1)%len(dsns)])
		}
	}, "READ-COMMITTED", "READ COMMITTED"}
}

// mysqlReadCommitted is a MySQL-family server as mysql.Open configures it.
func mysqlReadCommitted(name string, fresh func(testing.TB) string) target {
	return target{name, func(t *testing.T) opener {
		dsn := fresh(t)
		return func(ctx context.Context) (driver.Driver, error) { return mysql.Open(ctx, dsn) }
	}, "READ-COMMITTED", "READ COMMITTED"}
}

// mysqlRepeatableRead is a MySQL-family server whose sessions run at
// REPEATABLE READ (soak.OpenMySQL), where gap locks come into play.
func mysqlRepeatableRead(name string, fresh func(testing.TB) string) target {
	return target{name, func(t *testing.T) opener {
		dsn := fresh(t)
		return func(ctx context.Context) (driver.Driver, error) {
			return soak.OpenMySQL(ctx, dsn, sql.LevelRepeatableRead)
		}
	}, "REPEATABLE-READ", "REPEATABLE READ"}
}

// withTextIndex: the targets whose soak runs with the job search's
// optional text index, one of each server (InnoDB's FULLTEXT writes a
// hidden unique index on every insert and delete), the others without.
func withTextIndex(target string) bool {
	switch target {
	case "MariaDB-RepeatableRead", "OracleMySQL-ReadCommitted", "PostgreSQL":
		return true
	}
	return false
}

// TestSoak is the mixed soak on every database. Each subtest asserts that
// the server counted no deadlock, that no job was lost or finished twice,
// that every other check held, and that the soak really exercised
// cancels, reaps, retries, snoozes and stale finishes.
func TestSoak(t *testing.T) {
	for i, tg := range targets() {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			soakTarget(t, tg, uint64(i+1))
		})
	}
}

// TestSoakGalera is the soak on a three-node Galera cluster, a test of its
// own so that `make test` runs it apart from the race detector's run,
// where a loaded machine starves the cluster's group communication.
//
// Besides what every soak checks, it reports each node's own counters: no
// node may count a deadlock, and with one writer node no transaction should
// fail certification (each count is logged).
//
// With writes through all three nodes, transactions that meet on a row on
// two nodes conflict at certification, and one is retried whole: the
// soak counts those per node (each count is logged) and checks what it
// checks everywhere — nothing lost or finished twice, no limit exceeded,
// no job of a cancelled run left live — and that no node counted a
// deadlock of its own row locks.
func TestSoakGalera(t *testing.T) {
	for i, tg := range []target{galeraTarget(), galeraAllNodesTarget()} {
		t.Run(tg.name, func(t *testing.T) {
			since := testdb.WatchGaleraCounters(t)
			soakTarget(t, tg, uint64(len(targets())+1+i))
			for i, d := range since() {
				t.Logf("Galera node %d: %s", i+1, d)
				require.Zero(t, d.Deadlocks, "node %d counted a deadlock", i+1)
			}
		})
	}
}

// soakTarget runs the soak on one target and checks its result.
func soakTarget(t *testing.T, tg target, seed uint64) {
	d := soakDuration(t)
	open := tg.open(t)
	checkSessionIsolation(t, open, tg.session)

	ctx, cancel := context.WithTimeout(t.Context(), d+5*time.Minute)
	defer cancel()
	logs := &testWriter{t: t, prefix: "log: "}
	res, err := soak.Run(ctx, soak.Config{
		Open:             open,
		Duration:         d,
		Seed:             soakSeed(t, seed),
		Logger:           slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelError})),
		Progress:         &testWriter{t: t},
		ProgressInterval: 10 * time.Second,
		TextIndex:        withTextIndex(tg.name),
	})
	if res != nil {
		t.Log("\n" + res.Table())
	}
	require.NoError(t, err)

	require.Equal(t, tg.session, res.SessionIsolation)
	require.Equal(t, tg.txLevel, res.Isolation, "the queue's transactions, as observed")
	if tg.name != "SQLite" {
		require.NotNil(t, res.Deadlocks, "a server database has a deadlock counter")
		require.Zero(t, *res.Deadlocks, "server-counted deadlocks")
	}
	require.Zero(t, res.Lost, "lost jobs")
	require.Zero(t, res.DoubleFinished, "double-finished jobs")
	require.Zero(t, res.ProblemCount, "problems: %v", res.Problems)
	require.Equal(t, res.JobsEnqueued, res.Done+res.Failed+res.Cancelled)
	require.Equal(t, res.StaleFinishes, res.StaleFinishesRefused)
	require.Positive(t, res.HistoryDone, "the pools flushed their history")

	// A soak that did nothing proves nothing.
	floor := int(d.Seconds()) * 5
	require.Greater(t, res.Done, floor, "jobs done")
	require.Positive(t, res.Failed, "fail-always jobs")
	require.Positive(t, res.Retries, "retries")
	require.Positive(t, res.Snoozes, "snoozes")
	require.Positive(t, res.Reaps, "reaps")
	require.Positive(t, res.RunsCancelled, "run cancels")
	require.Positive(t, res.SettingsRemovals, "queue settings removed")
	require.Positive(t, res.BulkBatches, "bulk batches written")
	require.Positive(t, res.BulkPreviews, "bulk previews counted")
	require.Positive(t, res.Searches, "searches")
	if withTextIndex(tg.name) && tg.name != "SQLite" {
		require.Positive(t, res.SearchesIndexed, "searches through the text index")
	} else {
		require.Zero(t, res.SearchesIndexed, "no text index, no search through it")
	}
	require.Positive(t, res.Processes, "processes registered")
	require.Positive(t, res.ClaimsNamed, "claims naming their process")
	require.Positive(t, res.ClaimsAfterKey, "claims after a key")
	require.Positive(t, res.EnqueueRefused, "enqueues into a cancelled run, refused")
	require.Positive(t, res.JobCancelsApplied, "job cancels")
	require.Positive(t, res.CancelledRunning, "cancels of running jobs")
	require.Positive(t, res.DeadClaims, "dead worker claims")
	require.Positive(t, res.StaleFinishesRefused, "refused stale finishes")

	// The limited queues: sampled throughout, never above a limit,
	// every limit reached, and the actors' work done there too.
	require.Zero(t, res.LimitViolations, "samples above a limit")
	require.Greater(t, res.LimitSamples, int(d/time.Second), "limit samples (one per 100 ms is the aim)")
	require.Positive(t, res.Blocks, "jobs blocked by a limit")
	require.Positive(t, res.Unblocks, "blocked jobs released")
	require.Positive(t, res.LimitDeferred, "starts deferred by a rate limit")
	reaps, cancelledRunning := 0, 0
	for _, q := range res.Limited {
		require.Positive(t, q.Done, "%s: jobs done", q.Queue)
		if q.Queue != "soak_limit_rate" { // a rate is no concurrency to sample
			require.Positive(t, q.SamplesAtLimit, "%s: samples at its limit", q.Queue)
		}
		reaps += q.Reaps
		cancelledRunning += q.CancelledRunning
		switch q.Queue {
		case "soak_limit_global":
			require.Equal(t, 3, q.MaxRunning, "the global limit, reached and held")
			require.LessOrEqual(t, q.MaxOverlap, 3)
		case "soak_limit_key", "soak_limit_seq":
			require.Equal(t, 1, q.MaxKeyRunning, "%s: one RUNNING per key", q.Queue)
			require.Equal(t, 1, q.MaxOverlap, "%s: one execution per key at a time", q.Queue)
			require.Positive(t, q.Blocks, "%s: blocks", q.Queue)
		case "soak_limit_rate":
			require.Equal(t, 5, q.MaxStartsPerPeriod, "%s: the rate, reached and held", q.Queue)
		}
	}
	require.Positive(t, reaps, "reaps in limited queues")
	require.Positive(t, cancelledRunning, "cancels of running jobs in limited queues")
}

// checkSessionIsolation checks, on a pool of the target's own, the level
// its sessions start at. The level of the queue's transactions cannot be
// read this way (on MariaDB both @@tx_isolation and INNODB_TRX report the
// session's level inside a transaction begun with SET TRANSACTION): the
// soak observes it by behaviour, and the test checks Result.Isolation.
// The variable's name is the server's (mysql.IsolationVariable).
func checkSessionIsolation(t *testing.T, open opener, want string) {
	t.Helper()
	ctx := t.Context()
	drv, err := open(ctx)
	require.NoError(t, err)
	defer drv.Close()
	var q string
	switch drv.Dialect() {
	case "mysql":
		version, err := drv.Version(ctx)
		require.NoError(t, err)
		q = "SELECT @@SESSION." + mysql.IsolationVariable(version)
	case "postgres":
		q = "SHOW transaction_isolation"
	default:
		return
	}
	var session string
	require.NoError(t, drv.DB().QueryRowContext(ctx, q).Scan(&session))
	require.Equal(t, want, session, "session isolation")
}

func TestRefusesADatabaseWithJobs(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "used.db")
	drv, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	defer drv.Close()
	drivertest.Migrate(t, drv)
	c, err := lockstep.NewClient(drv, lockstep.Config{})
	require.NoError(t, err)
	_, err = c.Insert(ctx, soak.Args{Mode: soak.ModeOK}, nil)
	require.NoError(t, err)

	res, err := soak.Run(ctx, soak.Config{
		Open:     func(ctx context.Context) (driver.Driver, error) { return sqlite.Open(ctx, path) },
		Duration: time.Second,
	})
	require.Nil(t, res)
	require.ErrorContains(t, err, "scratch database")
	var n int
	require.NoError(t, drv.DB().QueryRow("SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'lockstep_soak%'").Scan(&n))
	require.Zero(t, n, "a refused soak installs nothing")
}

func TestConfigErrors(t *testing.T) {
	open := func(context.Context) (driver.Driver, error) { return nil, fmt.Errorf("not called") }
	for _, tc := range []struct {
		cfg  soak.Config
		want string
	}{
		{soak.Config{}, "Open is required"},
		{soak.Config{Open: open, Duration: -time.Second}, "Duration must not be negative"},
		{soak.Config{Open: open, Pools: -1}, "Pools must be between"},
		{soak.Config{Open: open, Workers: 100000}, "Workers must be between"},
	} {
		res, err := soak.Run(t.Context(), tc.cfg)
		require.Nil(t, res)
		require.ErrorContains(t, err, tc.want)
	}
}

// testWriter turns the soak's lines into test log lines.
type testWriter struct {
	t      *testing.T
	prefix string
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Log(w.prefix + strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
