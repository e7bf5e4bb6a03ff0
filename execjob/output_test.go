//go:build unix

package execjob_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/execjob"
	"github.com/lockstep-queue/lockstep/migrate"
)

// runKinds runs one job of each kind, whose worker is given, through a
// real client on SQLite with cfg, and returns each job once it has
// finished.
func runKinds(t *testing.T, cfg lockstep.Config, workers map[string]*execjob.Worker) map[string]*lockstep.JobRow {
	t.Helper()
	ctx := context.Background()
	drv, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "q.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = drv.Close() })
	m, err := migrate.New(drv)
	require.NoError(t, err)
	_, err = m.Up(ctx)
	require.NoError(t, err)

	ws := lockstep.NewWorkers()
	for kind, w := range workers {
		require.NoError(t, execjob.RegisterKind(ws, kind, w))
	}
	cfg.Workers, cfg.PollInterval = ws, 20*time.Millisecond
	client, err := lockstep.NewClient(drv, cfg)
	require.NoError(t, err)
	require.NoError(t, client.Start(ctx))
	defer func() { require.NoError(t, client.Stop(ctx)) }()

	ids := map[string]int64{}
	for kind := range workers {
		res, err := client.Insert(ctx, lockstep.RawArgs{KindName: kind, JSON: json.RawMessage(`{}`)}, &lockstep.InsertOpts{MaxAttempts: 1})
		require.NoError(t, err)
		ids[kind] = res.ID
	}
	jobs := map[string]*lockstep.JobRow{}
	for kind, id := range ids {
		require.Eventually(t, func() bool {
			j, err := client.Job(ctx, id)
			require.NoError(t, err)
			jobs[kind] = j
			return j.Status == lockstep.StatusDone || j.Status == lockstep.StatusFailed
		}, 20*time.Second, 10*time.Millisecond)
	}
	return jobs
}

func output(t *testing.T, j *lockstep.JobRow) execjob.Output {
	t.Helper()
	require.NotNil(t, j.Output, "job %d (%s) recorded no output", j.ID, j.Kind)
	var o execjob.Output
	require.NoError(t, json.Unmarshal(j.Output, &o))
	return o
}

// TestExecOutput: a successful run keeps the end of its standard output
// and standard error as the job's output, each cut at a character with a
// line saying how much was dropped; a failed run keeps its stderr in the
// error, as before, and records no output.
func TestExecOutput(t *testing.T) {
	jobs := runKinds(t, lockstep.Config{}, map[string]*execjob.Worker{
		"both":    {Shell: `echo "result: 42"; echo "warning: slow disk" >&2`, OutputBytes: 64},
		"quiet":   {Shell: `true`, OutputBytes: 64},
		"kept":    {Shell: `echo "result: 42"`}, // OutputBytes 0: none kept
		"failing": {Shell: `echo "half done"; echo "boom" >&2; exit 3`, OutputBytes: 64},
		// 4 ASCII bytes, then 7 two-byte é: the last 5 bytes start in
		// the middle of an é, which is dropped too.
		"long": {Shell: `printf 'abcd\303\251\303\251\303\251\303\251\303\251\303\251\303\251'; printf 'x\000y\377z' >&2`, OutputBytes: 5},
	})

	require.Equal(t, lockstep.StatusDone, jobs["both"].Status)
	require.Equal(t, execjob.Output{Stdout: "result: 42\n", Stderr: "warning: slow disk\n"}, output(t, jobs["both"]))
	require.JSONEq(t, `{"stdout":"result: 42\n","stderr":"warning: slow disk\n"}`, string(jobs["both"].Output))

	require.Equal(t, lockstep.StatusDone, jobs["quiet"].Status)
	require.Nil(t, jobs["quiet"].Output, "a run that wrote nothing records nothing")
	require.Equal(t, lockstep.StatusDone, jobs["kept"].Status)
	require.Nil(t, jobs["kept"].Output, "OutputBytes 0 keeps nothing")

	require.Equal(t, lockstep.StatusFailed, jobs["failing"].Status)
	require.Nil(t, jobs["failing"].Output)
	require.Len(t, jobs["failing"].Errors, 1)
	require.Equal(t, "exec: command exited with code 3; stderr:\nboom", jobs["failing"].Errors[0].Error)

	require.Equal(t, execjob.Output{
		Stdout: "[lockstep: 14 earlier bytes dropped]\néé",
		Stderr: "xy\uFFFDz", // the NUL is dropped, the invalid byte replaced
	}, output(t, jobs["long"]))
}

// TestExecOutputFitsMaxArgsBytes: output whose JSON would exceed the
// client's Config.MaxArgsBytes is cut further rather than failing the job.
func TestExecOutputFitsMaxArgsBytes(t *testing.T) {
	const limit = 300
	jobs := runKinds(t, lockstep.Config{MaxArgsBytes: limit}, map[string]*execjob.Worker{
		// 1000 '<', each six bytes in JSON (\u003c).
		"escaped": {Shell: `head -c 1000 /dev/zero | tr '\0' '<'`, OutputBytes: 1000},
	})
	j := jobs["escaped"]
	require.Equal(t, lockstep.StatusDone, j.Status)
	require.LessOrEqual(t, len(j.Output), limit)
	o := output(t, j)
	kept := strings.Count(o.Stdout, "<")
	require.Positive(t, kept)
	require.True(t, strings.HasPrefix(o.Stdout, fmt.Sprintf("[lockstep: %d earlier bytes dropped]\n", 1000-kept)), "%q", o.Stdout)
}
