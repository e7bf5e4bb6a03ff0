package corpusgen

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
)

// server is one of the two test servers a scenario runs on.
type server struct {
	// name is the file-name suffix: NAME.<name>.txt.
	name   string
	flavor lockview.Flavor
	dsn    func(testing.TB) string // a fresh database
	admin  func(testing.TB) string
	log    func(testing.TB) string // the error log's path
	// errorLogDecodes: the current decoder reads this server's error-log
	// form, so the committed error-log block is checked too.
	errorLogDecodes bool
}

// outcome is what one statement of a scenario returned.
type outcome struct {
	step int
	err  error
}

// run is what a scenario came to on one server.
type run struct {
	// connIDs are the sessions' CONNECTION_ID()s, by session index: the
	// report's thread ids name them.
	connIDs []int64
	// victims are the sessions whose statement failed with the deadlock
	// error (1213, but see scenario.victimErr).
	victims []int
	// report is the LATEST DETECTED DEADLOCK section, header included.
	report string
	// errorLog is the error log's block for this deadlock, when asked for.
	errorLog string
	// schema is SHOW CREATE TABLE of each table, as --schema reads it.
	schema string
}

// lockWaitTimeout bounds a scenario that went wrong (a wait nobody
// releases) well below the test's deadline; InnoDB's default is 50 s.
const lockWaitTimeout = 20

// play creates the scenario's tables in a fresh database on srv, opens one
// connection per session, runs the steps in order and returns the report
// InnoDB printed. A step marked wait must be seen waiting for a lock in the
// server's lock tables before the next step starts: that, not timing, is
// what makes the interleaving the same on every run.
func play(ctx context.Context, t *testing.T, srv server, admin *sql.DB, sc scenario) run {
	t.Helper()
	db, err := sql.Open("mysql", srv.dsn(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	for _, q := range sc.tables {
		_, err := db.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	if sc.load != nil {
		require.NoError(t, sc.load(ctx, db))
	}
	for _, q := range sc.rows {
		_, err := db.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	var r run
	r.schema = showCreate(ctx, t, db, sc)

	conns := make([]*sql.Conn, sc.sessions)
	r.connIDs = make([]int64, sc.sessions)
	for i := range conns {
		c, err := db.Conn(ctx)
		require.NoError(t, err)
		conns[i] = c
		// Rolled back and closed at the end even when the test fails, so
		// that no open transaction holds the database's metadata lock.
		t.Cleanup(func() {
			_, _ = c.ExecContext(context.Background(), "ROLLBACK")
			_ = c.Close()
		})
		require.NoError(t, c.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&r.connIDs[i]))
		for _, q := range []string{
			fmt.Sprintf("SET SESSION innodb_lock_wait_timeout = %d", lockWaitTimeout),
			"SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
			"START TRANSACTION",
		} {
			_, err := c.ExecContext(ctx, q)
			require.NoError(t, err, q)
		}
	}

	var logStart int64
	logPath := ""
	if sc.errorLog {
		logPath = srv.log(t)
		require.NotEmpty(t, logPath, "the %s server is external: its error log is not ours to read", srv.name)
		logStart = fileSize(t, logPath)
	}

	// Statements still running: a waiting step goes on while the next
	// steps run, and ends when the deadlock is resolved. Every statement
	// reports on finished when it ends.
	type inflight struct {
		step int
		done chan struct{}
		err  error
	}
	finished := make(chan *inflight, len(sc.steps))
	pending := map[*inflight]bool{}
	var results []outcome
	for i, st := range sc.steps {
		q := st.sql(srv.flavor)
		f := &inflight{step: i, done: make(chan struct{})}
		c := conns[st.session]
		go func() {
			_, f.err = c.ExecContext(ctx, q)
			close(f.done)
			finished <- f
		}()
		last := i == len(sc.steps)-1
		switch {
		case st.wait:
			waitForLockWait(ctx, t, db, srv.flavor, r.connIDs[st.session], f.done, q)
			pending[f] = true
		case last:
			pending[f] = true
		default:
			<-f.done
			// The deadlock is expected only once the last step closes the
			// cycle: an earlier failure means the interleaving is not the
			// one described.
			require.NoError(t, f.err, "step %d (session %c): %s", i+1, 'A'+st.session, q)
		}
	}
	// Once the victim is rolled back, a survivor's statement goes on, but
	// its transaction still holds its earlier locks, which another
	// survivor may be waiting for (in a cycle of three, A waits for B
	// after C, the victim, is gone): each session is rolled back as soon
	// as its last statement ends, so that every wait ends.
	for len(pending) > 0 {
		var f *inflight
		select {
		case f = <-finished:
		case <-ctx.Done():
			t.Fatalf("statements still waiting after the deadlock: %v", ctx.Err())
		}
		if !pending[f] {
			continue
		}
		delete(pending, f)
		results = append(results, outcome{step: f.step, err: f.err})
		c := conns[sc.steps[f.step].session]
		var me *gomysql.MySQLError
		if srv.flavor == lockview.MariaDB && errors.As(f.err, &me) && me.Number == sc.victimError() {
			// The victim's whole transaction is gone, not only its
			// statement (which matters for 1467, an error that on its own
			// would roll back only the statement). @@in_transaction is
			// MariaDB's; MySQL has no such variable.
			var open int
			require.NoError(t, c.QueryRowContext(ctx, "SELECT @@in_transaction").Scan(&open))
			require.Zero(t, open, "the victim's transaction is still open after error %d", me.Number)
		}
		_, err := c.ExecContext(ctx, "ROLLBACK")
		require.NoError(t, err)
	}
	for _, o := range results {
		var me *gomysql.MySQLError
		switch {
		case o.err == nil:
		case errors.As(o.err, &me) && me.Number == sc.victimError():
			r.victims = append(r.victims, sc.steps[o.step].session)
		default:
			t.Fatalf("step %d (session %c): %v", o.step+1, 'A'+sc.steps[o.step].session, o.err)
		}
	}

	r.report = latestDeadlock(ctx, t, admin)
	if sc.errorLog {
		r.errorLog = errorLogBlock(ctx, t, logPath, logStart)
	}
	return r
}

// waitForLockWait returns once the server shows session conn waiting for a
// lock (INNODB_TRX/INNODB_LOCK_WAITS on MariaDB, data_lock_waits on MySQL,
// through lockview), and fails the test if the statement finishes instead.
func waitForLockWait(ctx context.Context, t *testing.T, db *sql.DB, f lockview.Flavor, conn int64, done <-chan struct{}, q string) {
	t.Helper()
	finished := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	ws, err := lockview.WaitFor(ctx, db, f, func(w lockview.Wait) bool { return w.WaiterID == conn }, finished)
	require.NoError(t, err, "waiting for session %d to wait: %s", conn, q)
	require.NotNil(t, ws, "session %d finished without waiting for a lock: %s", conn, q)
}

// showCreate returns SHOW CREATE TABLE of the scenario's tables, each
// ending in ";", as a user would paste them for --schema.
func showCreate(ctx context.Context, t *testing.T, db *sql.DB, sc scenario) string {
	t.Helper()
	var b strings.Builder
	for _, name := range sc.tableNames() {
		var tbl, stmt string
		require.NoError(t, db.QueryRowContext(ctx, "SHOW CREATE TABLE `"+name+"`").Scan(&tbl, &stmt))
		b.WriteString(stmt)
		b.WriteString(";\n\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// latestDeadlock returns SHOW ENGINE INNODB STATUS's LATEST DETECTED
// DEADLOCK section, from its upper rule to the end of the report (the
// TRANSACTIONS section's rule excluded). The status is server-wide: the
// scenarios of one server run one after another, so the latest is ours.
func latestDeadlock(ctx context.Context, t *testing.T, admin *sql.DB) string {
	t.Helper()
	var typ, name, status string
	require.NoError(t, admin.QueryRowContext(ctx, "SHOW ENGINE INNODB STATUS").Scan(&typ, &name, &status))
	const head = "------------------------\nLATEST DETECTED DEADLOCK\n"
	i := strings.Index(status, head)
	require.GreaterOrEqual(t, i, 0, "no LATEST DETECTED DEADLOCK section in SHOW ENGINE INNODB STATUS:\n%s", status)
	rest := status[i:]
	j := strings.Index(rest, "\n------------\nTRANSACTIONS\n")
	require.Greater(t, j, 0, "no TRANSACTIONS section after LATEST DETECTED DEADLOCK")
	return rest[:j+1]
}

// errorLogBlock returns the deadlock block InnoDB wrote to the error log
// after offset from: the line announcing it through the WE ROLL BACK line,
// prefixes included. InnoDB writes it before the victim's error reaches
// the client, but the log is polled (with a deadline) rather than trusted
// to be flushed.
func errorLogBlock(ctx context.Context, t *testing.T, path string, from int64) string {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		b = b[min(from, int64(len(b))):]
		if i := bytes.Index(b, []byte("Transactions deadlock detected")); i >= 0 {
			start := bytes.LastIndexByte(b[:i], '\n') + 1
			rest := b[start:]
			if j := bytes.Index(rest, []byte("WE ROLL BACK TRANSACTION")); j >= 0 {
				if k := bytes.IndexByte(rest[j:], '\n'); k >= 0 {
					return string(rest[:j+k+1])
				}
			}
		}
		select {
		case <-deadline.C:
			t.Fatalf("no complete deadlock block in %s after offset %d", path, from)
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Size()
}
