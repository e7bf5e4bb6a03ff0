package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/internal/browser"
	"github.com/lockstep-queue/lockstep/internal/clitest"
	"github.com/lockstep-queue/lockstep/internal/dsn"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// The helpers the package's test files share. The ones the lab's tests
// need as well (the binary, running it, the in-process runner, the waits)
// are in internal/clitest.

// TestMain starts throwaway database servers lazily, for the commands
// that need MariaDB, Oracle MySQL or PostgreSQL, and removes the binary the
// CLI tests built.
func TestMain(m *testing.M) {
	os.Exit(clitest.Main(m))
}

// runCLI runs the command line in-process and returns its exit code and
// output. It runs the queue's commands alone: the lab's tests, which run
// it with the lab mounted, are in lab/labcli.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return clitest.InProcess(t, func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		return Run(ctx, args, stdout, stderr)
	}, args...)
}

// cliDialects are the databases every CLI test runs on: each call gives a
// fresh, empty database.
func cliDialects() []struct {
	name string
	dsn  func(t *testing.T) string
} {
	return []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "q.db") }},
		{"mariadb", func(t *testing.T) string { return clitest.MySQLURL(t, testdb.MySQL(t)) }},
		{"oraclemysql", func(t *testing.T) string { return clitest.MySQLURL(t, testdb.OracleMySQL(t)) }},
		{"postgres", func(t *testing.T) string { return testdb.Postgres(t) }},
	}
}

// schemaDialects are SQLite, MariaDB and PostgreSQL: the three ways a
// database says that a table is missing (Oracle MySQL says it as MariaDB
// does).
func schemaDialects() []struct {
	name string
	dsn  func(t *testing.T) string
} {
	var out []struct {
		name string
		dsn  func(t *testing.T) string
	}
	for _, d := range cliDialects() {
		if d.name != "oraclemysql" {
			out = append(out, d)
		}
	}
	return out
}

// forEachDialect runs fn, in parallel, on a migrated fresh database of
// each dialect.
func forEachDialect(t *testing.T, fn func(t *testing.T, l *lockstepCLI)) {
	for _, d := range cliDialects() {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			l := &lockstepCLI{&clitest.CLI{T: t, Bin: clitest.Binary(t), DSN: d.dsn(t)}}
			require.Contains(t, l.OK("migrate", "up"), "schema is at version")
			fn(t, l)
		})
	}
}

// lockstepCLI runs the binary on one database, and reads its jobs back
// through it in the CLI's own JSON forms.
type lockstepCLI struct {
	*clitest.CLI
}

// json runs a command with --json and decodes its output into v.
func (l *lockstepCLI) json(v any, args ...string) {
	l.T.Helper()
	out := l.OK(append(args, "--json")...)
	require.NoError(l.T, json.Unmarshal([]byte(out), v), out)
}

// enqueue adds a job and returns its id, printed alone on stdout.
func (l *lockstepCLI) enqueue(args ...string) int64 {
	l.T.Helper()
	out := l.OK(append([]string{"enqueue"}, args...)...)
	id, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	require.NoError(l.T, err, "enqueue prints the id: %q", out)
	return id
}

func (l *lockstepCLI) job(id int64) jobOut {
	l.T.Helper()
	var j jobOut
	l.json(&j, "jobs", "show", strconv.FormatInt(id, 10))
	return j
}

func (l *lockstepCLI) allJobs() []jobOut {
	l.T.Helper()
	var p jobPageOut
	l.json(&p, "jobs", "--limit", "1000")
	require.Zero(l.T, p.Next)
	return p.Jobs
}

// waitJob polls the job through the CLI until cond holds.
func (l *lockstepCLI) waitJob(id int64, what string, cond func(j jobOut) bool) jobOut {
	l.T.Helper()
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		last := l.job(id)
		if cond(last) {
			return last
		}
		if time.Now().After(deadline) {
			l.T.Fatalf("job %d: still not %s after 60s: %+v", id, what, last)
		}
		<-tick.C
	}
}

func (l *lockstepCLI) waitStatus(id int64, st lockstep.JobStatus) jobOut {
	l.T.Helper()
	return l.waitJob(id, string(st), func(j jobOut) bool { return j.Status == st })
}

func ids(jobs []jobOut) []int64 {
	out := make([]int64, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}

func itoa(id int64) string { return strconv.FormatInt(id, 10) }

// openCLIDatabase opens the database the CLI runs on, for the test's own
// reads and writes.
func openCLIDatabase(t *testing.T, l *lockstepCLI) driver.Driver {
	t.Helper()
	drv, err := dsn.Open(context.Background(), l.DSN)
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	return drv
}

// syncBuffer collects a running command's output and reports the
// "listening on URL" line once it is written.
type syncBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	url   chan string
	found bool
}

var reListening = regexp.MustCompile(`(?m)^listening on (http://\S+)$`)

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if b.url != nil && !b.found {
		if m := reListening.FindStringSubmatch(b.buf.String()); m != nil {
			b.found = true
			b.url <- m[1]
		}
	}
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startServe runs `lockstep serve` in-process on 127.0.0.1:0 and returns
// its URL and a stop function (the signal) that returns its exit code.
func startServe(t *testing.T, env map[string]string, args ...string) (string, func() int) {
	t.Helper()
	url, stop, _ := startServeLog(t, env, args...)
	return url, stop
}

// startServeLog is startServe that also returns serve's stderr.
func startServeLog(t *testing.T, env map[string]string, args ...string) (string, func() int, *syncBuffer) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stdout := &syncBuffer{url: make(chan string, 1)}
	stderr := &syncBuffer{}
	exited := make(chan int, 1)
	go func() { exited <- Run(ctx, append(args, "serve", "--addr", "127.0.0.1:0"), stdout, stderr) }()
	stopped := false
	stop := func() int {
		if stopped {
			return 0
		}
		stopped = true
		cancel()
		select {
		case code := <-exited:
			return code
		case <-time.After(60 * time.Second):
			t.Fatalf("serve did not stop; stderr:\n%s", stderr)
			return -1
		}
	}
	t.Cleanup(func() { stop() })
	select {
	case u := <-stdout.url:
		require.Equal(t, "listening on "+u+"\n", stdout.String(), "one line on stdout")
		return u, stop, stderr
	case code := <-exited:
		stopped = true
		t.Fatalf("serve exited with %d before listening; stderr:\n%s", code, stderr)
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not listen; stderr:\n%s", stderr)
	}
	return "", stop, stderr
}

// deadlockTestdata names a report among the decoder's own test inputs.
func deadlockTestdata(name string) string {
	return filepath.Join("..", "..", "lockdiag", "deadlock", "testdata", name)
}

// waitScript polls a script until it returns true.
func waitScript(ctx context.Context, sess *browser.Session, script string) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		out, err := sess.ExecuteScript(ctx, script)
		if err != nil {
			return err
		}
		if string(out) == "true" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s never returned true: %w", script, ctx.Err())
		case <-t.C:
		}
	}
}

// browserOnSQLite starts headless Chromium and a migrated SQLite database
// for a dashboard test, and a client on it; all are closed with the test.
func browserOnSQLite(ctx context.Context, t *testing.T) (*browser.Session, string, *lockstep.Client) {
	t.Helper()
	sess, err := browser.Start(ctx, browser.Options{TempDir: t.TempDir()})
	require.NoError(t, err, "the browser test needs Debian's chromium and chromium-driver (make deps installs them)")
	t.Cleanup(func() { _ = sess.Close() })
	dsnURL := "sqlite:" + filepath.Join(t.TempDir(), "q.db")
	code, _, errOut := runCLI(t, "--dsn", dsnURL, "migrate", "up")
	require.Equal(t, 0, code, errOut)
	drv, err := dsn.Open(ctx, dsnURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	require.NoError(t, err)
	return sess, dsnURL, client
}
