package race_test

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/lab/attempt"
	"github.com/lockstep-queue/lockstep/lab/race"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// TestRaceMatrix: the published race experiment at 200 rounds per cell. The
// unsafe cancels deadlock in some rounds; ids-then-PRIMARY with the claim
// on PRIMARY never does. (The deterministic proof of the same is
// lab/repro; this shows the frequencies.)
func TestRaceMatrix(t *testing.T) {
	rounds := 200
	if testing.Short() {
		rounds = 50
	}
	cfg, err := gomysql.ParseDSN(testdb.MySQL(t))
	require.NoError(t, err)
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["tx_isolation"] = "'REPEATABLE-READ'" // the level of the published measurements
	db, err := sql.Open("mysql", cfg.FormatDSN())
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	var results []*race.Result
	for _, cancel := range attempt.Cancels() {
		for _, claim := range attempt.Claims() {
			r, err := race.Run(context.Background(), db, race.Options{Cancel: cancel, Claim: claim, Rounds: rounds, Seed: 1})
			require.NoError(t, err)
			results = append(results, r)
		}
	}
	require.NoError(t, attempt.Drop(context.Background(), db))
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
}
