package postgres_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/driver/drivertest"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

type planNode struct {
	NodeType  string     `json:"Node Type"`
	IndexName string     `json:"Index Name"`
	Plans     []planNode `json:"Plans"`
}

func (n planNode) walk(fn func(planNode)) {
	fn(n)
	for _, c := range n.Plans {
		c.walk(fn)
	}
}

// TestClaimPlan: the claim reads the partial claim index in its ORDER BY
// and no Sort node appears, with 10 and with 100,000 PENDING jobs.
func TestClaimPlan(t *testing.T) {
	ctx := context.Background()
	drv, err := postgres.Open(ctx, testdb.Postgres(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	drivertest.Migrate(t, drv)
	claim := drv.Catalog().Get(catalog.JobClaim)

	total := 0
	for _, pending := range []int{10, 100_000} {
		drivertest.FillPending(t, drv, total, pending)
		total = pending
		_, err = drv.DB().Exec("ANALYZE lockstep_jobs")
		require.NoError(t, err)

		// EXPLAIN without ANALYZE plans the UPDATE without running it.
		var raw string
		require.NoError(t, drv.DB().QueryRow("EXPLAIN (FORMAT JSON) "+claim.SQL, lockstep.DefaultQueue, 5, nil).Scan(&raw))
		var plans []struct {
			Plan planNode `json:"Plan"`
		}
		require.NoError(t, json.Unmarshal([]byte(raw), &plans))
		require.Len(t, plans, 1)
		var indexes, nodes []string
		plans[0].Plan.walk(func(n planNode) {
			nodes = append(nodes, n.NodeType)
			if n.IndexName != "" {
				indexes = append(indexes, n.NodeType+" on "+n.IndexName)
			}
		})
		t.Logf("pending=%d: nodes %v; index scans %v", pending, nodes, indexes)
		require.NotContains(t, nodes, "Sort", "pending=%d", pending)
		require.NotContains(t, nodes, "Incremental Sort", "pending=%d", pending)
		require.Contains(t, indexes, "Index Scan on lockstep_jobs_claim", "pending=%d", pending)
	}
}
