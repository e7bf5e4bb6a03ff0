package drivertest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// testTrace: the statement trace sees every catalogue statement an
// operation issues, by name, and the executor's own commit; an error from
// it aborts the operation and rolls back what it did.
func testTrace(t *testing.T, newDriver Factory) {
	ctx := context.Background()
	drv := setup(t, newDriver)
	ex := drv.Executor()
	run, err := ex.RunInsert(ctx, &driver.RunInsertParams{Name: "traced"})
	require.NoError(t, err)
	ids, err := ex.JobInsertIntoRun(ctx, run.ID, []driver.JobInsertParams{job("q", "k", 0), job("q", "k", 0)})
	require.NoError(t, err)

	var mu sync.Mutex
	var names []string
	tr := &driver.StatementTrace{Before: func(_ context.Context, name string) error {
		mu.Lock()
		defer mu.Unlock()
		names = append(names, name)
		return nil
	}}
	_, err = ex.RunCancel(driver.WithStatementTrace(ctx, tr), run.ID)
	require.NoError(t, err)
	for _, name := range names {
		if name == driver.TraceCommit {
			continue
		}
		_, ok := drv.Catalog().Lookup(name)
		require.True(t, ok, "traced %q is not a catalogue statement", name)
	}
	require.Equal(t, "run.cancel", names[0], "the run row first: %v", names)
	require.Contains(t, names, "job.cancel_many")
	require.Equal(t, driver.TraceCommit, names[len(names)-1], "%v", names)

	// An error before the commit rolls the whole cancel back.
	run2, err := ex.RunInsert(ctx, &driver.RunInsertParams{Name: "aborted"})
	require.NoError(t, err)
	ids2, err := ex.JobInsertIntoRun(ctx, run2.ID, []driver.JobInsertParams{job("q", "k", 0)})
	require.NoError(t, err)
	stop := errors.New("stop here")
	abort := &driver.StatementTrace{Before: func(_ context.Context, name string) error {
		if name == driver.TraceCommit {
			return stop
		}
		return nil
	}}
	_, err = ex.RunCancel(driver.WithStatementTrace(ctx, abort), run2.ID)
	require.ErrorIs(t, err, stop)
	j, err := ex.JobGet(ctx, ids2[0])
	require.NoError(t, err)
	require.Equal(t, rowtype.StatusPending, j.Status, "the aborted cancel was rolled back")
	r, err := ex.RunGet(ctx, run2.ID)
	require.NoError(t, err)
	require.Equal(t, rowtype.RunActive, r.Status)
	for _, id := range ids {
		j, err := ex.JobGet(ctx, id)
		require.NoError(t, err)
		require.Equal(t, rowtype.StatusCancelled, j.Status)
	}
}
