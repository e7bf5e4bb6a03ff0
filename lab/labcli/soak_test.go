package labcli

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/clitest"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// labSoakJSON is the part of the soak's JSON result the test reads.
type labSoakJSON struct {
	Dialect              string   `json:"dialect"`
	Seed                 uint64   `json:"seed"`
	JobsEnqueued         int      `json:"jobs_enqueued"`
	Done                 int      `json:"done"`
	Failed               int      `json:"failed"`
	Cancelled            int      `json:"cancelled"`
	DeadClaims           int      `json:"dead_worker_claims"`
	StaleFinishes        int      `json:"stale_finishes"`
	StaleFinishesRefused int      `json:"stale_finishes_refused"`
	Lost                 int      `json:"lost"`
	DoubleFinished       int      `json:"double_finished"`
	ProblemCount         int      `json:"problem_count"`
	Problems             []string `json:"problems"`
	Deadlocks            *int64   `json:"deadlocks"`
	DeadlockCounter      string   `json:"deadlock_counter"`
	SessionIsolation     string   `json:"session_isolation"`
	Isolation            string   `json:"isolation"`
	LoadSeconds          float64  `json:"load_seconds"`
}

func TestLabSoakOnSQLite(t *testing.T) {
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "soak.db")
	code, out, errOut := runCLI(t, "--dsn", dsn, "lab", "soak", "--duration", "3s", "--seed", "7", "--json")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	require.Contains(t, errOut, "started: sqlite", "progress goes to stderr with --json")

	var res labSoakJSON
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.Equal(t, "sqlite", res.Dialect)
	require.EqualValues(t, 7, res.Seed)
	// The load runs for the duration and then drains: at least 3 s, and
	// not wildly more (a loaded CI machine may add seconds).
	require.GreaterOrEqual(t, res.LoadSeconds, 3.0)
	require.Less(t, res.LoadSeconds, 60.0)
	require.Zero(t, res.ProblemCount, "%v", res.Problems)
	require.Zero(t, res.Lost)
	require.Zero(t, res.DoubleFinished)
	require.Nil(t, res.Deadlocks, "SQLite has no deadlock counter")
	require.Positive(t, res.Done)
	require.Equal(t, res.JobsEnqueued, res.Done+res.Failed+res.Cancelled)
	require.Positive(t, res.DeadClaims)
	require.Equal(t, res.StaleFinishes, res.StaleFinishesRefused)

	// The database now holds the soak's jobs: a second soak refuses it.
	code, _, errOut = runCLI(t, "--dsn", dsn, "lab", "soak", "--duration", "1s")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "scratch database")
}

// TestLabSoakOnMySQLServers runs the command on MariaDB and Oracle MySQL
// at REPEATABLE READ: the flag is accepted there, the sessions start at
// the level under the variable each server names it by, and the
// server's deadlock counter (Innodb_deadlocks on MariaDB, INNODB_METRICS
// lock_deadlocks on Oracle MySQL) is read and stays at zero.
func TestLabSoakOnMySQLServers(t *testing.T) {
	for _, c := range []struct {
		name    string
		dsn     func(testing.TB) string
		counter string
	}{
		{"MariaDB", testdb.MySQL, "Innodb_deadlocks"},
		{"OracleMySQL", testdb.OracleMySQL, "INNODB_METRICS lock_deadlocks"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dsn := clitest.MySQLURL(t, c.dsn(t))
			code, out, errOut := runCLI(t, "--dsn", dsn, "lab", "soak", "--duration", "3s", "--seed", "11",
				"--isolation", "repeatable-read", "--json")
			require.Equal(t, 0, code, "stderr: %s", errOut)
			require.Contains(t, errOut, "started: mysql")
			var res labSoakJSON
			require.NoError(t, json.Unmarshal([]byte(out), &res), out)
			require.Equal(t, "mysql", res.Dialect)
			require.Equal(t, "REPEATABLE-READ", res.SessionIsolation)
			require.Equal(t, "REPEATABLE READ", res.Isolation)
			require.Contains(t, res.DeadlockCounter, c.counter)
			require.NotNil(t, res.Deadlocks, "a server database has a deadlock counter")
			require.Zero(t, *res.Deadlocks)
			require.Zero(t, res.ProblemCount, "%v", res.Problems)
			require.Zero(t, res.Lost)
			require.Zero(t, res.DoubleFinished)
			require.Positive(t, res.Done)
			require.Equal(t, res.JobsEnqueued, res.Done+res.Failed+res.Cancelled)
			require.Equal(t, res.StaleFinishes, res.StaleFinishesRefused)
		})
	}
}

func TestLabSoakText(t *testing.T) {
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "soak.db")
	code, out, errOut := runCLI(t, "--dsn", dsn, "lab", "soak", "--duration", "1s", "--pools", "2", "--workers", "2")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	for _, want := range []string{"started: sqlite", "lockstep soak: sqlite", "jobs finished", "stale finishes", "server deadlocks", "n/a", "problems", "none"} {
		require.Contains(t, out, want)
	}
}

func TestLabSoakRefusesBadFlags(t *testing.T) {
	sqliteDSN := "sqlite://" + filepath.Join(t.TempDir(), "soak.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"lab", "soak"}, "needs --dsn"},
		{[]string{"--dsn", sqliteDSN, "lab", "soak", "--isolation", "repeatable-read"}, "is for MySQL/MariaDB"},
		{[]string{"--dsn", sqliteDSN, "lab", "soak", "--isolation", "serializable"}, "read-committed or repeatable-read"},
		{[]string{"--dsn", sqliteDSN, "lab", "soak", "--duration", "0s"}, "--duration must be positive"},
		{[]string{"--dsn", sqliteDSN, "lab", "soak", "--pools", "-1"}, "Pools must be between"},
	} {
		t.Setenv("LOCKSTEP_DSN", "")
		code, _, errOut := runCLI(t, tc.args...)
		require.Equal(t, 1, code, "%v", tc.args)
		require.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}
