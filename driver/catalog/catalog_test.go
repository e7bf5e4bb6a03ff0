package catalog_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver/catalog"
)

// rebuild builds a catalogue of c's dialect from stmts, as the dialect's
// own declaration would with those statements.
func rebuild(c *catalog.Catalog, stmts []catalog.Statement) (*catalog.Catalog, error) {
	names := map[catalog.Index]string{}
	for _, ix := range []catalog.Index{catalog.RunsPrimary, catalog.JobsPrimary, catalog.JobsClaim, catalog.JobsRun, catalog.JobsHeartbeat, catalog.JobsQueueStatus, catalog.JobsUnique} {
		names[ix] = c.IndexName(ix)
	}
	return catalog.New(c.Dialect(), c.ArrayParams(), names, stmts...)
}

// without returns c's statements less the named ones.
func without(c *catalog.Catalog, drop ...catalog.Name) []catalog.Statement {
	return slices.DeleteFunc(c.All(), func(s catalog.Statement) bool { return slices.Contains(drop, s.Name) })
}

func TestCatalogRebuildsFromItsStatements(t *testing.T) {
	for dialect, build := range catalogues {
		t.Run(dialect, func(t *testing.T) {
			c := build()
			again, err := rebuild(c, c.All())
			require.NoError(t, err)
			require.Equal(t, c.All(), again.All())
		})
	}
}

// A dialect that leaves out a statement every dialect must declare is
// refused when its catalogue is built, with every missing name in the
// error; nothing panics, and there is no catalogue to run from.
func TestCatalogRefusesMissingRequiredStatement(t *testing.T) {
	for dialect, build := range catalogues {
		t.Run(dialect, func(t *testing.T) {
			c := build()
			var got *catalog.Catalog
			var err error
			require.NotPanics(t, func() { got, err = rebuild(c, without(c, catalog.JobGet, catalog.QueueOldest)) })
			require.Nil(t, got)
			require.ErrorContains(t, err, "missing required statements: job.get, queue.oldest")
		})
	}
}

// A name the queue does not know is refused too: a misspelt statement
// would otherwise sit unused in the catalogue and on the lock-order page.
func TestCatalogRefusesUnknownStatement(t *testing.T) {
	c := catalogues["sqlite"]()
	stmts := append(c.All(), catalog.Statement{Name: "job.finsh_done", SQL: "SELECT 1"})
	got, err := rebuild(c, stmts)
	require.Nil(t, got)
	require.ErrorContains(t, err, `unknown statements: job.finsh_done`)

	// Replacing a statement keeps to known names the same way.
	_, err = c.With(catalog.Statement{Name: "job.nope", SQL: "SELECT 1"})
	require.ErrorContains(t, err, `no statement "job.nope"`)
}
