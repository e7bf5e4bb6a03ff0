package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/migrate"
)

// synchronous reads the connection's PRAGMA synchronous (1 NORMAL, 2 FULL).
func synchronous(t testing.TB, d *sqlite.Driver) int {
	t.Helper()
	var n int
	require.NoError(t, d.DB().QueryRow("PRAGMA synchronous").Scan(&n))
	return n
}

// TestSynchronous: Open sets synchronous=NORMAL (a commit survives the
// process's crash) unless the DSN sets the pragma itself: FULL, for a
// commit that survives a power loss.
func TestSynchronous(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for dsn, want := range map[string]int{
		filepath.Join(dir, "normal.db"):                                             1,
		"file:" + filepath.Join(dir, "full.db") + "?_pragma=synchronous(FULL)":      2,
		"file:" + filepath.Join(dir, "full2.db") + "?_pragma=SYNCHRONOUS%28full%29": 2,
	} {
		d, err := sqlite.Open(ctx, dsn)
		require.NoError(t, err, dsn)
		require.Equal(t, want, synchronous(t, d), dsn)
		require.NoError(t, d.Close())
	}
}

// BenchmarkSynchronous is the price of synchronous=FULL: each iteration
// inserts a job, claims it and writes its DONE (three commits), with the
// default NORMAL and with FULL, on a file in the test's temp directory.
//
//	go test -run '^$' -bench BenchmarkSynchronous -benchtime 2000x -count 3 ./driver/sqlite/
func BenchmarkSynchronous(b *testing.B) {
	for _, mode := range []string{"NORMAL", "FULL"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			dsn := fmt.Sprintf("file:%s?_pragma=synchronous(%s)", filepath.Join(b.TempDir(), "bench.db"), mode)
			d, err := sqlite.Open(ctx, dsn)
			require.NoError(b, err)
			defer d.Close()
			m, err := migrate.New(d)
			require.NoError(b, err)
			_, err = m.Up(ctx)
			require.NoError(b, err)
			exec := d.Executor()
			b.ResetTimer()
			for b.Loop() {
				ids, err := exec.JobInsertMany(ctx, []driver.JobInsertParams{{Queue: "q", Kind: "k", Args: []byte("{}")}})
				require.NoError(b, err)
				jobs, err := exec.JobClaim(ctx, &driver.JobClaimParams{Queue: "q", Max: 1})
				require.NoError(b, err)
				require.Len(b, jobs, 1)
				_, err = exec.JobCompleteMany(ctx, []driver.JobRef{{ID: ids[0], Attempt: jobs[0].Attempts}})
				require.NoError(b, err)
			}
		})
	}
}
