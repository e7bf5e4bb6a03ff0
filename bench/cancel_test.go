// Package bench measures lockstep. It is its own module so that the peers it
// is measured against never become dependencies of lockstep itself.
package bench

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/migrate"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

type benchArgs struct{ I int }

func (benchArgs) Kind() string { return "bench" }

// BenchmarkRunCancel compares cancelling a run's 1,000 PENDING jobs one row
// per UPDATE (the published fix's loop) with chunks of sorted ids through the
// primary key. Both take the same locks in the same order; only round trips
// differ. One op is one whole CancelRun.
func BenchmarkRunCancel(b *testing.B) {
	ctx := context.Background()
	type opener func(chunk int) driver.Driver
	dbs := map[string]opener{}
	myDSN, oracleDSN, pgDSN := testdb.MySQL(b), testdb.OracleMySQL(b), testdb.Postgres(b)
	my, err := mysql.Open(ctx, myDSN)
	if err != nil {
		b.Fatal(err)
	}
	defer my.Close()
	oracle, err := mysql.Open(ctx, oracleDSN)
	if err != nil {
		b.Fatal(err)
	}
	defer oracle.Close()
	pg, err := postgres.Open(ctx, pgDSN)
	if err != nil {
		b.Fatal(err)
	}
	defer pg.Close()
	dbs["mariadb"] = func(n int) driver.Driver { return my.WithChunkSize(n) }
	dbs["oraclemysql"] = func(n int) driver.Driver { return oracle.WithChunkSize(n) }
	dbs["postgres"] = func(n int) driver.Driver { return pg.WithChunkSize(n) }
	for _, name := range []string{"mariadb", "oraclemysql", "postgres"} {
		base := dbs[name](500)
		m, err := migrate.New(base)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Up(ctx); err != nil {
			b.Fatal(err)
		}
		for _, chunk := range []int{1, 100, 1000} {
			b.Run(fmt.Sprintf("%s/chunk=%d", name, chunk), func(b *testing.B) {
				c, err := lockstep.NewClient(dbs[name](chunk), lockstep.Config{})
				if err != nil {
					b.Fatal(err)
				}
				jobs := make([]lockstep.InsertManyParams, 1000)
				for i := range jobs {
					jobs[i] = lockstep.InsertManyParams{Args: benchArgs{I: i}}
				}
				for b.Loop() {
					b.StopTimer()
					run, _, err := c.InsertRun(ctx, "bench", nil, jobs...)
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					res, err := c.CancelRun(ctx, run.ID)
					if err != nil {
						b.Fatal(err)
					}
					if len(res.Cancelled) != len(jobs) {
						b.Fatalf("cancelled %d of %d", len(res.Cancelled), len(jobs))
					}
				}
			})
		}
	}
}
