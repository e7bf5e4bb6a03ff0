//go:build unix

package execjob_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
	"github.com/lockstep-queue/lockstep/execjob"
	"github.com/lockstep-queue/lockstep/migrate"
)

// TestExecWithClient runs exec jobs through a real client on SQLite: one
// that succeeds and one that fails every attempt, whose stderr lands in
// the error history.
func TestExecWithClient(t *testing.T) {
	ctx := context.Background()
	drv, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "q.db"))
	require.NoError(t, err)
	defer drv.Close()
	m, err := migrate.New(drv)
	require.NoError(t, err)
	_, err = m.Up(ctx)
	require.NoError(t, err)

	ws := lockstep.NewWorkers()
	require.NoError(t, execjob.Register(ws, &execjob.Worker{
		Shell: `if grep -q fail; then echo "it failed on attempt $LOCKSTEP_JOB_ATTEMPT" >&2; exit 4; fi`,
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{
		Workers: ws, PollInterval: 20 * time.Millisecond,
		RetryBackoff: func(int) time.Duration { return 10 * time.Millisecond },
	})
	require.NoError(t, err)
	require.NoError(t, client.Start(ctx))
	defer func() { require.NoError(t, client.Stop(ctx)) }()

	okIDRes, err := client.Insert(ctx, execjob.Args{JSON: json.RawMessage(`{"x":1}`)}, nil)
	require.NoError(t, err)
	okID := okIDRes.ID
	// Other tools enqueue the same kind with raw JSON.
	failIDRes, err := client.Insert(ctx, lockstep.RawArgs{KindName: execjob.Kind, JSON: json.RawMessage(`{"fail":true}`)}, &lockstep.InsertOpts{MaxAttempts: 2})
	require.NoError(t, err)
	failID := failIDRes.ID

	final := func(id int64) *lockstep.JobRow {
		var j *lockstep.JobRow
		require.Eventually(t, func() bool {
			j, err = client.Job(ctx, id)
			require.NoError(t, err)
			return j.Status == lockstep.StatusDone || j.Status == lockstep.StatusFailed
		}, 20*time.Second, 10*time.Millisecond)
		return j
	}
	require.Equal(t, lockstep.StatusDone, final(okID).Status)
	j := final(failID)
	require.Equal(t, lockstep.StatusFailed, j.Status)
	require.Len(t, j.Errors, 2)
	for i, e := range j.Errors {
		require.Equal(t, i+1, e.Attempt)
		require.Equal(t, "exec: command exited with code 4; stderr:\nit failed on attempt "+strconv.Itoa(i+1), e.Error)
	}
}

// TestRegisterKindPerCommand: two kinds, each with its own command; each
// job runs its kind's command with its own args and kind on stdin and in
// the environment.
func TestRegisterKindPerCommand(t *testing.T) {
	ctx := context.Background()
	drv, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "q.db"))
	require.NoError(t, err)
	defer drv.Close()
	m, err := migrate.New(drv)
	require.NoError(t, err)
	_, err = m.Up(ctx)
	require.NoError(t, err)

	dir := t.TempDir()
	ws := lockstep.NewWorkers()
	for _, kind := range []string{"resize", "mail"} {
		require.NoError(t, execjob.RegisterKind(ws, kind, &execjob.Worker{
			Shell: `cat > "$OUT/` + kind + `-$LOCKSTEP_JOB_ID.json"; echo "$LOCKSTEP_JOB_KIND" >> "$OUT/` + kind + `-$LOCKSTEP_JOB_ID.json"`,
			Env:   []string{"OUT=" + dir},
		}))
	}
	require.Error(t, execjob.RegisterKind(ws, "mail", &execjob.Worker{Shell: "true"}), "a kind is registered once")
	require.Error(t, execjob.RegisterKind(ws, "", &execjob.Worker{Shell: "true"}), "a kind has a name")
	client, err := lockstep.NewClient(drv, lockstep.Config{Workers: ws, PollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, client.Start(ctx))
	defer func() { require.NoError(t, client.Stop(ctx)) }()

	resizeRes, err := client.Insert(ctx, lockstep.RawArgs{KindName: "resize", JSON: json.RawMessage(`{"file":"a.png"}`)}, nil)
	require.NoError(t, err)
	resize := resizeRes.ID
	mailRes, err := client.Insert(ctx, lockstep.RawArgs{KindName: "mail", JSON: json.RawMessage(`{"to":"ada"}`)}, nil)
	require.NoError(t, err)
	mail := mailRes.ID
	for _, id := range []int64{resize, mail} {
		require.Eventually(t, func() bool {
			j, err := client.Job(ctx, id)
			require.NoError(t, err)
			return j.Status == lockstep.StatusDone
		}, 20*time.Second, 10*time.Millisecond)
	}
	got, err := os.ReadFile(filepath.Join(dir, "resize-"+strconv.FormatInt(resize, 10)+".json"))
	require.NoError(t, err)
	require.Equal(t, "{\"file\":\"a.png\"}resize\n", string(got))
	got, err = os.ReadFile(filepath.Join(dir, "mail-"+strconv.FormatInt(mail, 10)+".json"))
	require.NoError(t, err)
	require.Equal(t, "{\"to\":\"ada\"}mail\n", string(got))
}
