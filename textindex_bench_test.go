package lockstep_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/migrate"
)

type benchOrderArgs struct {
	Customer string `json:"customer"`
	Email    string `json:"email"`
	Order    string `json:"order"`
}

func (benchOrderArgs) Kind() string { return "bench_order" }

// BenchmarkTextIndexCost is what the job search's optional text index
// costs an insert: b.N jobs with args of three searchable values, inserted
// one per call (a transaction each) or a hundred per call, with the index
// off and on, on MariaDB, Oracle MySQL and PostgreSQL. The cost is the
// ratio of on to off in the same run (BENCHMARKS.md). Each run has a fresh
// database.
//
//	go test -run '^$' -bench BenchmarkTextIndexCost -benchtime 3000x -count 3 .
func BenchmarkTextIndexCost(b *testing.B) {
	for _, db := range []struct {
		name string
		open func(b *testing.B) driver.Driver
	}{
		{"MariaDB", func(b *testing.B) driver.Driver {
			drv, err := mysql.Open(context.Background(), testdb.MySQL(b))
			require.NoError(b, err)
			return drv
		}},
		{"OracleMySQL", func(b *testing.B) driver.Driver {
			drv, err := mysql.Open(context.Background(), testdb.OracleMySQL(b))
			require.NoError(b, err)
			return drv
		}},
		{"PostgreSQL", func(b *testing.B) driver.Driver {
			drv, err := postgres.Open(context.Background(), testdb.Postgres(b))
			require.NoError(b, err)
			return drv
		}},
	} {
		for _, batch := range []int{1, 100} {
			for _, index := range []bool{false, true} {
				b.Run(fmt.Sprintf("%s/batch=%d/index=%v", db.name, batch, index), func(b *testing.B) {
					ctx := context.Background()
					drv := db.open(b)
					defer drv.Close()
					m, err := migrate.New(drv)
					require.NoError(b, err)
					_, err = m.Up(ctx)
					require.NoError(b, err)
					if index {
						require.NoError(b, migrate.TextIndex(ctx, drv, true))
					}
					c, err := lockstep.NewClient(drv, lockstep.Config{Logger: slog.New(slog.DiscardHandler)})
					require.NoError(b, err)
					args := func(i int) benchOrderArgs {
						return benchOrderArgs{Customer: fmt.Sprintf("cust-%d", i%5000), Email: fmt.Sprintf("user%d@example.com", i), Order: fmt.Sprintf("ORD-%07d", i)}
					}
					i := 0
					for b.Loop() {
						if batch == 1 {
							_, err := c.Insert(ctx, args(i), nil)
							require.NoError(b, err)
							i++
							continue
						}
						// b.N counts jobs: a call every batch-th round.
						if i%batch == batch-1 {
							params := make([]lockstep.InsertManyParams, batch)
							for k := range params {
								params[k] = lockstep.InsertManyParams{Args: args(i - batch + 1 + k)}
							}
							_, err := c.InsertMany(ctx, params)
							require.NoError(b, err)
						}
						i++
					}
				})
			}
		}
	}
}
