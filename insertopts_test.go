package lockstep_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// reportArgs is a kind with its own insert-time defaults.
type reportArgs struct{ Day string }

func (reportArgs) Kind() string { return "report" }
func (reportArgs) InsertOpts() lockstep.InsertOpts {
	return lockstep.InsertOpts{Queue: "reports", Priority: 5, MaxAttempts: 3, Delay: time.Hour}
}

type runDefaultArgs struct{}

func (runDefaultArgs) Kind() string                    { return "run_default" }
func (runDefaultArgs) InsertOpts() lockstep.InsertOpts { return lockstep.InsertOpts{RunID: 7} }

// TestKindInsertOpts: a kind's defaults apply where the enqueue leaves a
// field unset, the enqueue's own options win, and a default that names a
// run is refused — on each database, as stored.
func TestKindInsertOpts(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		c, err := lockstep.NewClient(drv, lockstep.Config{MaxAttempts: 25})
		require.NoError(t, err)

		before := time.Now()
		idRes, err := c.Insert(ctx, reportArgs{Day: "2026-11-30"}, nil)
		require.NoError(t, err)
		id := idRes.ID
		j, err := c.Job(ctx, id)
		require.NoError(t, err)
		require.Equal(t, "reports", j.Queue)
		require.Equal(t, 5, j.Priority)
		require.Equal(t, 3, j.MaxAttempts)
		require.WithinDuration(t, before.Add(time.Hour), j.AvailableAt, time.Minute, "the kind's delay")

		at := time.Now().Add(10 * time.Minute).UTC().Truncate(time.Second)
		idRes, err = c.Insert(ctx, reportArgs{}, &lockstep.InsertOpts{Queue: "urgent", Priority: -1, MaxAttempts: 9, ScheduledAt: at})
		require.NoError(t, err)
		id = idRes.ID
		j, err = c.Job(ctx, id)
		require.NoError(t, err)
		require.Equal(t, "urgent", j.Queue)
		require.Equal(t, -1, j.Priority)
		require.Equal(t, 9, j.MaxAttempts)
		require.WithinDuration(t, at, j.AvailableAt, time.Second, "ScheduledAt replaces the kind's delay")

		idRes, err = c.Insert(ctx, existingArgs{}, nil)
		require.NoError(t, err)
		id = idRes.ID
		j, err = c.Job(ctx, id)
		require.NoError(t, err)
		require.Equal(t, lockstep.DefaultQueue, j.Queue, "a kind without defaults")
		require.Equal(t, 25, j.MaxAttempts)

		before2 := testdb.TakeSnapshot(t, drv.DB())
		_, err = c.Insert(ctx, runDefaultArgs{}, nil)
		requireInvalid(t, err, "InsertOpts must not name a RunID")
		require.Equal(t, before2, testdb.TakeSnapshot(t, drv.DB()))
	})
}
