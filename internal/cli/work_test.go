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
