package lockstep_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
)

type resizeArgs struct {
	Image string `json:"image"`
	Fail  bool   `json:"fail"`
}

func (resizeArgs) Kind() string { return "resize" }

// TestOutputAndMetadata: on each database, metadata given at enqueue is
// kept with the job, and what a worker records with RecordOutput is
// written with its DONE (not when it fails); a job without output still
// goes through the batched DONE. Bad output is refused to the worker.
func TestOutputAndMetadata(t *testing.T) {
	forEachDialect(t, func(t *testing.T, drv driver.Driver) {
		ctx := context.Background()
		ws := lockstep.NewWorkers()
		recordErrs := make(chan error, 8)
		var pairMu sync.Mutex // each job's two refusals go in together, whatever the jobs' interleaving
		lockstep.AddWorker(ws, lockstep.WorkFunc(func(ctx context.Context, j *lockstep.Job[resizeArgs]) error {
			if j.Args.Image == "" {
				return nil // no output
			}
			require.NoError(t, lockstep.RecordOutput(ctx, map[string]any{"first": true}))
			// A later call replaces the earlier one.
			require.NoError(t, lockstep.RecordOutput(ctx, map[string]any{"thumbnail": j.Args.Image + ".small", "bytes": 1234}))
			pairMu.Lock()
			recordErrs <- lockstep.RecordOutput(ctx, func() {})
			recordErrs <- lockstep.RecordOutput(ctx, "a\x00b")
			pairMu.Unlock()
			// An escaped backslash before "u0000" is not a U+0000.
			require.NoError(t, lockstep.RecordOutput(ctx, map[string]any{"thumbnail": j.Args.Image + ".small", "bytes": 1234, "path": `C:\u0000`}))
			if j.Args.Fail {
				return lockstep.Permanent(errors.New("no such image"))
			}
			return nil
		}))
		c := quietClient(t, drv, lockstep.Config{Workers: ws, MaxArgsBytes: 4096})
		meta := map[string]any{"requested_by": "alice", "trace": "abc123"}
		withOutRes, err := c.Insert(ctx, resizeArgs{Image: "cat.png"}, &lockstep.InsertOpts{Metadata: meta})
		require.NoError(t, err)
		withOut := withOutRes.ID
		failingRes, err := c.Insert(ctx, resizeArgs{Image: "gone.png", Fail: true}, nil)
		require.NoError(t, err)
		failing := failingRes.ID
		plainRes, err := c.Insert(ctx, resizeArgs{}, nil)
		require.NoError(t, err)
		plain := plainRes.ID
		_, err = c.Insert(ctx, resizeArgs{}, &lockstep.InsertOpts{Metadata: strings.Repeat("m", 5000)})
		requireInvalid(t, err, "metadata is 5002 bytes; the limit is 4096")
		_, err = c.Insert(ctx, resizeArgs{}, &lockstep.InsertOpts{Metadata: "nul\x00"})
		requireInvalid(t, err, "metadata contains the character U+0000")

		require.NoError(t, c.Start(ctx))
		t.Cleanup(func() { _ = c.Stop(context.Background()) })
		final := func(id int64) *lockstep.JobRow {
			var j *lockstep.JobRow
			eventually(t, 10*time.Second, "the job to finish", func() bool {
				var err error
				j, err = c.Job(ctx, id)
				require.NoError(t, err)
				return j.Status == lockstep.StatusDone || j.Status == lockstep.StatusFailed
			})
			return j
		}
		j := final(withOut)
		require.Equal(t, lockstep.StatusDone, j.Status)
		require.JSONEq(t, `{"thumbnail":"cat.png.small","bytes":1234,"path":"C:\\u0000"}`, string(j.Output))
		require.JSONEq(t, `{"requested_by":"alice","trace":"abc123"}`, string(j.Metadata))
		j = final(failing)
		require.Equal(t, lockstep.StatusFailed, j.Status)
		require.Nil(t, j.Output)
		require.Nil(t, j.Metadata)
		j = final(plain)
		require.Equal(t, lockstep.StatusDone, j.Status)
		require.Nil(t, j.Output)
		for range 2 {
			require.ErrorContains(t, <-recordErrs, "record output: json: unsupported type: func()")
			require.ErrorContains(t, <-recordErrs, "record output: contains the character U+0000")
		}

		err = lockstep.RecordOutput(ctx, "x")
		require.ErrorIs(t, err, lockstep.ErrNoJobContext)
		var raw json.RawMessage = j.Args
		require.JSONEq(t, `{"image":"","fail":false}`, string(raw))
	})
}
