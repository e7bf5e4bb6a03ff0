package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/execjob"
	"github.com/lockstep-queue/lockstep/internal/clitest"
	"github.com/lockstep-queue/lockstep/internal/faultproxy"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// TestCLIWorkKeepsOutput: an exec worker keeps the end of a successful
// command's stdout and stderr as the job's output, --exec-output-bytes of
// each, and jobs show prints it; --exec-output-bytes 0 keeps none.
func TestCLIWorkKeepsOutput(t *testing.T) {
	bin := clitest.Binary(t)
	for _, tc := range []struct {
		name  string
		flags []string
		want  *execjob.Output
	}{
		{"default", nil, &execjob.Output{Stdout: `{"n":7}` + "\nresult\n", Stderr: "note\n"}},
		{"cut", []string{"--exec-output-bytes", "7"}, &execjob.Output{Stdout: "[lockstep: 8 earlier bytes dropped]\nresult\n", Stderr: "note\n"}},
		{"none", []string{"--exec-output-bytes", "0"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &lockstepCLI{&clitest.CLI{T: t, Bin: bin, DSN: "sqlite:" + filepath.Join(t.TempDir(), "q.db")}}
			l.OK("migrate", "up")
			id := l.enqueue("say", `{"n":7}`)

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			work := l.Command(ctx, append([]string{"work", "--exec", `say=cat; echo; echo result; echo note >&2`, "--poll", "100ms"}, tc.flags...)...)
			logPath := filepath.Join(t.TempDir(), "work.log")
			logFile, err := os.Create(logPath)
			require.NoError(t, err)
			defer logFile.Close()
			work.Stdout, work.Stderr = logFile, logFile
			require.NoError(t, work.Start())
			exited := make(chan error, 1)
			go func() { exited <- work.Wait() }()
			defer func() {
				if work.ProcessState == nil {
					_ = work.Process.Kill()
					<-exited
				}
			}()

			j := l.waitStatus(id, lockstep.StatusDone)
			if tc.want == nil {
				require.Nil(t, j.Output)
			} else {
				var got execjob.Output
				require.NoError(t, json.Unmarshal(j.Output, &got), "%s", j.Output)
				require.Equal(t, *tc.want, got)
				require.Contains(t, l.OK("jobs", "show", itoa(id)), "result")
			}

			require.NoError(t, work.Process.Signal(syscall.SIGTERM))
			err = <-exited
			logs, _ := os.ReadFile(logPath)
			require.NoError(t, err, "%s", logs)
		})
	}
}

func TestCLIWorkOutputFlag(t *testing.T) {
	l := &lockstepCLI{&clitest.CLI{T: t, Bin: clitest.Binary(t), DSN: "sqlite:" + filepath.Join(t.TempDir(), "q.db")}}
	require.Equal(t, "lockstep: --exec-output-bytes must not be negative, got -1",
		l.Fail("work", "--exec", "a=true", "--exec-output-bytes", "-1"))
	require.Equal(t, "lockstep: --exec-output-bytes is only used with --kind exec or --exec",
		l.Fail("work", "--kind", "demo", "--exec-output-bytes", "10"))
	help := l.OK("work", "--help")
	require.Contains(t, help, "--exec-output-bytes int")
	require.Contains(t, help, "keep the last N bytes of each of a successful command's stdout and stderr as the job's output (0: keep none) (default 65536)")
	require.Contains(t, strings.Join(strings.Fields(help), " "), `as the job's output, {"stdout": …, "stderr": …}`)
}

// TestCLIWorkWaitsForItsDatabase: `lockstep work` started while its
// database is away (a supervisor restarting it during a failover) waits
// for the database instead of exiting, says so in its log, and works once
// the database answers. The database's absence is a fault proxy that
// refuses every connection; the test turns it back on once the process
// has logged that it waits: synchronised on the log, not on time.
func TestCLIWorkWaitsForItsDatabase(t *testing.T) {
	for _, d := range []struct {
		name string
		dsn  func(t testing.TB) string // the driver's own form
		url  func(t *testing.T, dsn string) string
	}{
		{"mariadb", testdb.MySQL, clitest.MySQLURL},
		{"oraclemysql", testdb.OracleMySQL, clitest.MySQLURL},
		{"postgres", testdb.Postgres, func(_ *testing.T, dsn string) string { return dsn }},
	} {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			dsn := d.dsn(t)
			direct := &lockstepCLI{&clitest.CLI{T: t, Bin: clitest.Binary(t), DSN: d.url(t, dsn)}}
			direct.OK("migrate", "up")
			id := direct.enqueue("say", `{}`)

			target, err := testdb.DSNAddr(dsn)
			require.NoError(t, err)
			p, err := faultproxy.New(ctx, target)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, p.Close()) })
			proxied, err := testdb.DSNWithAddr(dsn, p.Addr())
			require.NoError(t, err)
			p.Refuse(true)

			l := &lockstepCLI{&clitest.CLI{T: t, Bin: direct.Bin, DSN: d.url(t, proxied)}}
			work := l.Command(ctx, "work", "--exec", "say=true", "--poll", "100ms")
			var log syncBuffer
			work.Stdout, work.Stderr = &log, &log
			require.NoError(t, work.Start())
			exited := make(chan error, 1)
			go func() { exited <- work.Wait() }()
			defer func() {
				if work.ProcessState == nil {
					_ = work.Process.Kill()
					<-exited
				}
			}()

			select {
			case err := <-exited:
				t.Fatalf("work exited while its database was away (%v); its log:\n%s", err, log.String())
			case <-waitLog(ctx, &log, "the database is away; waiting for it"):
			}
			require.Equal(t, lockstep.StatusPending, direct.job(id).Status, "nothing ran while the database was away")
			p.Refuse(false)
			direct.waitStatus(id, lockstep.StatusDone)
			require.Contains(t, log.String(), "the database is back")

			require.NoError(t, work.Process.Signal(syscall.SIGTERM))
			require.NoError(t, <-exited, "%s", log.String())
		})
	}
}

// waitLog is closed once b holds want (or ctx ends).
func waitLog(ctx context.Context, b *syncBuffer, want string) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		for ctx.Err() == nil && !strings.Contains(b.String(), want) {
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return ch
}
