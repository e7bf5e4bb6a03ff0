package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// TestListenerProbe: a listener that hears nothing checks its connection
// every listenProbe and keeps waiting while it is alive; once its backend
// is gone, Wait reports the loss instead of blocking.
func TestListenerProbe(t *testing.T) {
	old := listenProbe
	listenProbe = 50 * time.Millisecond
	t.Cleanup(func() { listenProbe = old })
	ctx := context.Background()
	d, err := Open(ctx, testdb.Postgres(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	l, err := d.Listen(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close(context.Background()) })

	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = l.Wait(wctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "quiet but alive: Wait ends with its context")

	pid := l.(*listener).conn.PgConn().PID()
	var ok bool
	require.NoError(t, d.DB().QueryRow("SELECT pg_terminate_backend($1)", pid).Scan(&ok))
	require.True(t, ok)
	wctx, cancel = context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = l.Wait(wctx)
	require.Error(t, err)
	require.False(t, errors.Is(err, context.DeadlineExceeded), "a lost connection is reported, not waited out: %v", err)
}
