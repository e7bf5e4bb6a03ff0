package drivertest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/rowtype"
)

// testHistory: the history rollup's upsert adds to what is there, a range
// reads by bucket and filters, and the prune deletes old minutes in
// batches.
func testHistory(t *testing.T, newDriver Factory) {
	ctx := context.Background()
	drv := setup(t, newDriver)
	ex := drv.Executor()
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	row := func(min int, queue, kind string, done, failed int64) rowtype.HistoryRow {
		return rowtype.HistoryRow{Bucket: t0.Add(time.Duration(min) * time.Minute), Queue: queue, Kind: kind, Done: done, Failed: failed, Retried: 1, Cancelled: 2, RunMillis: 10 * done}
	}
	// Out of key order, and twice: the second adds.
	require.NoError(t, ex.HistoryAdd(ctx, []rowtype.HistoryRow{row(1, "b", "k", 3, 1), row(0, "a", "k", 1, 0), row(1, "a", "k", 2, 0)}))
	require.NoError(t, ex.HistoryAdd(ctx, []rowtype.HistoryRow{row(1, "b", "k", 4, 0)}))
	got, err := ex.HistoryRange(ctx, &rowtype.HistoryParams{Since: t0})
	require.NoError(t, err)
	require.Equal(t, []rowtype.HistoryRow{
		{Bucket: t0, Queue: "a", Kind: "k", Done: 1, Retried: 1, Cancelled: 2, RunMillis: 10},
		{Bucket: t0.Add(time.Minute), Queue: "a", Kind: "k", Done: 2, Retried: 1, Cancelled: 2, RunMillis: 20},
		{Bucket: t0.Add(time.Minute), Queue: "b", Kind: "k", Done: 7, Failed: 1, Retried: 2, Cancelled: 4, RunMillis: 70},
	}, got)
	// Filters and bounds.
	got, err = ex.HistoryRange(ctx, &rowtype.HistoryParams{Since: t0, Queue: "b", Kind: "k"})
	require.NoError(t, err)
	require.Len(t, got, 1)
	got, err = ex.HistoryRange(ctx, &rowtype.HistoryParams{Since: t0, Until: t0.Add(time.Minute)})
	require.NoError(t, err)
	require.Len(t, got, 1)
	got, err = ex.HistoryRange(ctx, &rowtype.HistoryParams{Since: t0, Kind: "other"})
	require.NoError(t, err)
	require.Empty(t, got)

	// Prune: 10 minutes of 3 rows; batches of about 4 rows delete whole
	// minutes (the bound's minute entirely), never a minute at or after
	// the cutoff.
	var many []rowtype.HistoryRow
	for m := 10; m < 20; m++ {
		for _, q := range []string{"a", "b", "c"} {
			many = append(many, row(m, q, "k", 1, 0))
		}
	}
	require.NoError(t, ex.HistoryAdd(ctx, many))
	cutoff := t0.Add(15*time.Minute + 30*time.Second)
	var total int64
	for range 20 {
		n, err := ex.HistoryPrune(ctx, cutoff, 4)
		require.NoError(t, err)
		require.LessOrEqual(t, n, int64(6), "a batch deletes about max rows: the bound's minute whole")
		total += n
		if n == 0 {
			break
		}
	}
	require.Equal(t, int64(3+6*3), total)
	got, err = ex.HistoryRange(ctx, &rowtype.HistoryParams{Since: t0})
	require.NoError(t, err)
	require.Len(t, got, 4*3)
	require.Equal(t, t0.Add(16*time.Minute), got[0].Bucket)
}
