package race_test

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
	"github.com/lockstep-queue/lockstep/lab/race"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// TestRaceMatrix: the published race experiment at 200 rounds per cell, on
// MariaDB and Oracle MySQL. The unsafe cancels deadlock in some rounds;
// ids-then-PRIMARY with the claim on PRIMARY never does. (The
// deterministic proof of the same is lab/repro; this shows the
// frequencies.)
func TestRaceMatrix(t *testing.T) {
	rounds := 200
	if testing.Short() {
		rounds = 50
	}
	for _, srv := range []struct {
		name string
		dsn  func(testing.TB) string
	}{
		{"MariaDB", testdb.MySQL},
		{"OracleMySQL", testdb.OracleMySQL},
	} {
		t.Run(srv.name, func(t *testing.T) {
			ctx := context.Background()
			// REPEATABLE READ, the level of the published measurements.
			db, err := race.Open(ctx, srv.dsn(t), sql.LevelRepeatableRead)
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			var results []*race.Result
			for _, cancel := range attempt.Cancels() {
				for _, claim := range attempt.Claims() {
					r, err := race.Run(ctx, db, race.Options{Cancel: cancel, Claim: claim, Rounds: rounds, Seed: 1})
					require.NoError(t, err)
					results = append(results, r)
				}
			}
			require.NoError(t, attempt.Drop(ctx, db))
			var b strings.Builder
			require.NoError(t, race.WriteTable(&b, results))
			t.Log("\n" + b.String())
			got := map[string]int{}
			for _, r := range results {
				require.Equal(t, rounds, r.Rounds)
				got[r.Cancel+"/"+r.Claim] = r.DeadlockRounds
			}
			require.Positive(t, got["range-status/primary"], "the range cancel through idx_status against a claim by PRIMARY")
			require.Positive(t, got["composite/primary"])
			require.Zero(t, got["ids-then-primary/primary"], "the fix")
			require.Zero(t, got["range-run/primary"])
		})
	}
}

// TestOpenSetsTheLevel: Open finds the server's name for the isolation
// variable (MariaDB 10.x: tx_isolation; MySQL: transaction_isolation) and
// every session of the pool runs at the level asked for.
func TestOpenSetsTheLevel(t *testing.T) {
	for _, srv := range []struct {
		name, variable string
		dsn            func(testing.TB) string
	}{
		{"MariaDB", "tx_isolation", testdb.MySQL},
		{"OracleMySQL", "transaction_isolation", testdb.OracleMySQL},
	} {
		t.Run(srv.name, func(t *testing.T) {
			ctx := context.Background()
			dsn := srv.dsn(t)
			for level, want := range map[sql.IsolationLevel]string{sql.LevelRepeatableRead: "REPEATABLE-READ", sql.LevelReadCommitted: "READ-COMMITTED"} {
				db, err := race.Open(ctx, dsn, level)
				require.NoError(t, err)
				// Two sessions at once: the level is every session's.
				c1, err := db.Conn(ctx)
				require.NoError(t, err)
				c2, err := db.Conn(ctx)
				require.NoError(t, err)
				for _, c := range []*sql.Conn{c1, c2} {
					var got string
					require.NoError(t, c.QueryRowContext(ctx, "SELECT @@"+srv.variable).Scan(&got))
					require.Equal(t, want, got)
					require.NoError(t, c.Close())
				}
				require.NoError(t, db.Close())
			}
			_, err := race.Open(ctx, dsn, sql.LevelSerializable)
			require.Error(t, err)
		})
	}
}
