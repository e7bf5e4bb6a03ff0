package dashboard

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// TestLockMonitorIgnoresAbandonedPolls: a deadlock poll whose caller went
// away (a page load the user left) does not become the error the Locks
// page shows; a poll that timed out does.
func TestLockMonitorIgnoresAbandonedPolls(t *testing.T) {
	for _, c := range []struct {
		name string
		dsn  func(testing.TB) string
	}{
		{"MariaDB", testdb.MySQL},
		{"OracleMySQL", testdb.OracleMySQL},
	} {
		t.Run(c.name, func(t *testing.T) { testMonitorIgnoresAbandonedPolls(t, c.dsn(t)) })
	}
}

func testMonitorIgnoresAbandonedPolls(t *testing.T, dsn string) {
	ctx := context.Background()
	drv, err := mysql.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	require.NoError(t, err)
	monitor, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = monitor.Close() })
	s, err := New(Config{Client: client, DB: monitor, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)

	require.NoError(t, s.locks.pollDeadlocks(ctx))
	_, _, lastErr, lastPoll := s.locks.deadlocks()
	require.NoError(t, lastErr)
	require.False(t, lastPoll.IsZero())

	// A page load whose client is gone.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	req := httptest.NewRequestWithContext(gone, http.MethodGet, "http://127.0.0.1/locks", nil)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	require.ErrorIs(t, s.locks.pollDeadlocks(gone), context.Canceled)
	_, _, err, at := s.locks.deadlocks()
	require.NoError(t, err, "an abandoned poll is not the server's error")
	require.Equal(t, lastPoll, at, "nor a poll")

	// The next page shows no error.
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/locks", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.NotContains(t, rec.Body.String(), `data-testid="deadlocks-error"`)
	require.NotContains(t, rec.Body.String(), "context canceled")

	// A poll that ran out of time is an error worth showing.
	late, cancelLate := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancelLate()
	require.ErrorIs(t, s.locks.pollDeadlocks(late), context.DeadlineExceeded)
	_, _, err, _ = s.locks.deadlocks()
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
