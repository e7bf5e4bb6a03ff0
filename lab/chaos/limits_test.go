package chaos_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/clitest"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/lab/chaos"
)

// TestMain starts throwaway database servers lazily and removes the
// binary the tests built.
func TestMain(m *testing.M) { os.Exit(clitest.Main(m)) }

// TestKill9HoldingLimitedSlots is the acceptance "global limit 5 across
// three clients, with kill -9 of a process holding slots: the limit
// holds, and the slots come back when its jobs are reaped", with the built
// binary as the three `lockstep work` processes (3 workers each, so the
// two survivors could run 6). See chaos.RunLimited for what is waited on
// and what is checked.
func TestKill9HoldingLimitedSlots(t *testing.T) {
	for _, d := range []struct {
		name      string
		dsn       func(t *testing.T) string
		reapAfter time.Duration
	}{
		{"mariadb", func(t *testing.T) string { return clitest.MySQLURL(t, testdb.MySQL(t)) }, 0},
		{"oraclemysql", func(t *testing.T) string { return clitest.MySQLURL(t, testdb.OracleMySQL(t)) }, 0},
		{"postgres", func(t *testing.T) string { return testdb.Postgres(t) }, 0},
		// SQLite's writers take turns at one lock, through a busy handler
		// that backs off to 100 ms: under the race detector on a loaded
		// CI machine a survivor's live jobs were once reaped at the
		// default 3 s, most likely because its heartbeat waited that long
		// for the lock. The limit's promises do not depend on how short
		// the reap limit is.
		{"sqlite", func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "chaos.db") }, 6 * time.Second},
	} {
		t.Run(d.name, func(t *testing.T) {
			l := &clitest.CLI{T: t, Bin: clitest.Binary(t), DSN: d.dsn(t)}
			require.Contains(t, l.OK("migrate", "up"), "schema is at version")
			var progress strings.Builder
			res, err := chaos.RunLimited(context.Background(), chaos.LimitConfig{
				Binary:    l.Bin,
				DSN:       l.DSN,
				Env:       []string{"GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")},
				LogDir:    t.TempDir(),
				Progress:  &progress,
				ReapAfter: d.reapAfter,
			})
			if res != nil {
				t.Log(res.String())
			}
			t.Log("\n" + progress.String())
			require.NoError(t, err)
			require.Empty(t, res.Problems)
			require.GreaterOrEqual(t, res.Held, 2, "the killed process held slots")
			require.Positive(t, res.HeldSamples, "readings while its jobs held their slots")
			require.Equal(t, 5-res.Held, res.MaxSurvivorsHeld, "the survivors ran the limit less the held slots")
			require.Equal(t, 5, res.MaxAfterReap, "the slots came back")
			require.Equal(t, 5, res.MaxRunning)
			require.LessOrEqual(t, res.MaxAuditRunning, 5)
			require.LessOrEqual(t, res.MaxLedgerRunning, 5)
			require.Equal(t, res.Check.Jobs, res.Check.Done, "every job DONE")
			require.GreaterOrEqual(t, res.Check.Reaps, res.Held, "the held slots came back by the reaper")
		})
	}
}
