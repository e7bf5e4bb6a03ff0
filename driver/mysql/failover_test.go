package mysql_test

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/migrate"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// syncBuffer is a log destination the pool's goroutines may write to while
// the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// nodeName is the Galera node a statement through drv runs on, retried as
// the queue retries its units of work, so that a connection a dead or
// refusing node left in the pool is dropped and replaced.
func nodeName(t *testing.T, drv *mysql.Driver) string {
	t.Helper()
	ctx := context.Background()
	var name string
	var err error
	for range 20 {
		// A statement that reads a table: a node cut off from the
		// cluster still answers one that does not.
		var n int
		err = drv.DB().QueryRowContext(ctx, "SELECT @@wsrep_node_name, COUNT(*) FROM lockstep_jobs").Scan(&name, &n)
		if err == nil {
			return name
		}
		kind := drv.ClassifyError(err)
		require.True(t, kind == rowtype.ErrorConnection || kind == rowtype.ErrorUnavailable,
			"only a lost connection or a refusing node may fail the statement: %v (%v)", err, kind)
	}
	require.NoError(t, err)
	return name
}

// TestFailoverAcrossGaleraNodes opens the driver on a DSN naming the three
// nodes of a cluster of the test's own: its connections go to the first;
// when that node is cut off from the cluster (it then refuses statements
// with error 1047, classified as unavailable), the pool drops them and
// connects to the second, and stays there when the first has rejoined;
// when the second is killed with SIGKILL, it moves to the first ready
// host in the DSN's order, the first. Each move is logged.
func TestFailoverAcrossGaleraNodes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := testdb.StartGaleraCluster(ctx, testdb.ServerOptions{Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	dsns, err := c.NewDatabase(ctx)
	require.NoError(t, err)
	url, err := testdb.MultiHostURL(dsns)
	require.NoError(t, err)

	var logs syncBuffer
	drv, err := mysql.OpenWith(ctx, url, mysql.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	m, err := migrate.New(drv)
	require.NoError(t, err)
	_, err = m.Up(ctx)
	require.NoError(t, err)
	require.Equal(t, "node1", nodeName(t, drv))

	ids, err := drv.Executor().JobInsertMany(ctx, []driver.JobInsertParams{{Queue: "q", Kind: "k", Args: []byte("{}")}})
	require.NoError(t, err)
	require.Len(t, ids, 1)

	// Cut node 1 off: it leaves the primary component and refuses every
	// statement with 1047 until it is let back in.
	admin1, err := sql.Open("mysql", c.Node(0).AdminDSN())
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin1.Close() })
	_, err = admin1.ExecContext(ctx, "SET GLOBAL wsrep_provider_options = 'gmcast.isolate=1'")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, ready, err := c.State(ctx, 0)
		return err == nil && !ready
	}, time.Minute, 50*time.Millisecond, "node 1 stops being ready")
	// What the node answers, classified by its code.
	var n int
	err = admin1.QueryRowContext(ctx, "SELECT COUNT(*) FROM mysql.user").Scan(&n)
	require.Error(t, err)
	require.Equal(t, rowtype.ErrorUnavailable, drv.ClassifyError(err), "%v", err)
	require.Equal(t, "node2", nodeName(t, drv))
	require.Contains(t, logs.String(), "moved to another host")
	require.Contains(t, logs.String(), "not ready")

	// The queue works through node 2: the job inserted through node 1 is
	// there, and is claimed once.
	claimed, err := drv.Executor().JobClaim(ctx, &driver.JobClaimParams{Queue: "q", Max: 5})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.Equal(t, ids[0], claimed[0].ID)

	// Let node 1 back in; then kill node 2 under the pool: its broken
	// connections are dropped and the new ones go to the first host that
	// is ready, node 1 again.
	_, err = admin1.ExecContext(ctx, "SET GLOBAL wsrep_provider_options = 'gmcast.isolate=0'")
	require.NoError(t, err)
	require.NoError(t, c.WaitSynced(ctx, 0))
	require.Equal(t, "node2", nodeName(t, drv), "the pool stays on its host while it is ready")
	require.NoError(t, c.Node(1).Kill())
	require.Equal(t, "node1", nodeName(t, drv), "then the first ready host in the DSN's order")
	require.Contains(t, logs.String(), "from="+c.Node(1).Addr())
	require.NoError(t, c.StartNode(ctx, 1))
}

// TestMultiHostSkipsRefusedHost: a DSN whose first host refuses connections
// (nothing listens there) connects to the next, and a DSN where no host
// can be reached says so for each.
func TestMultiHostSkipsRefusedHost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testdb.MySQL(t)
	url, err := testdb.MultiHostURL([]string{mustWithAddr(t, dsn, testdb.ClosedAddr(t)), dsn})
	require.NoError(t, err)
	drv, err := mysql.Open(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	var one int
	require.NoError(t, drv.DB().QueryRowContext(ctx, "SELECT 1").Scan(&one))
	require.Equal(t, 1, one)

	closed := mustWithAddr(t, dsn, testdb.ClosedAddr(t))
	url, err = testdb.MultiHostURL([]string{closed, closed})
	require.NoError(t, err)
	_, err = mysql.Open(ctx, url)
	require.Error(t, err)
	require.Contains(t, err.Error(), "no host of 2 can take writes")
	require.Equal(t, 2, strings.Count(err.Error(), "connection refused"), "%v", err)
}

func mustWithAddr(t *testing.T, dsn, addr string) string {
	t.Helper()
	out, err := testdb.DSNWithAddr(dsn, addr)
	require.NoError(t, err)
	return out
}
