package catalog_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver/catalog"
)

// rebuild builds a catalogue of c's dialect from stmts, as the dialect's
// own declaration would with those statements.
func rebuild(c *catalog.Catalog, stmts []catalog.Statement) (*catalog.Catalog, error) {
	return catalog.New(c.Spec(), stmts...)
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

// Each dialect declares the capabilities its statements imply, and the
// executor reads these, not the names.
func TestCatalogCapabilities(t *testing.T) {
	want := map[string]catalog.Capabilities{
		"mariadb":  {LockMany: true, StatusIndex: true, TextIndex: true},
		"mysql":    {LockMany: true, StatusIndex: true, TextIndex: true},
		"postgres": {OneStatementClaim: true, LockIDsFirst: true, Notify: true, TextIndex: true},
		"sqlite":   {OneStatementClaim: true},
	}
	for dialect, build := range catalogues {
		require.Equal(t, want[dialect], build().Capabilities(), dialect)
	}
}

// A capability without its statement is refused, and so is a statement
// that only a capability needs when the dialect does not declare that
// capability: either would leave the executor's choice and the catalogue
// disagreeing.
func TestCatalogRefusesCapabilityWithoutStatement(t *testing.T) {
	pg := catalogues["postgres"]()
	for _, c := range []struct {
		name string
		cat  *catalog.Catalog
		caps func(*catalog.Capabilities)
		drop []catalog.Name
		err  string
	}{
		{"claim", pg, nil, []catalog.Name{catalog.JobClaim}, "capability OneStatementClaim without its statement job.claim"},
		{"lock ids", pg, nil, []catalog.Name{catalog.JobLockIDs}, "capability LockIDsFirst without its statement job.lock_ids"},
		{"notify", pg, nil, []catalog.Name{catalog.JobNotify}, "capability Notify without its statement job.notify"},
		{"listen", pg, nil, []catalog.Name{catalog.JobListen}, "capability Notify without its statement job.listen"},
		{"lock many", catalogues["mysql"](), nil, []catalog.Name{catalog.JobLockMany}, "capability LockMany without its statement job.lock_many"},
		{"two-statement claim", catalogues["mysql"](), nil, []catalog.Name{catalog.JobClaimUpdate}, "without capability OneStatementClaim, statement job.claim_update is required"},
		{"statement without capability", pg, func(c *catalog.Capabilities) { c.Notify = false }, nil, "statement job.notify declared without its capability Notify"},
		{"replaced statement", catalogues["mysql"](), func(c *catalog.Capabilities) { c.OneStatementClaim = true }, nil, "statement job.claim_select declared, but capability OneStatementClaim replaces it"},
		{"both locking reads", catalogues["mysql"](), func(c *catalog.Capabilities) { c.LockIDsFirst = true }, nil, "LockIDsFirst and LockMany are two ways to take the same locks"},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := c.cat.Spec()
			if c.caps != nil {
				c.caps(&spec.Capabilities)
			}
			got, err := catalog.New(spec, without(c.cat, c.drop...)...)
			require.Nil(t, got)
			require.ErrorContains(t, err, c.err)
		})
	}
}

// The inserts say whether they return their ids, and the executor reads
// that from the statement: MySQL 8's do not (its ids come from
// LastInsertId), every other dialect's do. A statement that claims to
// return ids without a RETURNING clause is refused.
func TestCatalogInsertsDeclareReturning(t *testing.T) {
	for dialect, build := range catalogues {
		c := build()
		for _, n := range []catalog.Name{catalog.JobInsert, catalog.RunInsert} {
			st := c.Get(n)
			require.Equal(t, dialect != "mysql", st.Returning, "%s %s", dialect, n)
			require.Equal(t, st.Returning, strings.Contains(st.SQL, "RETURNING id"), "%s %s", dialect, n)
		}
	}
	my := catalogues["mysql"]()
	st := my.Get(catalog.JobFinishDoneMany)
	st.Returning = true
	_, err := my.With(st)
	require.ErrorContains(t, err, "job.finish_done_many: Returning statement has no RETURNING clause")
}
