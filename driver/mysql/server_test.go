package mysql_test

// The code paths that differ between MariaDB and Oracle MySQL, each proven
// against the real server: how a batch insert learns its ids, the codes a
// lock wait, an idle timeout and a shutdown arrive with, the unique-key
// generated column, the JSON functions and the clock of the catalogue.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/drivertest"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// withParam adds a session variable to a go-sql-driver DSN; the driver
// sets it with SET on every new connection.
func withParam(dsn, name, value string) string {
	return dsn + "&" + name + "=" + url.QueryEscape(value)
}

// TestInsertManyIDsUnderConcurrency: many InsertMany calls at once, each
// of several batches (one crosses the executor's 1000-row batch), on
// sessions whose auto_increment_increment is 1 and 3. Oracle MySQL has no
// INSERT … RETURNING: the ids are computed from LastInsertId and the
// step, on a server whose default innodb_autoinc_lock_mode is 2
// (interleaved). MariaDB returns them. Each row's args carry a marker
// unique to the call and position; every returned id must name the row
// with that marker.
func TestInsertManyIDsUnderConcurrency(t *testing.T) {
	forEachFlavor(t, func(t *testing.T, f serverFlavor) {
		for _, step := range []int{1, 3} {
			t.Run(fmt.Sprintf("increment%d", step), func(t *testing.T) {
				testInsertManyIDs(t, f, step)
			})
		}
	})
}

func testInsertManyIDs(t *testing.T, f serverFlavor, step int) {
	ctx := context.Background()
	drv, err := mysql.Open(ctx, withParam(f.dsn(t), "auto_increment_increment", fmt.Sprint(step)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	drivertest.Migrate(t, drv)
	var mode, incr int
	require.NoError(t, drv.DB().QueryRowContext(ctx, "SELECT @@innodb_autoinc_lock_mode, @@auto_increment_increment").Scan(&mode, &incr))
	require.Equal(t, step, incr, "the session takes the DSN's increment")
	t.Logf("%s: innodb_autoinc_lock_mode=%d, auto_increment_increment=%d", f.name, mode, incr)
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	require.NoError(t, err)

	const callers = 6
	sizes := []int{1, 9, 300, 1001}
	start := make(chan struct{})
	want := map[int64]string{} // id → the marker its row must carry
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for g := range callers {
		wg.Go(func() {
			<-start
			for c, n := range sizes {
				params := make([]lockstep.InsertManyParams, n)
				markers := make([]string, n)
				for i := range params {
					markers[i] = fmt.Sprintf("g%d-c%d-i%d", g, c, i)
					params[i] = lockstep.InsertManyParams{Args: lockstep.RawArgs{KindName: "marked", JSON: json.RawMessage(`{"m":"` + markers[i] + `"}`)}}
				}
				res, err := client.InsertMany(ctx, params)
				if err != nil {
					errs <- fmt.Errorf("caller %d, call %d: %w", g, c, err)
					return
				}
				mu.Lock()
				for i, r := range res {
					if prev, dup := want[r.ID]; dup {
						mu.Unlock()
						errs <- fmt.Errorf("id %d returned for %s and for %s", r.ID, prev, markers[i])
						return
					}
					want[r.ID] = markers[i]
				}
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	total := 0
	for _, n := range sizes {
		total += n
	}
	require.Len(t, want, callers*total)

	rows, err := drv.DB().QueryContext(ctx, "SELECT id, args FROM lockstep_jobs")
	require.NoError(t, err)
	defer rows.Close()
	got := map[int64]string{}
	for rows.Next() {
		var id int64
		var args string
		require.NoError(t, rows.Scan(&id, &args))
		var a struct{ M string }
		require.NoError(t, json.Unmarshal([]byte(args), &a), "row %d: %s", id, args)
		got[id] = a.M
	}
	require.NoError(t, rows.Err())
	require.Len(t, got, len(want), "one row per returned id")
	for id, m := range want {
		require.Equal(t, m, got[id], "row %d", id)
	}
}

// TestNowaitIsLockTimeout: FOR UPDATE NOWAIT on a locked row fails at
// once, with 1205 on MariaDB and 3572 on Oracle MySQL; both are
// ErrorLockTimeout by code, and on both only the statement is rolled
// back: the transaction and its earlier writes survive.
func TestNowaitIsLockTimeout(t *testing.T) {
	forEachFlavor(t, func(t *testing.T, f serverFlavor) {
		ctx := context.Background()
		drv := openFlavor(t, f)
		db := drv.DB()
		twoRowTable(t, db)
		holder, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer holder.Rollback()
		_, err = holder.ExecContext(ctx, "SELECT id FROM pair WHERE id = 1 FOR UPDATE")
		require.NoError(t, err)

		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer tx.Rollback()
		_, err = tx.ExecContext(ctx, "UPDATE pair SET v = 7 WHERE id = 2")
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, "SELECT id FROM pair WHERE id = 1 FOR UPDATE NOWAIT")
		require.Error(t, err)
		requireCode(t, err, f.nowaitCode)
		require.Equal(t, rowtype.ErrorLockTimeout, drv.ClassifyError(err))
		var v int
		require.NoError(t, tx.QueryRowContext(ctx, "SELECT v FROM pair WHERE id = 2").Scan(&v))
		require.Equal(t, 7, v, "the transaction is still open, its write still there")

		// SKIP LOCKED, which the claim uses, passes the locked row by.
		var ids []int
		rows, err := tx.QueryContext(ctx, "SELECT id FROM pair ORDER BY id FOR UPDATE SKIP LOCKED")
		require.NoError(t, err)
		for rows.Next() {
			var id int
			require.NoError(t, rows.Scan(&id))
			ids = append(ids, id)
		}
		require.NoError(t, rows.Err())
		require.Equal(t, []int{2}, ids)
	})
}

// TestUniqueActiveColumn: the stored generated column holds the key only
// while the job's status is in its unique states, so the unique index
// refuses a second holder and takes the key back once the job leaves
// those states; the index is descending on both servers.
func TestUniqueActiveColumn(t *testing.T) {
	forEachFlavor(t, func(t *testing.T, f serverFlavor) {
		ctx := context.Background()
		drv := openFlavor(t, f)
		drivertest.Migrate(t, drv)
		db := drv.DB()
		ex := drv.Executor()

		var extra, collation string
		require.NoError(t, db.QueryRowContext(ctx, "SELECT EXTRA FROM information_schema.COLUMNS"+
			" WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'lockstep_jobs' AND COLUMN_NAME = 'unique_active'").Scan(&extra))
		require.Contains(t, extra, "STORED GENERATED")
		require.NoError(t, db.QueryRowContext(ctx, "SELECT COLLATION FROM information_schema.STATISTICS"+
			" WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'lockstep_jobs' AND INDEX_NAME = 'lockstep_jobs_unique'").Scan(&collation))
		require.Equal(t, "D", collation, "the unique index is descending")

		active := func(id int64) sql.NullString {
			t.Helper()
			var s sql.NullString
			require.NoError(t, db.QueryRowContext(ctx, "SELECT unique_active FROM lockstep_jobs WHERE id = ?", id).Scan(&s))
			return s
		}
		p := driver.JobInsertParams{Queue: "q", Kind: "k", Args: []byte(`{}`), MaxAttempts: 3, UniqueKey: "6b6579",
			UniqueStates: driver.UniqueStateBit(rowtype.StatusPending) | driver.UniqueStateBit(rowtype.StatusRunning)}
		first, err := ex.JobInsertUnique(ctx, 0, p)
		require.NoError(t, err)
		require.False(t, first.Duplicate)
		require.Equal(t, sql.NullString{String: "6b6579", Valid: true}, active(first.ID))

		dup, err := ex.JobInsertUnique(ctx, 0, p)
		require.NoError(t, err)
		require.Equal(t, driver.UniqueInsertResult{ID: first.ID, Duplicate: true}, dup)
		// Giving another PENDING job the key is the server's 1062,
		// classified by code.
		other, err := ex.JobInsertMany(ctx, []driver.JobInsertParams{{Queue: "q2", Kind: "k", Args: []byte(`{}`), MaxAttempts: 3}})
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, "UPDATE lockstep_jobs SET unique_key = ?, unique_states = 1 WHERE id = ?", p.UniqueKey, other[0])
		requireCode(t, err, 1062)
		require.Equal(t, rowtype.ErrorDuplicate, drv.ClassifyError(err))

		claimed, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "q", Max: 1})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.Equal(t, "6b6579", active(first.ID).String, "RUNNING is a unique state")
		ok, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: first.ID, Attempt: 1, Status: rowtype.StatusDone})
		require.NoError(t, err)
		require.True(t, ok)
		require.False(t, active(first.ID).Valid, "DONE is not: the key is released")

		again, err := ex.JobInsertUnique(ctx, 0, p)
		require.NoError(t, err)
		require.False(t, again.Duplicate)
		require.NotEqual(t, first.ID, again.ID)
		holder, err := ex.JobIDByUniqueKey(ctx, p.UniqueKey)
		require.NoError(t, err)
		require.Equal(t, again.ID, holder)
	})
}

// TestJSONFunctions: the history JSON_MERGE_PRESERVE appends to (a
// LONGTEXT column, not a JSON one) stays a valid array in attempt order,
// with quotes, backslashes, newlines and non-ASCII text intact; metadata
// and output come back as they went in.
func TestJSONFunctions(t *testing.T) {
	forEachFlavor(t, func(t *testing.T, f serverFlavor) {
		ctx := context.Background()
		drv := openFlavor(t, f)
		drivertest.Migrate(t, drv)
		ex := drv.Executor()
		meta := `{"tags":["a","b"],"n":1.5,"s":"é \"q\""}`
		ids, err := ex.JobInsertMany(ctx, []driver.JobInsertParams{
			{Queue: "q", Kind: "k", Args: []byte(`{"x":1}`), MaxAttempts: 3, Metadata: []byte(meta)},
		})
		require.NoError(t, err)
		id := ids[0]
		messages := []string{`he said "no"`, "line one\nline two\t\\ back", "ünïcødé ✓ 日本"}
		for attempt, msg := range messages {
			claimed, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "q", Max: 1})
			require.NoError(t, err)
			require.Len(t, claimed, 1)
			p := &driver.JobFinishParams{ID: id, Attempt: attempt + 1, Status: rowtype.StatusPending, RetryAfter: -time.Second, Error: msg}
			if attempt == len(messages)-1 {
				p.Status = rowtype.StatusFailed
			}
			ok, err := ex.JobFinish(ctx, p)
			require.NoError(t, err)
			require.True(t, ok)
		}
		j, err := ex.JobGet(ctx, id)
		require.NoError(t, err)
		require.Equal(t, rowtype.StatusFailed, j.Status)
		require.Len(t, j.Errors, len(messages))
		for i, e := range j.Errors {
			require.Equal(t, i+1, e.Attempt)
			require.Equal(t, messages[i], e.Error)
		}
		require.JSONEq(t, meta, string(j.Metadata))
		var valid, length int
		require.NoError(t, drv.DB().QueryRowContext(ctx, "SELECT JSON_VALID(error_history), JSON_LENGTH(error_history) FROM lockstep_jobs WHERE id = ?", id).Scan(&valid, &length))
		require.Equal(t, 1, valid)
		require.Equal(t, len(messages), length)

		out := `{"rows":[1,2,3],"ok":true}`
		ids, err = ex.JobInsertMany(ctx, []driver.JobInsertParams{{Queue: "o", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1}})
		require.NoError(t, err)
		claimed, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "o", Max: 1})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		ok, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: ids[0], Attempt: 1, Status: rowtype.StatusDone, Output: []byte(out)})
		require.NoError(t, err)
		require.True(t, ok)
		j, err = ex.JobGet(ctx, ids[0])
		require.NoError(t, err)
		require.JSONEq(t, out, string(j.Output))
		require.Empty(t, j.Errors)
	})
}

// TestServerClockIsUTC: on a session whose time_zone is not UTC, the
// times the catalogue writes (UTC_TIMESTAMP(6), plus INTERVAL …
// MICROSECOND for a backoff) agree with Go's clock in UTC, and a time
// the caller gives comes back to the microsecond.
func TestServerClockIsUTC(t *testing.T) {
	forEachFlavor(t, func(t *testing.T, f serverFlavor) {
		ctx := context.Background()
		drv, err := mysql.Open(ctx, withParam(f.dsn(t), "time_zone", "'+05:00'"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = drv.Close() })
		drivertest.Migrate(t, drv)
		ex := drv.Executor()
		var offset int
		require.NoError(t, drv.DB().QueryRowContext(ctx, "SELECT TIMESTAMPDIFF(MINUTE, UTC_TIMESTAMP(6), NOW(6))").Scan(&offset))
		require.Equal(t, 300, offset, "the session's NOW() is five hours off UTC, so the test means something")

		// The server's statement time lies between two readings of Go's
		// clock (one machine, one clock), at microsecond precision.
		between := func(got, before, after time.Time, what string) {
			t.Helper()
			require.Equal(t, time.UTC, got.Location(), what)
			lo, hi := before.Truncate(time.Microsecond), after.Truncate(time.Microsecond).Add(time.Microsecond)
			require.False(t, got.Before(lo) || got.After(hi), "%s %s is not within [%s, %s]", what, got, lo, hi)
		}
		scheduled := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
		before := time.Now()
		ids, err := ex.JobInsertMany(ctx, []driver.JobInsertParams{
			{Queue: "q", Kind: "k", Args: []byte(`{}`), MaxAttempts: 3},
			{Queue: "later", Kind: "k", Args: []byte(`{}`), MaxAttempts: 3, ScheduledAt: scheduled},
		})
		after := time.Now()
		require.NoError(t, err)
		now, err := ex.JobGet(ctx, ids[0])
		require.NoError(t, err)
		between(now.CreatedAt, before, after, "created_at")
		between(now.AvailableAt, before, after, "available_at")
		later, err := ex.JobGet(ctx, ids[1])
		require.NoError(t, err)
		require.True(t, scheduled.Equal(later.AvailableAt), "scheduled %s, stored %s", scheduled, later.AvailableAt)

		claimed, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "q", Max: 1})
		require.NoError(t, err)
		require.Len(t, claimed, 1, "a job due now is due on the server's UTC clock")
		const backoff = 90*time.Minute + 1500*time.Microsecond
		before = time.Now()
		ok, err := ex.JobFinish(ctx, &driver.JobFinishParams{ID: ids[0], Attempt: 1, Status: rowtype.StatusPending, RetryAfter: backoff, Error: "again"})
		after = time.Now()
		require.NoError(t, err)
		require.True(t, ok)
		retried, err := ex.JobGet(ctx, ids[0])
		require.NoError(t, err)
		between(retried.AvailableAt, before.Add(backoff), after.Add(backoff), "available_at after the backoff")
		between(retried.HeartbeatAt, before, after, "heartbeat_at")
		none, err := ex.JobClaim(ctx, &driver.JobClaimParams{Queue: "later", Max: 1})
		require.NoError(t, err)
		require.Empty(t, none, "a job scheduled an hour ahead is not due")
	})
}

// TestIdleTimeoutIsConnectionError: a session the server closed for
// inactivity (wait_timeout) is ErrorConnection. Oracle MySQL (8.0.24 on)
// first sends error 4031, which go-sql-driver returns on the session's
// next statement; MariaDB closes the socket without a word. In a pool the
// driver notices the closed connection before using it, and the pool
// opens another: the statement succeeds. Synchronised on the session
// leaving the server's process list, not on time.
func TestIdleTimeoutIsConnectionError(t *testing.T) {
	forEachFlavor(t, func(t *testing.T, f serverFlavor) {
		ctx := context.Background()
		drv := openFlavor(t, f)
		db := drv.DB()
		conn, err := db.Conn(ctx)
		require.NoError(t, err)
		defer conn.Close()
		var id int64
		require.NoError(t, conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id))
		_, err = conn.ExecContext(ctx, "SET SESSION wait_timeout = 1")
		require.NoError(t, err)
		waitSessionGone(t, db, id)
		_, err = conn.ExecContext(ctx, "SELECT 1")
		require.Error(t, err)
		if f.idleCode != 0 {
			requireCode(t, err, f.idleCode)
		} else {
			var me *gomysql.MySQLError
			require.False(t, errors.As(err, &me), "MariaDB sends no error packet: %v", err)
		}
		require.Equal(t, rowtype.ErrorConnection, drv.ClassifyError(err), "%v", err)
		require.False(t, drv.ClassifyError(err).Retryable())

		// A pool whose sessions all time out after a second.
		pool, err := mysql.Open(ctx, withParam(f.dsn(t), "wait_timeout", "1"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = pool.Close() })
		pool.DB().SetMaxOpenConns(1)
		require.NoError(t, pool.DB().QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id))
		waitSessionGone(t, db, id)
		var again int64
		require.NoError(t, pool.DB().QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&again), "the pool replaces the closed session")
		require.NotEqual(t, id, again)
	})
}

// waitSessionGone waits until the server's process list no longer shows
// the session id.
func waitSessionGone(t *testing.T, db *sql.DB, id int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", id).Scan(&n))
		if n == 0 {
			return
		}
		require.False(t, time.Now().After(deadline), "session %d is still connected", id)
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServerShutdownIsConnectionError stops a server of the test's own
// under the driver: a session blocked in a lock wait when the server shuts
// down gets 1053 (ER_SERVER_SHUTDOWN) from Oracle MySQL and a closed
// socket from MariaDB, an idle session in a transaction a closed socket
// from both, and a pool with the server down a refused connection. Each is
// ErrorConnection; the executor reports it as a DBError of that kind; the
// pool works again once the server is back.
func TestServerShutdownIsConnectionError(t *testing.T) {
	forEachFlavor(t, func(t *testing.T, f serverFlavor) {
		if os.Getenv(f.env) != "" {
			t.Skip("an external server is configured; this test stops a server of its own")
		}
		ctx := context.Background()
		srv, err := f.start(ctx, testdb.ServerOptions{Logf: t.Logf})
		require.NoError(t, err)
		t.Cleanup(func() { _ = srv.Close() })
		dsn, err := srv.NewDatabase(ctx)
		require.NoError(t, err)
		drv, err := mysql.Open(ctx, dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = drv.Close() })
		drivertest.Migrate(t, drv)
		db := drv.DB()
		twoRowTable(t, db)

		holder, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer holder.Rollback()
		_, err = holder.ExecContext(ctx, "UPDATE pair SET v = 1 WHERE id = 1")
		require.NoError(t, err)
		waiter, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer waiter.Rollback()
		waited := make(chan error, 1)
		go func() { _, err := waiter.ExecContext(ctx, "UPDATE pair SET v = 2 WHERE id = 1"); waited <- err }()
		waitLockWait(t, db)

		require.NoError(t, srv.Stop(ctx))
		err = <-waited
		require.Error(t, err)
		if f.shutdownCode != 0 {
			requireCode(t, err, f.shutdownCode)
		} else {
			require.ErrorIs(t, err, gomysql.ErrInvalidConn)
		}
		require.Equal(t, rowtype.ErrorConnection, drv.ClassifyError(err), "%v", err)
		_, err = holder.ExecContext(ctx, "SELECT 1")
		require.Error(t, err)
		require.Equal(t, rowtype.ErrorConnection, drv.ClassifyError(err), "%v", err)

		_, err = drv.Executor().JobClaim(ctx, &driver.JobClaimParams{Queue: "q", Max: 1})
		require.Error(t, err)
		var dbe *rowtype.DBError
		require.ErrorAs(t, err, &dbe)
		require.Equal(t, rowtype.ErrorConnection, dbe.Kind, "%v", err)

		require.NoError(t, srv.Start(ctx))
		_, err = drv.Executor().JobInsertMany(ctx, []driver.JobInsertParams{{Queue: "q", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1}})
		require.NoError(t, err, "the pool reconnects once the server is back")
	})
}
