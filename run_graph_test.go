package lockstep_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
)

// TestRunGraph: a diamond with a callback reads back as its jobs and
// edges; a limit below the run's size says so; a run without dependencies
// is no workflow; a missing run is ErrNotFound.
func TestRunGraph(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		c := quietClient(t, drv, lockstep.Config{})
		step := func(key string, deps ...string) lockstep.InsertManyParams {
			return lockstep.InsertManyParams{Args: stepArgs{Name: key}, Key: key, DependsOn: deps}
		}
		run, res, err := c.InsertRun(ctx, "diamond", &lockstep.RunOpts{
			Callbacks: []lockstep.RunCallback{{On: lockstep.CallbackOnSuccess, Args: cbData{To: "ops"}}},
		}, step("d", "b", "c"), step("a"), step("b", "a"), step("c", "a"))
		require.NoError(t, err)
		d, a, b, cc := res[0].ID, res[1].ID, res[2].ID, res[3].ID

		g, err := c.RunGraph(ctx, run.ID, 0)
		require.NoError(t, err)
		require.Equal(t, run.ID, g.Run.ID)
		require.False(t, g.Truncated)
		require.True(t, g.IsWorkflow())
		require.Len(t, g.Jobs, 5)
		for i := 1; i < len(g.Jobs); i++ {
			require.Less(t, g.Jobs[i-1].ID, g.Jobs[i].ID, "lowest id first")
		}
		cb := g.Jobs[4]
		require.Equal(t, string(lockstep.CallbackOnSuccess), cb.Callback)
		require.Equal(t, lockstep.StatusWaiting, cb.Status)
		require.Equal(t, map[int64][]int64{
			b: {a}, cc: {a}, d: {b, cc},
			cb.ID: {a, b, cc, d},
		}, g.DependsOn)

		// The first two jobs by id: a and one of b, c — closed under
		// dependency, since a dependency's id is always lower.
		g, err = c.RunGraph(ctx, run.ID, 2)
		require.NoError(t, err)
		require.True(t, g.Truncated)
		require.Len(t, g.Jobs, 2)
		require.Equal(t, a, g.Jobs[0].ID)
		require.Equal(t, map[int64][]int64{g.Jobs[1].ID: {a}}, g.DependsOn)

		plain, _, err := c.InsertRun(ctx, "plain", nil, lockstep.InsertManyParams{Args: stepArgs{Name: "x"}})
		require.NoError(t, err)
		g, err = c.RunGraph(ctx, plain.ID, 0)
		require.NoError(t, err)
		require.False(t, g.IsWorkflow())
		require.Len(t, g.Jobs, 1)

		_, err = c.RunGraph(ctx, plain.ID+1000, 0)
		require.ErrorIs(t, err, lockstep.ErrNotFound)
		_, err = c.RunGraph(ctx, run.ID, lockstep.MaxRunGraphLimit+1)
		require.ErrorContains(t, err, "limit must be 1 to")
	})
}
