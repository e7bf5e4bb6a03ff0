package mysql_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/driver/drivertest"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/internal/mysqlplan"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// explainServer is a server TestClaimPlan runs on, with the factory of
// its fresh database.
type explainServer struct {
	name string
	dsn  func(testing.TB) string
}

// explainServers are MariaDB, and Oracle MySQL from testdb's userland.
func explainServers() []explainServer {
	return []explainServer{
		{"MariaDB", testdb.MySQL},
		{"OracleMySQL", testdb.OracleMySQL},
	}
}

// explainRows is the classic EXPLAIN table, by column name, read through
// internal/mysqlplan, which asks the server what it is first: a bare
// EXPLAIN on MySQL 9.x prints a TREE, with no key or Extra column.
func explainRows(t *testing.T, db *sql.DB, query string, args ...any) []map[string]string {
	t.Helper()
	ctx := context.Background()
	srv, err := mysqlplan.Detect(ctx, db)
	require.NoError(t, err)
	plan, err := srv.Explain(ctx, db, query, args...)
	require.NoError(t, err)
	var out []map[string]string
	for _, r := range plan.Rows {
		out = append(out, r.Columns)
	}
	return out
}

// TestClaimPlan: the claim reads the claim index in its ORDER BY, with no
// filesort, and locks only what it takes — with 10 and 100,000 PENDING
// jobs, on MariaDB and Oracle MySQL.
func TestClaimPlan(t *testing.T) {
	for _, srv := range explainServers() {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			testClaimPlan(t, srv.dsn(t))
		})
	}
}

func testClaimPlan(t *testing.T, dsn string) {
	ctx := context.Background()
	drv, err := mysql.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	drivertest.Migrate(t, drv)
	claim := drv.Catalog().Get(catalog.JobClaimSelect)

	total := 0
	for _, pending := range []int{10, 100_000} {
		drivertest.FillPending(t, drv, total, pending)
		total = pending
		_, err = drv.DB().Exec("ANALYZE TABLE lockstep_jobs")
		require.NoError(t, err)

		plan := explainRows(t, drv.DB(), claim.SQL, lockstep.DefaultQueue, 5)
		require.Len(t, plan, 1, "pending=%d", pending)
		require.Equal(t, "lockstep_jobs_claim", plan[0]["key"], "pending=%d: %v", pending, plan[0])
		require.NotContains(t, strings.ToLower(plan[0]["Extra"]), "filesort", "pending=%d: %v", pending, plan[0])

		// Held open, the claim's transaction has locked only the rows it took.
		tx, err := drv.BeginSQL(ctx)
		require.NoError(t, err)
		rows, err := tx.Query(claim.SQL, lockstep.DefaultQueue, 5)
		require.NoError(t, err)
		n := 0
		for rows.Next() {
			n++
		}
		require.NoError(t, rows.Close())
		require.Equal(t, 5, n)
		// INNODB_TRX is a cache that InnoDB refreshes only when it has not
		// been read for 0.1 s: poll slower than that, or it never refreshes.
		var locked int
		deadline := time.Now().Add(5 * time.Second)
		for {
			err := tx.QueryRow("SELECT trx_rows_locked FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = CONNECTION_ID()").Scan(&locked)
			if err == nil {
				break
			}
			require.ErrorIs(t, err, sql.ErrNoRows)
			require.False(t, time.Now().After(deadline), "the claim's transaction never appeared in INNODB_TRX")
			time.Sleep(150 * time.Millisecond)
		}
		t.Logf("pending=%d: plan %s/%s rows=%s Extra=%q; rows locked by a LIMIT 5 claim: %d", pending, plan[0]["type"], plan[0]["key"], plan[0]["rows"], plan[0]["Extra"], locked)
		require.LessOrEqual(t, locked, 10, "a LIMIT 5 claim must not lock what it scanned but did not take")
		require.NoError(t, tx.Rollback())
	}
}
