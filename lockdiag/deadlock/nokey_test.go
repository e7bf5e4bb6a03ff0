package deadlock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return string(b)
}

// TestTableNotFoundIsInferred: the report's table is not in the schema
// source any more (lab repro drops its table; a table renamed or dropped
// since the deadlock). Its keys are decoded as with no schema at all, not
// as a table without a primary key, and the report says which table was
// not found and where it was looked for. A definition with no columns is
// no definition either.
func TestTableNotFoundIsInferred(t *testing.T) {
	text := readTestdata(t, "claim_cancel_mysql84.txt")
	plain, err := ParseString(text)
	require.NoError(t, err)
	require.Len(t, plain, 1)
	for _, c := range []struct {
		name string
		def  func(string) *Table
	}{
		{"absent", func(string) *Table { return nil }},
		{"no columns", func(n string) *Table { return &Table{Name: n} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var asked []string
			src := SchemaFunc{Name: "test server's catalogue", Func: func(n string) (*Table, error) {
				asked = append(asked, n)
				return c.def(n), nil
			}}
			rs, err := Decode(text, Options{Schema: src})
			require.NoError(t, err)
			require.Len(t, rs, 1)
			r := rs[0]
			require.Contains(t, asked, "lab.attempt")
			require.Equal(t, []string{"lab.attempt"}, r.TablesNotFound)
			require.Empty(t, r.SchemaSource)
			for i, tr := range r.Transactions {
				want := plain[0].Transactions[i]
				for j, l := range tr.allLocks() {
					wl := want.allLocks()[j]
					for k, rec := range l.Records {
						require.Equal(t, wl.Records[k].String(), rec.String(), "%s: decoded as with no schema", l.Index)
						for _, f := range rec.Fields {
							require.NotEqual(t, "DB_ROW_ID", f.Name)
						}
					}
				}
			}
			require.Equal(t, plain[0].Pattern.Fix, r.Pattern.Fix)
			var b strings.Builder
			require.NoError(t, r.WriteText(&b))
			out := b.String()
			t.Log("\n" + out)
			require.Contains(t, out, "Keys: column types inferred from the bytes: table lab.attempt was not found in the test server's catalogue (dropped or renamed since the deadlock?)")
			require.NotContains(t, out, "give --schema or --dsn")
			require.NotContains(t, out, "DB_ROW_ID")
		})
	}
}

// TestNoPrimaryKeyAdvice: a table without a primary key (and no UNIQUE
// NOT NULL index) is clustered by InnoDB's hidden row id: the report
// names GEN_CLUST_INDEX and its records start with DB_ROW_ID, which no
// statement can name, filter or order by. The fix never says DB_ROW_ID:
// it says to give the table a primary key, with the schema or without.
func TestNoPrimaryKeyAdvice(t *testing.T) {
	text := readTestdata(t, "corpus/public/008-mysql57-manual-monitor-example-reflowed-gen-clust.txt")
	schema, err := ParseSchema("CREATE TABLE t (i INT NOT NULL)")
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		opt  Options
	}{{"inferred", Options{}}, {"schema", Options{Schema: schema}}} {
		t.Run(c.name, func(t *testing.T) {
			rs, err := Decode(text, c.opt)
			require.NoError(t, err)
			require.Len(t, rs, 1)
			r := rs[0]
			require.NotNil(t, r.Pattern)
			require.Equal(t, PatternShareUpgrade, r.Pattern.Name)
			// The record is the hidden row id's, and says so.
			require.Equal(t, "DB_ROW_ID", r.Transaction(1).Waits.Records[0].Fields[0].Name)
			fix := r.Pattern.Fix
			t.Log(fix)
			require.NotContains(t, fix, "DB_ROW_ID")
			require.Contains(t, fix, "mysql.t has no PRIMARY KEY")
			require.Contains(t, fix, "ALTER TABLE t ADD PRIMARY KEY")
		})
	}
}
