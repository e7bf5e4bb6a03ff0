package cli

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/dashboard"
	"github.com/lockstep-queue/lockstep/internal/dsn"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// TestReadDSN: `stats --read-dsn` reads the counts from a PostgreSQL
// standby, and says how far it is behind; the dashboard given a reader on
// the standby shows its pages from it, with the lag, while an action goes
// to the primary. A SQLite file or a database of another kind is refused
// as a replica.
func TestReadDSN(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pair, err := testdb.StartPostgresPair(ctx, testdb.ServerOptions{Logf: t.Logf}, true)
	require.NoError(t, err)
	t.Cleanup(func() { _ = pair.Close() })
	primary, standby, err := pair.NewDatabase(ctx)
	require.NoError(t, err)

	code, _, errOut := runCLI(t, "--dsn", primary, "migrate", "up")
	require.Equal(t, 0, code, errOut)
	for range 3 {
		code, _, errOut = runCLI(t, "--dsn", primary, "enqueue", "mail", "--queue", "mail")
		require.Equal(t, 0, code, errOut)
	}

	// Synchronous replication: a commit the primary acknowledged is on
	// the standby (remote_flush), and replayed soon after.
	var out statsOut
	require.Eventually(t, func() bool {
		code, stdout, _ := runCLI(t, "--dsn", primary, "stats", "--read-dsn", standby, "--json")
		if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil || len(out.Queues) != 1 {
			return false
		}
		return out.Queues[0].Counts["PENDING"].N == 3
	}, time.Minute, 50*time.Millisecond, "the standby's stats show the 3 jobs")
	require.NotNil(t, out.ReplicaLagSeconds)
	require.GreaterOrEqual(t, *out.ReplicaLagSeconds, 0.0)
	code, stdout, errOut := runCLI(t, "--dsn", primary, "stats", "--read-dsn", standby)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, stdout, "read from the --read-dsn replica")

	// The dashboard: pages from the standby, the lag shown, an action on
	// the primary.
	drv, err := dsn.Open(ctx, primary)
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	rdrv, err := dsn.Open(ctx, standby)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rdrv.Close() })
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	require.NoError(t, err)
	reader, err := lockstep.NewClient(rdrv, lockstep.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	lag, err := dashboard.ReplicaLag(rdrv.DB(), rdrv.Dialect())
	require.NoError(t, err)
	dash, err := dashboard.New(dashboard.Config{Client: client, Reader: reader, ReplicaLag: lag})
	require.NoError(t, err)
	srv := httptest.NewServer(dash)
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/queues/table")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	require.Contains(t, string(body), "These pages read from a replica,")
	require.Contains(t, string(body), `data-testid="queue-mail"`)

	// The standby refuses writes: the pages' reads must not be writes.
	_, err = reader.InsertMany(ctx, []lockstep.InsertManyParams{{Args: lockstep.RawArgs{KindName: "mail", JSON: []byte("{}")}}})
	require.Error(t, err)
	require.Equal(t, lockstep.ErrorUnavailable, lockstep.ErrorKindOf(err), "a standby's refusal is classified: %v", err)

	code, _, errOut = runCLI(t, "--dsn", primary, "stats", "--read-dsn", "sqlite:"+filepath.Join(t.TempDir(), "x.db"))
	require.Equal(t, 1, code)
	require.True(t, strings.Contains(errOut, "--read-dsn"), errOut)
}
