package mysql_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/migrate"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// TestLimitedClaimStandsWhenItsKeysFail: a limited claim commits, then
// creates the rows of keys it met for the first time; when that fails
// (here a trigger refuses the insert; on a Galera cluster a certification
// conflict does), the claim still stands: its jobs come back with a
// *driver.ReleaseError, so that the caller runs them instead of retrying
// the claim and leaving them RUNNING for the reaper.
func TestLimitedClaimStandsWhenItsKeysFail(t *testing.T) {
	forEachFlavor(t, func(t *testing.T, f serverFlavor) {
		ctx := context.Background()
		drv := openFlavor(t, f)
		m, err := migrate.New(drv)
		require.NoError(t, err)
		_, err = m.Up(ctx)
		require.NoError(t, err)
		exec := drv.Executor()
		lim := rowtype.QueueLimits{KeyConcurrency: 1}
		require.NoError(t, exec.QueueSetLimits(ctx, "q", lim))
		params := &driver.JobClaimParams{Queue: "q", Max: 5, Limits: lim}

		// Key a is met once: the claim passes its job over and creates
		// its row after committing.
		first, err := exec.JobInsertMany(ctx, []driver.JobInsertParams{{Queue: "q", Kind: "k", Args: []byte("{}"), LimitKey: "a"}})
		require.NoError(t, err)
		c, err := exec.JobClaimLimited(ctx, params)
		require.NoError(t, err)
		require.Empty(t, c.Jobs)

		_, err = drv.DB().ExecContext(ctx, "CREATE TRIGGER refuse_keys BEFORE INSERT ON lockstep_limit_keys FOR EACH ROW "+
			"SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'no new keys'")
		require.NoError(t, err)
		_, err = exec.JobInsertMany(ctx, []driver.JobInsertParams{{Queue: "q", Kind: "k", Args: []byte("{}"), LimitKey: "b"}})
		require.NoError(t, err)
		c, err = exec.JobClaimLimited(ctx, params)
		var rel *driver.ReleaseError
		require.True(t, errors.As(err, &rel), "the failure after the commit is a ReleaseError: %v", err)
		require.NotNil(t, c)
		require.Len(t, c.Jobs, 1, "the claim stands")
		require.Equal(t, first[0], c.Jobs[0].ID)
		j, err := exec.JobGet(ctx, first[0])
		require.NoError(t, err)
		require.Equal(t, rowtype.StatusRunning, j.Status)
	})
}
