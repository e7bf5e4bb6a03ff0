package mysqlplan

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTreeReads: EXPLAIN ANALYZE's TREE text as MySQL 8.4 prints it (whole
// numbers) and 9.x (fractions, exponents), with a node that never ran and
// a filter whose text looks like an access.
func TestTreeReads(t *testing.T) {
	text := `-> Limit: 10 row(s)  (cost=4.56 rows=10) (actual time=0.0512..0.0598 rows=10 loops=1)
    -> Index range scan on lockstep_jobs using lockstep_jobs_claim over (queue = 'default' AND status = 'PENDING')  (cost=4.56 rows=751) (actual time=0.0498..0.058 rows=10 loops=1)
-> Nested loop inner join  (cost=0.7 rows=1) (actual time=109e-6..109e-6 rows=0.5 loops=2)
    -> Filter: (r.note = 'on x using y')  (cost=0.35 rows=1) (actual time=0.018..0.018 rows=0 loops=1)
        -> Table scan on r  (cost=0.35 rows=1) (actual time=0.018..0.018 rows=4 loops=1)
    -> Single-row index lookup on ` + "`j`" + ` using PRIMARY (id = r.job_id)  (cost=0.35 rows=1) (never executed)
    -> Table scan on <temporary>  (cost=0.35 rows=1) (actual time=0.018..0.018 rows=4 loops=1)
`
	reads, err := treeReads(text)
	require.NoError(t, err)
	require.Equal(t, []read{
		{table: "lockstep_jobs", index: "lockstep_jobs_claim", rows: 10, est: 751, op: "Index range scan on lockstep_jobs using lockstep_jobs_claim over (queue = 'default' AND status = 'PENDING')"},
		{table: "r", rows: 4, est: 1, op: "Table scan on r"},
		{table: "j", index: "PRIMARY", rows: 0, est: 1, op: "Single-row index lookup on `j` using PRIMARY (id = r.job_id)"},
	}, reads)

	_, err = treeReads("id\tselect_type\n")
	require.ErrorContains(t, err, "no plan tree")
}

// TestMerge: a measured access joins its classic row; one the classic
// table lacks is added, so a plan that changed between the two is seen.
func TestMerge(t *testing.T) {
	p := Plan{Rows: []Row{{Table: "j", Key: "lockstep_jobs_claim", Read: -1}, {Table: "r", Key: "PRIMARY", Read: -1}}}
	merge(&p, []read{
		{table: "j", index: "lockstep_jobs_claim", rows: 10},
		{table: "r", index: "idx_other", rows: 7, est: 9, op: "Index lookup on r using idx_other"},
	})
	require.Len(t, p.Rows, 3)
	require.Equal(t, float64(10), p.Rows[0].Read)
	require.Equal(t, float64(-1), p.Rows[1].Read)
	require.Equal(t, Row{Columns: map[string]string{"table": "r", "key": "idx_other", "Extra": "Index lookup on r using idx_other"},
		Table: "r", Key: "idx_other", Type: "Index lookup on r using idx_other", Extra: "Index lookup on r using idx_other", Rows: 9, Read: 7}, p.Rows[2])
}
