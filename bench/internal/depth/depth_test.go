package depth_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-queue/lockstep/bench/internal/depth"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// tiny is one small depth over a small history of DONE jobs, so that the
// loading of both kinds of rows is exercised too.
func tiny(t *testing.T) depth.Options {
	return depth.Options{
		Depths: []int{1000}, Done: 500, Claims: 15, Limit: 10, LockSamples: 1,
		Budget: 10 * time.Second, Logf: t.Logf,
	}
}

// points checks what holds on every server and returns the points by
// claim kind.
func points(t *testing.T, r *depth.Result, o depth.Options) map[string]depth.Point {
	t.Helper()
	var b strings.Builder
	if err := depth.WriteText(&b, []*depth.Result{r}); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
	by := map[string]depth.Point{}
	for _, p := range r.Points {
		by[p.System] = p
		if p.Claims < min(o.Claims, depth.MinClaims) || p.Claimed != o.Limit {
			t.Errorf("%s: %d claims timed, the last claimed %d rows: %+v", p.System, p.Claims, p.Claimed, p)
		}
		if p.MedianMS <= 0 || p.P99MS < p.MedianMS || p.MaxMS < p.P99MS {
			t.Errorf("%s: latencies out of order: %+v", p.System, p)
		}
		if p.RowsLocked < int64(o.Limit) {
			t.Errorf("%s: claimed %d rows but %d rows locked", p.System, p.Claimed, p.RowsLocked)
		}
		if p.Plan == "" {
			t.Errorf("%s: no plan", p.System)
		}
	}
	for _, s := range []string{"lockstep", "literal", "literal-index"} {
		if _, ok := by[s]; !ok {
			t.Fatalf("no point for %s", s)
		}
	}
	return by
}

// On MariaDB and Oracle MySQL alike the literal claim through its
// (status, available_at) index locks every candidate before sorting them
// by id; lockstep's claim locks its rows only (trx_rows_locked counts each
// in the claim index and in the primary key, and at most one more index
// record besides).
func TestMySQL(t *testing.T) {
	for _, c := range []struct {
		name, database string
		fresh          func(testing.TB) string
	}{
		{"MariaDB", "mariadb", testdb.MySQL},
		{"OracleMySQL", "mysql", testdb.OracleMySQL},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o := tiny(t)
			r, err := depth.MySQL(context.Background(), c.fresh(t), c.fresh(t), o)
			if err != nil {
				t.Fatal(err)
			}
			if r.Database != c.database {
				t.Errorf("database %q, want %q", r.Database, c.database)
			}
			by := points(t, r, o)
			for name, p := range by {
				if !strings.Contains(p.Plan, "key=") || strings.Contains(p.Plan, "key=NULL") {
					t.Errorf("%s: the plan names no index: %s", name, p.Plan)
				}
			}
			if got, d := by["literal-index"].RowsLocked, int64(o.Depths[0]); got < d {
				t.Errorf("literal-index locked %d rows with %d PENDING; want every candidate", got, d)
			}
			if got, most := by["lockstep"].RowsLocked, int64(2*o.Limit+2); got > most {
				t.Errorf("lockstep's claim of %d locked %d index records; want at most %d", o.Limit, got, most)
			}
		})
	}
}

// On PostgreSQL a row is locked only when LockRows passes it up to the
// LIMIT, so every claim locks what it returns, sorted or not.
func TestPostgres(t *testing.T) {
	t.Parallel()
	o := tiny(t)
	r, err := depth.Postgres(context.Background(), testdb.Postgres(t), testdb.Postgres(t), o)
	if err != nil {
		t.Fatal(err)
	}
	for s, p := range points(t, r, o) {
		if p.RowsLocked != int64(o.Limit) {
			t.Errorf("%s: a claim of %d locked %d rows", s, o.Limit, p.RowsLocked)
		}
	}
}
