package labcli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/clitest"
	"github.com/lockstep-queue/lockstep/internal/dsn"
	"github.com/lockstep-queue/lockstep/internal/statusaudit"
	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/lab/chaos"
)

// serverDialects are the server databases the process tests run on, each
// call of dsn a fresh, empty database in lockstep's DSN form.
func serverDialects() []struct {
	name string
	dsn  func(t *testing.T) string
} {
	return []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"mariadb", func(t *testing.T) string { return clitest.MySQLURL(t, testdb.MySQL(t)) }},
		{"oraclemysql", func(t *testing.T) string { return clitest.MySQLURL(t, testdb.OracleMySQL(t)) }},
		{"postgres", func(t *testing.T) string { return testdb.Postgres(t) }},
	}
}

// envInt reads a positive integer setting of the chaos test, or def.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "$%s", name)
	require.Positive(t, n, "$%s", name)
	return n
}

// TestChaosKill9 runs the built binary as four worker processes and kills
// one with SIGKILL every 1–3 s while they work, cancelling three runs half
// way, then checks the ledger, the status audit and the final rows (see
// package lab/chaos). Every second run is a workflow with the three
// callbacks: no job may start before its dependencies are DONE, and each
// callback fires exactly once, kills or not. The CI size is 5,000 jobs; $LOCKSTEP_CHAOS_JOBS and
// $LOCKSTEP_CHAOS_WORK_MS set the size of a long run (docs/reliability.md).
func TestChaosKill9(t *testing.T) {
	jobs := envInt(t, "LOCKSTEP_CHAOS_JOBS", 5000)
	workMillis := envInt(t, "LOCKSTEP_CHAOS_WORK_MS", 100)
	for _, d := range serverDialects() {
		t.Run(d.name, func(t *testing.T) {
			res := runChaos(t, d.dsn(t), jobs, workMillis, uint64(len(d.name)))
			// Half the runs are workflows with callbacks (chaos.Config.
			// WorkflowEvery): kills must not lose a promotion or a callback.
			require.Positive(t, res.Workflows, "workflow runs")
			require.Equal(t, 3, res.RunsCancelled)
		})
	}
}

// TestChaosKill9SQLite is TestChaosKill9 on the embedded default: four
// `lockstep work` processes on one SQLite file (WAL, one writer at a
// time), one killed with SIGKILL every 1–3 s — whatever it is doing, a
// commit included — while the others work; every job DONE or CANCELLED
// once, none lost, none finished twice, no promotion or callback lost.
// $LOCKSTEP_CHAOS_SQLITE_JOBS sets the size of a long run.
//
// The reap limit is 12 s here, not the servers' 3 s. A CI run (race-built
// processes, every package's tests beside them) saw a live process's
// jobs reaped at 3 s, which the server runs beside it did not. SQLite's
// busy handler polls for the write lock (sleeping up to 100 ms between
// tries), so under load one process's writes can be passed over by the
// others' for seconds while theirs go through; a starved CPU does the
// same to any process. The reaper's write-delay guard watches its own
// process's writes: it covers a writer held by a long transaction, which
// keeps every process waiting (TestReaperWaitsOutAHeldWriter), not one
// process left behind by the others. 12 s is past SQLite's 10-s busy
// timeout, after which a waiting heartbeat fails and is retried; the
// default reap limit is a minute.
func TestChaosKill9SQLite(t *testing.T) {
	jobs := envInt(t, "LOCKSTEP_CHAOS_SQLITE_JOBS", 2000)
	runChaosWith(t, "sqlite://"+filepath.Join(t.TempDir(), "chaos.db"), jobs, 50, 6, 12*time.Second)
}

// runChaos migrates dsn, runs the chaos harness on it with four processes
// and checks what every run must show: no problem, every job final, and
// kills, reaps, promotions and callbacks that prove something happened.
func runChaos(t *testing.T, dsn string, jobs, workMillis int, seed uint64) *chaos.Result {
	t.Helper()
	return runChaosWith(t, dsn, jobs, workMillis, seed, 0)
}

// runChaosWith is runChaos with the worker processes' reap limit (0: the
// harness's default).
func runChaosWith(t *testing.T, dsn string, jobs, workMillis int, seed uint64, reapAfter time.Duration) *chaos.Result {
	t.Helper()
	l := &clitest.CLI{T: t, Bin: clitest.Binary(t), DSN: dsn}
	require.Contains(t, l.OK("migrate", "up"), "schema is at version")
	var progress strings.Builder
	res, err := chaos.Run(context.Background(), chaos.Config{
		Binary:     l.Bin,
		DSN:        l.DSN,
		Env:        []string{"GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")},
		LogDir:     t.TempDir(),
		Processes:  4,
		Jobs:       jobs,
		WorkMillis: workMillis,
		Seed:       seed,
		ReapAfter:  reapAfter,
		Progress:   &progress,
	})
	if res != nil {
		t.Log(res.String())
	}
	require.NoError(t, err, "progress:\n%s", progress.String())
	require.Empty(t, res.Problems, "%d problems", res.ProblemCount)
	require.Equal(t, res.Jobs, res.Done+res.Cancelled, "every job, callbacks included, DONE or CANCELLED")
	require.Positive(t, res.Promotions, "promotions")
	require.Positive(t, res.CallbacksFired, "callbacks fired")
	require.Positive(t, res.Kills, "the run must have killed processes to prove anything")
	require.Positive(t, res.Reaps, "killed processes' jobs must have been reaped")
	return res
}

// TestKill9MidJob is the deterministic half of the chaos test: a process
// is killed while it holds a job in its first attempt (synchronised on the
// ledger row the job wrote, not on time), and a second process must run
// the job again exactly once, after the reaper returns it. The same
// records, checked as if the first process had not been killed, must be
// reported as a broken promise: the checker is tested on real data too.
func TestKill9MidJob(t *testing.T) {
	for _, d := range serverDialects() {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			l := &clitest.CLI{T: t, Bin: clitest.Binary(t), DSN: d.dsn(t)}
			require.Contains(t, l.OK("migrate", "up"), "schema is at version")
			drv, err := dsn.Open(ctx, l.DSN)
			require.NoError(t, err)
			t.Cleanup(func() { _ = drv.Close() })
			require.NoError(t, chaos.InstallLedger(ctx, drv))
			require.NoError(t, statusaudit.Install(ctx, drv))
			client, err := lockstep.NewClient(drv, lockstep.Config{})
			require.NoError(t, err)
			idRes, err := client.Insert(ctx, chaos.LedgerArgs{FirstMillis: 10 * 60 * 1000}, nil)
			require.NoError(t, err)
			id := idRes.ID

			work := func() (*exec.Cmd, *bytes.Buffer) {
				cmd := l.Command(ctx, "work", "--kind", "ledger", "--heartbeat", "200ms", "--reap-after", "1s", "--poll", "100ms")
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				require.NoError(t, cmd.Start())
				return cmd, &out
			}
			a, _ := work()
			started := func() int {
				var n int
				require.NoError(t, drv.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM "+chaos.LedgerTable).Scan(&n))
				return n
			}
			clitest.WaitFor(t, "the first attempt to start", func() bool { return started() == 1 })
			require.NoError(t, a.Process.Signal(syscall.SIGKILL))
			_ = a.Wait()
			j, err := client.Job(ctx, id)
			require.NoError(t, err)
			require.Equal(t, lockstep.StatusRunning, j.Status, "a killed process's job stays RUNNING until reaped")

			b, out := work()
			clitest.WaitFor(t, "the job to be DONE", func() bool {
				j, err = client.Job(ctx, id)
				require.NoError(t, err)
				return j.Status == lockstep.StatusDone
			})
			require.NoError(t, b.Process.Signal(syscall.SIGTERM))
			require.NoError(t, b.Wait(), out.String())
			require.Equal(t, 2, j.Attempts)
			require.Contains(t, out.String(), "reaped a job whose worker stopped heartbeating")

			res, err := chaos.Check(ctx, drv, chaos.Known{Jobs: map[int64]int64{id: 0}, Killed: map[int]bool{a.Process.Pid: true}})
			require.NoError(t, err)
			require.Empty(t, res.Problems)
			require.Equal(t, 1, res.Done)
			require.Equal(t, 2, res.Executions)
			require.Equal(t, 1, res.Completions)
			require.Equal(t, 1, res.Reaps)
			require.Equal(t, 1, res.ReExecuted)

			res, err = chaos.Check(ctx, drv, chaos.Known{Jobs: map[int64]int64{id: 0}, Killed: map[int]bool{}})
			require.NoError(t, err)
			require.False(t, res.OK())
			require.Contains(t, strings.Join(res.Problems, "\n"), "never killed")
		})
	}
}

// TestKill9MidWorkflow: a process is killed while it holds the first job
// of a workflow (synchronised on the ledger row the job wrote); a second
// process must run it again after the reaper returns it, then its
// dependent, then the success and complete callbacks, each exactly once,
// and cancel the failure callback. The same records checked against a
// reversed dependency must be reported: the order check sees real data.
func TestKill9MidWorkflow(t *testing.T) {
	for _, d := range serverDialects() {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			l := &clitest.CLI{T: t, Bin: clitest.Binary(t), DSN: d.dsn(t)}
			require.Contains(t, l.OK("migrate", "up"), "schema is at version")
			drv, err := dsn.Open(ctx, l.DSN)
			require.NoError(t, err)
			t.Cleanup(func() { _ = drv.Close() })
			require.NoError(t, chaos.InstallLedger(ctx, drv))
			require.NoError(t, statusaudit.Install(ctx, drv))
			client, err := lockstep.NewClient(drv, lockstep.Config{})
			require.NoError(t, err)
			var cbs []lockstep.RunCallback
			for _, on := range []lockstep.CallbackOn{lockstep.CallbackOnSuccess, lockstep.CallbackOnFailure, lockstep.CallbackOnComplete} {
				cbs = append(cbs, lockstep.RunCallback{On: on, Args: chaos.LedgerCallback{On: on}})
			}
			run, res, err := client.InsertRun(ctx, "kill-mid-workflow", &lockstep.RunOpts{Callbacks: cbs},
				lockstep.InsertManyParams{Args: chaos.LedgerArgs{FirstMillis: 10 * 60 * 1000}, Key: "a"},
				lockstep.InsertManyParams{Args: chaos.LedgerArgs{}, Key: "b", DependsOn: []string{"a"}},
			)
			require.NoError(t, err)
			a, b := res[0].ID, res[1].ID

			work := func() (*exec.Cmd, *bytes.Buffer) {
				cmd := l.Command(ctx, "work", "--kind", "ledger", "--heartbeat", "200ms", "--reap-after", "1s", "--poll", "100ms")
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				require.NoError(t, cmd.Start())
				return cmd, &out
			}
			first, _ := work()
			clitest.WaitFor(t, "the first job's first attempt to start", func() bool {
				var n int
				require.NoError(t, drv.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM "+chaos.LedgerTable).Scan(&n))
				return n == 1
			})
			require.NoError(t, first.Process.Signal(syscall.SIGKILL))
			_ = first.Wait()
			require.Equal(t, lockstep.StatusWaiting, jobStatusOf(t, client, b), "the dependent waits while its dependency's process is dead")

			second, out := work()
			clitest.WaitFor(t, "every job of the run to end", func() bool {
				_, counts, err := client.Run(ctx, run.ID)
				require.NoError(t, err)
				return counts[lockstep.StatusDone]+counts[lockstep.StatusCancelled] == 5
			})
			require.NoError(t, second.Process.Signal(syscall.SIGTERM))
			require.NoError(t, second.Wait(), out.String())

			known := func(deps map[int64][]int64) chaos.Known {
				return chaos.Known{Jobs: map[int64]int64{a: run.ID, b: run.ID}, Killed: map[int]bool{first.Process.Pid: true},
					Deps: deps, Workflows: map[int64]bool{run.ID: true}}
			}
			got, err := chaos.Check(ctx, drv, known(map[int64][]int64{b: {a}}))
			require.NoError(t, err)
			require.Empty(t, got.Problems)
			require.Equal(t, 5, got.Jobs, "two jobs and three callbacks")
			require.Equal(t, 4, got.Done, "a, b, and the success and complete callbacks")
			require.Equal(t, 1, got.Cancelled, "the failure callback")
			require.Equal(t, 3, got.Promotions, "b and two callbacks")
			require.Equal(t, 2, got.CallbacksFired)
			require.Equal(t, 1, got.Reaps)

			got, err = chaos.Check(ctx, drv, known(map[int64][]int64{a: {b}}))
			require.NoError(t, err)
			require.Contains(t, strings.Join(got.Problems, "\n"), "before its dependency", "a reversed dependency is caught")
		})
	}
}

func jobStatusOf(t *testing.T, c *lockstep.Client, id int64) lockstep.JobStatus {
	t.Helper()
	j, err := c.Job(context.Background(), id)
	require.NoError(t, err)
	return j.Status
}
