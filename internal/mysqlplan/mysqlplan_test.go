package mysqlplan_test

import (
	"context"
	"database/sql"
	"os"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/mysqlplan"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

type server struct {
	name string
	dsn  func(testing.TB) string
}

// servers are the MySQL-family servers testdb starts.
func servers() []server {
	return []server{{"MariaDB", testdb.MySQL}, {"OracleMySQL", testdb.OracleMySQL}}
}

func open(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	for _, q := range []string{
		"CREATE TABLE t (id BIGINT PRIMARY KEY, status VARCHAR(16) NOT NULL, v INT NOT NULL, KEY idx_status (status))",
		// 1,000 rows, 10 PENDING.
		`INSERT INTO t (id, status, v) SELECT a.d + 10*b.d + 100*c.d + 1, IF((a.d + 10*b.d + 100*c.d) % 100 = 0, 'PENDING', 'DONE'), 0
		 FROM (SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) a,
		      (SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) b,
		      (SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) c`,
	} {
		_, err := db.Exec(q)
		require.NoError(t, err)
	}
	rows, err := db.Query("ANALYZE TABLE t")
	require.NoError(t, err)
	require.NoError(t, rows.Close())
	return db
}

// TestPlans: the same facts from both servers — the index of a by-id
// UPDATE (which a bare EXPLAIN on MySQL 9.x does not print), a full scan,
// a filesort, and what a LIMITed locking read really read.
func TestPlans(t *testing.T) {
	for _, srv := range servers() {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := open(t, srv.dsn(t))
			s, err := mysqlplan.Detect(ctx, db)
			require.NoError(t, err)
			t.Logf("%s (EXPLAIN ANALYZE FORMAT=JSON: %v)", s, s.AnalyzeJSON)
			require.Equal(t, srv.name == "MariaDB", s.MariaDB)

			p, err := s.Explain(ctx, db, "UPDATE t SET v = 2 WHERE id = ?", 7)
			require.NoError(t, err)
			t.Log("\n" + p.Raw)
			require.Len(t, p.Rows, 1)
			require.Equal(t, []string{"PRIMARY"}, p.Keys())
			require.Equal(t, "t", p.Rows[0].Columns["table"])
			require.Equal(t, "range", p.Rows[0].Type)
			for _, c := range []string{"id", "select_type", "table", "type", "possible_keys", "key", "key_len", "ref", "rows", "Extra"} {
				require.Contains(t, p.Rows[0].Columns, c)
			}
			require.False(t, p.Analyzed)
			require.Equal(t, float64(-1), p.Rows[0].Read)

			p, err = s.Explain(ctx, db, "SELECT * FROM t WHERE v = 1 ORDER BY status, id DESC")
			require.NoError(t, err)
			require.Empty(t, p.Keys(), "a full scan")
			require.Equal(t, "ALL", p.Rows[0].Type)
			require.True(t, p.Sorts())

			// Measured: a locking read of 3 of the 10 PENDING rows reads 3
			// index entries, whatever the estimate (MariaDB 10, MySQL 500
			// under FORCE INDEX).
			const claim = "SELECT id FROM t FORCE INDEX (idx_status) WHERE status = 'PENDING' ORDER BY id LIMIT 3 FOR UPDATE SKIP LOCKED"
			variants := []mysqlplan.Server{s}
			if s.AnalyzeJSON {
				// The TREE text, as MySQL 8.4 prints it, must read the same.
				tree := s
				tree.AnalyzeJSON = false
				variants = append(variants, tree)
			}
			for _, v := range variants {
				tx, err := db.BeginTx(ctx, nil)
				require.NoError(t, err)
				p, err = v.Analyze(ctx, tx, claim)
				require.NoError(t, tx.Rollback())
				require.NoError(t, err)
				t.Log("\n" + p.Raw)
				require.True(t, p.Analyzed)
				require.Len(t, p.Rows, 1, "the measured access is the classic table's")
				require.Equal(t, "idx_status", p.Rows[0].Key)
				require.False(t, p.Sorts())
				require.InDelta(t, 3, p.Rows[0].Read, 0.01, "json=%v", v.AnalyzeJSON)
				require.Greater(t, p.Rows[0].Rows, float64(3), "the estimate")
			}

			// MySQL cannot measure a single-table UPDATE, and says so
			// rather than returning a plan without reads.
			tx, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback() }()
			p, err = s.Analyze(ctx, tx, "UPDATE t SET v = 2 WHERE id = ?", 7)
			if s.MariaDB {
				require.NoError(t, err)
				require.Equal(t, float64(1), p.Rows[0].Read)
			} else {
				require.ErrorContains(t, err, "cannot measure this statement")
			}
		})
	}
}
