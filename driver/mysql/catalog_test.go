package mysql

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver/catalog"
)

// TestByIDWritesForcePrimary: MariaDB plans "WHERE id=? AND status=?"
// through a status-led secondary index, locking it before PRIMARY; every
// locking statement that finds rows by primary key must pin PRIMARY.
func TestByIDWritesForcePrimary(t *testing.T) {
	for _, variant := range []struct{ returning, certify bool }{{true, false}, {false, false}, {true, true}} {
		c, err := newCatalog("mariadb", variant.returning, variant.certify)
		require.NoError(t, err)
		for _, st := range c.All() {
			// A WHERE of the primary key alone leaves no other index to
			// choose (and single-table DELETE takes no hint).
			if st.Locks && (st.Finds == catalog.JobsPrimary || st.Finds == catalog.RunsPrimary) && st.SQL != pkOnlyDelete {
				require.Contains(t, st.SQL, "FORCE INDEX (PRIMARY)", st.Name)
			}
			if st.Finds != catalog.None && st.Finds != catalog.JobsPrimary && st.Finds != catalog.RunsPrimary && st.SQL != depsDelete && st.SQL != queueDelete && st.SQL != processDelete && st.SQL != processPrune && st.SQL != historyPrune {
				require.Contains(t, st.SQL, "FORCE INDEX ("+c.IndexName(st.Finds)+")", st.Name)
			}
			if strings.Contains(st.SQL, "NOW(") {
				t.Errorf("%s uses the session clock; use UTC_TIMESTAMP(6)", st.Name)
			}
		}
	}
}

func TestBindIDs(t *testing.T) {
	c, err := newCatalog("mariadb", true, false)
	require.NoError(t, err)
	sqlText, args := c.BindIDs(c.Get(catalog.JobCancelMany), []int64{3, 5, 9})
	require.Contains(t, sqlText, "id IN (?,?,?)")
	require.Equal(t, []any{int64(3), int64(5), int64(9)}, args)
	sqlText, args = c.BindIDs(c.Get(catalog.JobClaimUpdate), []int64{7}, "a", "b")
	require.Contains(t, sqlText, "id IN (?)")
	require.Equal(t, []any{"a", "b", int64(7)}, args)
	require.Equal(t, 2, strings.Count(c.BindRows(c.Get(catalog.JobInsert), 2), "(?, ?, ?, ?, 'PENDING'"))
}
