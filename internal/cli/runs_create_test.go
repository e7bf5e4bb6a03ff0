package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep"
)

// TestRunSpecErrors: every mistake in a spec is named in the spec's own
// terms — the field's path, the line and column of a syntax error — and
// never as a Go type or a parser's internals.
func TestRunSpecErrors(t *testing.T) {
	job := func(rest string) string { return `{"name": "n", "jobs": [` + rest + `]}` }
	for _, tc := range []struct{ name, spec, want string }{
		{"empty", "  \n", "run spec s.json: is empty"},
		{"syntax", "{\n  \"name\": \"n\",\n  \"jobs\": [{\"kind\": \"a\",}]\n}", `run spec s.json: line 3, column 25: not valid JSON: invalid character '}' looking for beginning of object key string`},
		{"ends early", "{\"name\": \"n\",\n \"jobs\": [", "run spec s.json: line 2, column 10: the JSON ends early"},
		{"two values", `{"name": "n", "jobs": [{"kind": "a"}]} {}`, "run spec s.json: line 1, column 39: more JSON after the spec's object"},
		{"not an object", `["a"]`, `run spec s.json: the spec must be a JSON object {…}, got ["a"]`},
		{"unknown top field", `{"name": "n", "job": []}`, `run spec s.json: the spec has an unknown field "job" (known fields: name, metadata, on_dependency_failure, jobs, callbacks)`},
		{"no name", `{"jobs": [{"kind": "a"}]}`, `run spec s.json: "name" is required`},
		{"name not a string", `{"name": 7, "jobs": [{"kind": "a"}]}`, `run spec s.json: name must be a string, got 7`},
		{"no jobs", `{"name": "n"}`, `run spec s.json: "jobs" is required`},
		{"jobs not an array", `{"name": "n", "jobs": {"kind": "a"}}`, `run spec s.json: jobs must be a JSON array […], got {"kind": "a"}`},
		{"unknown job field", job(`{"kind": "a", "dependson": ["x"]}`), `run spec s.json: jobs[0] has an unknown field "dependson" (known fields: key, kind, args, queue, priority, max_attempts, depends_on, on_dependency_failure, metadata, limit_key)`},
		{"no kind", job(`{"key": "a"}`), `run spec s.json: jobs[0] ("a") needs a "kind"`},
		{"priority text", job(`{"key": "a", "kind": "a", "priority": "high"}`), `run spec s.json: jobs[0] ("a").priority must be a whole number, got "high"`},
		{"priority fraction", job(`{"kind": "a", "priority": 1.5}`), `run spec s.json: jobs[0].priority must be a whole number, got 1.5`},
		{"priority huge", job(`{"kind": "a", "priority": 99999999999}`), `run spec s.json: jobs[0].priority must be from -2147483647 to 2147483647, got 99999999999`},
		{"max attempts", job(`{"kind": "a", "max_attempts": 0}`), `run spec s.json: jobs[0].max_attempts must be from 1 to`},
		{"empty queue", job(`{"kind": "a", "queue": " "}`), `run spec s.json: jobs[0].queue must not be empty`},
		{"empty limit key", job(`{"kind": "a", "limit_key": ""}`), `run spec s.json: jobs[0].limit_key must not be empty`},
		{"limit key a number", job(`{"kind": "a", "limit_key": 42}`), `run spec s.json: jobs[0].limit_key must be a string, got 42`},
		{"depends_on a string", job(`{"kind": "a", "depends_on": "b"}`), `run spec s.json: jobs[0].depends_on must be an array of job keys, e.g. ["extract"], got "b"`},
		{"depends_on a number", job(`{"key": "b", "kind": "b"}, {"kind": "a", "depends_on": ["b", 3]}`), `run spec s.json: jobs[1].depends_on[1] must be a job's key (a string), got 3`},
		{"unknown key", job(`{"key": "extract", "kind": "e"}, {"key": "load", "kind": "l", "depends_on": ["Extract "]}`), `run spec s.json: jobs[1] ("load").depends_on[0] is "Extract ", which is no job's key in this spec (did you mean "extract"?)`},
		{"self", job(`{"key": "a", "kind": "a", "depends_on": ["a"]}`), `run spec s.json: jobs[0] ("a") depends on itself`},
		{"duplicate key", job(`{"key": "a", "kind": "a"}, {"key": "a", "kind": "b"}`), `run spec s.json: jobs[0] and jobs[1] have the same key "a"`},
		{"cycle", job(`{"key": "a", "kind": "x", "depends_on": ["c"]}, {"key": "b", "kind": "x", "depends_on": ["a"]}, {"key": "c", "kind": "x", "depends_on": ["b"]}, {"key": "d", "kind": "x"}`),
			`run spec s.json: the jobs' dependencies form a cycle, so none of them could ever start: "a" → "c" → "b" → "a" (each depends on the next)`},
		{"bad policy", `{"name": "n", "on_dependency_failure": "skip", "jobs": [{"kind": "a"}]}`, `run spec s.json: on_dependency_failure must be "cancel" (cancel the job when a dependency FAILED or was CANCELLED, the default) or "run" (run it anyway), got "skip"`},
		{"policy without deps", job(`{"kind": "a", "on_dependency_failure": "run"}`), `run spec s.json: jobs[0].on_dependency_failure is set but the job has no depends_on`},
		{"callback without on", `{"name": "n", "jobs": [{"kind": "a"}], "callbacks": [{"kind": "notify"}]}`, `run spec s.json: callbacks[0] needs "on": "success", "failure" or "complete"`},
		{"callback bad on", `{"name": "n", "jobs": [{"kind": "a"}], "callbacks": [{"on": "done", "kind": "notify"}]}`, `run spec s.json: callbacks[0].on must be "success" (every job DONE), "failure" (a job FAILED) or "complete" (every job ended), got "done"`},
		{"callback unknown field", `{"name": "n", "jobs": [{"kind": "a"}], "callbacks": [{"on": "success", "kind": "n", "depends_on": []}]}`, `run spec s.json: callbacks[0] has an unknown field "depends_on" (known fields: on, kind, args, queue, priority, max_attempts)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseRunSpec([]byte(tc.spec), "s.json")
			require.Error(t, err)
			require.True(t, strings.HasPrefix(err.Error(), tc.want), "got  %s\nwant %s", err, tc.want)
			for _, goism := range []string{"strconv", "json: cannot unmarshal", "Go value", "[]json.RawMessage", "map[string]"} {
				require.NotContains(t, err.Error(), goism)
			}
		})
	}
}

// TestRunsCreate creates a workflow with callbacks from a spec file and
// shows it: ids by key, WAITING where a job waits, each job's
// dependencies, the callbacks and their status, WAITING in the counts.
// Bad specs change nothing. Cancelling the root cancels the dependents
// that cancel on failure and releases the one that runs anyway.
func TestRunsCreate(t *testing.T) {
	forEachDialect(t, func(t *testing.T, l *lockstepCLI) {
		dir := t.TempDir()
		write := func(name, spec string) string {
			p := filepath.Join(dir, name)
			require.NoError(t, os.WriteFile(p, []byte(spec), 0o600))
			return p
		}
		bad := write("bad.json", `{"name": "n", "jobs": [{"key": "a", "kind": "x", "depends_on": ["b"]}, {"key": "b", "kind": "x", "depends_on": ["a"]}]}`)
		r := l.RunStdin("", "runs", "create", "--spec", bad)
		require.Equal(t, 1, r.Code)
		require.Equal(t, "lockstep: run spec "+bad+`: the jobs' dependencies form a cycle, so none of them could ever start: "a" → "b" → "a" (each depends on the next)`+"\n", r.Stderr)
		r = l.RunStdin("", "runs", "create")
		require.Equal(t, 1, r.Code)
		require.Contains(t, r.Stderr, "lockstep: --spec is required")
		r = l.RunStdin("", "runs", "create", "--spec", filepath.Join(dir, "missing.json"))
		require.Equal(t, "lockstep: --spec: no such file "+filepath.Join(dir, "missing.json")+"\n", r.Stderr)
		require.Equal(t, "no runs\n", l.OK("runs"), "a refused spec writes nothing")

		spec := write("nightly.json", specExample)
		var out createRunOut
		l.json(&out, "runs", "create", "--spec", spec)
		require.Equal(t, "nightly-import", out.Run.Name)
		require.JSONEq(t, `{"by": "cron"}`, string(out.Run.Metadata))
		byKey := map[string]createdJobOut{}
		for _, j := range out.Jobs {
			byKey[j.Key] = j
		}
		require.Len(t, byKey, 4)
		require.Equal(t, lockstep.StatusPending, byKey["extract"].Status)
		for _, k := range []string{"load-a", "load-b", "report"} {
			require.Equal(t, lockstep.StatusWaiting, byKey[k].Status, k)
		}
		require.Equal(t, []string{"load-a", "load-b"}, byKey["report"].DependsOn)
		require.Len(t, out.Callbacks, 2)
		require.Equal(t, "failure", out.Callbacks[0].On)
		require.Equal(t, "page-oncall", out.Callbacks[0].Kind)
		require.Equal(t, "complete", out.Callbacks[1].On)
		require.Equal(t, lockstep.StatusWaiting, out.Callbacks[1].Status)
		require.Equal(t, "slow", l.job(byKey["load-b"].ID).Queue)
		require.Equal(t, "mail", l.job(out.Callbacks[1].ID).Queue)

		// The table form, from standard input.
		r = l.RunStdin(specExample, "runs", "create", "--spec", "-")
		require.Equal(t, 0, r.Code, r.Stderr)
		require.Regexp(t, `(?m)^created run \d+ \(nightly-import\): 4 job\(s\), 2 callback\(s\)$`, r.Stdout)
		require.Regexp(t, `(?m)^report\s+\d+\s+report\s+WAITING\s+load-a, load-b$`, r.Stdout)
		require.Regexp(t, `(?m)^complete\s+\d+\s+notify\s+WAITING\s+when every job of the run has ended$`, r.Stdout)

		runID := itoa(out.Run.ID)
		var show runShowOut
		l.json(&show, "runs", "show", runID)
		// Three jobs and the two callbacks wait; the callbacks are jobs of
		// the run and are counted with them.
		require.Equal(t, 5, show.Run.Counts[lockstep.StatusWaiting], "%v", show.Run.Counts)
		require.Equal(t, 1, show.Run.Counts[lockstep.StatusPending], "%v", show.Run.Counts)
		require.False(t, show.Run.Complete)
		require.NotNil(t, show.Workflow)
		require.Len(t, show.Workflow.Jobs, 4)
		require.Len(t, show.Workflow.Callbacks, 2)
		deps := map[int64][]int64{}
		for _, j := range show.Workflow.Jobs {
			deps[j.ID] = j.DependsOn
		}
		require.Equal(t, []int64{byKey["load-a"].ID, byKey["load-b"].ID}, deps[byKey["report"].ID])
		require.Empty(t, deps[byKey["extract"].ID])

		textShow := l.OK("runs", "show", runID)
		require.Regexp(t, `(?m)^  WAITING:\s+5$`, textShow)
		require.Regexp(t, `(?m)^workflow:$`, textShow)
		require.Regexp(t, `(?m)^\s+`+itoa(byKey["report"].ID)+`\s+report\s+WAITING on 2\s+`+itoa(byKey["load-a"].ID)+` \(WAITING\), `+itoa(byKey["load-b"].ID)+` \(WAITING\)$`, textShow)
		require.Regexp(t, `(?m)^\s+`+itoa(out.Callbacks[0].ID)+`\s+failure\s+page-oncall\s+WAITING\s+when a job of the run FAILED$`, textShow)
		require.Regexp(t, `(?m)^`+runID+`\s+nightly-import\s+ACTIVE\s+0/6\s+5\s+1\s+0\s+0\s+0\s+0\s`, l.OK("runs"))
		// Two runs of the spec: the second was created from standard input.
		require.Regexp(t, `(?m)^default\s+6\s+2\s+`, l.OK("stats"))
		var page jobPageOut
		l.json(&page, "jobs", "--run", runID, "--status", "waiting")
		require.Len(t, page.Jobs, 5)
		require.Contains(t, l.OK("jobs", "show", itoa(out.Callbacks[1].ID)), "complete: fires when every job of the run has ended")

		// Cancelling the root: load-a and load-b cancel, report runs anyway.
		require.Equal(t, "job "+itoa(byKey["extract"].ID)+" is CANCELLED\n", l.OK("cancel", "job", itoa(byKey["extract"].ID)))
		l.json(&show, "runs", "show", runID)
		st := map[int64]lockstep.JobStatus{}
		for _, j := range show.Workflow.Jobs {
			st[j.ID] = j.Status
		}
		require.Equal(t, lockstep.StatusCancelled, st[byKey["load-a"].ID])
		require.Equal(t, lockstep.StatusCancelled, st[byKey["load-b"].ID])
		require.Equal(t, lockstep.StatusPending, st[byKey["report"].ID])

		// A run without dependencies shows no workflow.
		plainRun := l.enqueue("thumb", "--new-run", "plain")
		var plainShow runShowOut
		l.json(&plainShow, "runs", "show", itoa(l.job(plainRun).RunID))
		require.Nil(t, plainShow.Workflow)
		require.NotContains(t, l.OK("runs", "show", itoa(l.job(plainRun).RunID)), "workflow:")
	})
}
