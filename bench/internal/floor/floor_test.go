package floor_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-queue/lockstep/bench/internal/floor"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// tiny is a search small enough for a test: two batch sizes, two loops.
func tiny(t *testing.T) floor.Options {
	return floor.Options{
		Batches: []int{5, 20}, Concurrency: []int{1, 2},
		Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond,
		Logf: t.Logf,
	}
}

func check(t *testing.T, r *floor.Result, o floor.Options) {
	t.Helper()
	if len(r.Points) != len(o.Batches)*len(o.Concurrency) {
		t.Fatalf("got %d points, want %d", len(r.Points), len(o.Batches)*len(o.Concurrency))
	}
	for _, p := range r.Points {
		if p.Jobs <= 0 || p.JobsPerSec <= 0 {
			t.Errorf("batch %d × %d: no job finished: %+v", p.Batch, p.Concurrency, p)
		}
		// Every finished job was claimed and every claimed one inserted,
		// give or take the batches in flight at the window's edges.
		slack := int64(2 * p.Batch * p.Concurrency)
		if p.Jobs > p.Claimed+slack || p.Claimed > p.Inserted+slack {
			t.Errorf("batch %d × %d: finished %d, claimed %d, inserted %d", p.Batch, p.Concurrency, p.Jobs, p.Claimed, p.Inserted)
		}
		if p.JobsPerSec > r.Best.JobsPerSec {
			t.Errorf("best %+v is beaten by %+v", r.Best, p)
		}
	}
	if r.Version == "" {
		t.Error("no server version")
	}
	var b strings.Builder
	if err := floor.WriteText(&b, []*floor.Result{r}); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
}

func TestPostgres(t *testing.T) {
	t.Parallel()
	o := tiny(t)
	r, err := floor.Postgres(context.Background(), testdb.Postgres(t), o)
	if err != nil {
		t.Fatal(err)
	}
	check(t, r, o)
}

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
			r, err := floor.MySQL(context.Background(), c.fresh(t), o)
			if err != nil {
				t.Fatal(err)
			}
			if r.Database != c.database {
				t.Errorf("database %q, want %q", r.Database, c.database)
			}
			check(t, r, o)
		})
	}
}
