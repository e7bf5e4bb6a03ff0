package lockorder_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
)

// TestWriterPairsGalera runs every writer pair on a node of the three-node
// Galera cluster, as TestWriterPairs does on a single server: both writers
// through the node every process writes through (docs/scaling.md: one
// writer), the waits seen in that node's lock tables. A Galera node is
// MariaDB with replication underneath, and its row locks are its own, so
// the one lock order must hold there statement by statement; and with one
// writer node, the cluster must neither count a deadlock on any node nor
// fail a single certification.
//
// The driver finds the node to be Galera and runs the Galera catalogue,
// whose certifying writes are statements of their own here. Writers on
// two nodes never wait for each other's row locks: their conflicts
// surface as aborts, retried whole (TestWriterPairsAcrossGaleraNodes).
//
// A test of its own, named for Galera, so that make test runs it in its
// Galera step, apart from the race detector's run.
func TestWriterPairsGalera(t *testing.T) {
	since := testdb.WatchGaleraCounters(t)
	s := openServer(t, serverSpec{"Galera", func(tb testing.TB) string { return testdb.Galera(tb)[0] }, openMySQL, lockview.MariaDB})
	for _, g := range pairGroups() {
		t.Run(s.name+g.suffix, func(t *testing.T) { runPairs(t, s, g.pairs()) })
	}
	for i, d := range since() {
		t.Logf("node %d: %s", i+1, d)
		require.Zero(t, d.Deadlocks, "node %d counted a deadlock", i+1)
		require.Zero(t, d.CertFailures, "node %d failed a certification with one writer", i+1)
	}
}
