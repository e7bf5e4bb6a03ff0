package explain_test

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/lab/attempt"
	"github.com/lockstep-queue/lockstep/lab/explain"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// TestAttemptTableDistributions: the published EXPLAINs, reproduced on
// MariaDB and Oracle MySQL — the cancel takes idx_run for a fresh run and
// idx_status once the run is almost done — with the type, key and rows of
// a real plan (a bare EXPLAIN on MySQL 9.x prints a TREE with none of
// them).
func TestAttemptTableDistributions(t *testing.T) {
	_, err := attempt.ParseDistribution("run 3: 3 PENDING / 497 DONE:500:3")
	require.Error(t, err, "a name with colons is ambiguous")
	tail, err := attempt.ParseDistribution("tail:500:3")
	require.NoError(t, err)
	for _, srv := range []struct {
		name string
		dsn  func(testing.TB) string
	}{{"MariaDB", testdb.MySQL}, {"OracleMySQL", testdb.OracleMySQL}} {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			db, err := sql.Open("mysql", srv.dsn(t))
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })

			rows, err := explain.Run(context.Background(), db, explain.DefaultStatement, append(attempt.Distributions(), tail), false)
			require.NoError(t, err)
			var b strings.Builder
			require.NoError(t, explain.WriteText(&b, explain.DefaultStatement, rows))
			t.Log("\n" + b.String())
			require.Len(t, rows, 5)
			for _, r := range rows {
				require.Equal(t, "range", r.Type, r.Distribution)
				require.Positive(t, r.Rows, r.Distribution)
			}
			require.Equal(t, "idx_status", rows[0].Key, "the two-pending table")
			require.Equal(t, "idx_run", rows[1].Key, "a fresh run")
			require.Equal(t, "idx_status", rows[2].Key, "5 PENDING / 95 DONE")
			require.Equal(t, "idx_status", rows[3].Key, "2 PENDING / 998 DONE")
			require.Equal(t, "idx_status", rows[4].Key, "the added distribution")

			var n int
			require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'attempt'").Scan(&n))
			require.Zero(t, n, "the scratch table is dropped afterwards")
		})
	}
}
