package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
)

// createRunOut is `runs create --json`: the run, its jobs in the spec's
// order with their ids, and its callbacks.
type createRunOut struct {
	Run       runRowOut            `json:"run"`
	Jobs      []createdJobOut      `json:"jobs"`
	Callbacks []createdCallbackOut `json:"callbacks"`
}

type createdJobOut struct {
	Key       string             `json:"key,omitempty"`
	ID        int64              `json:"id"`
	Kind      string             `json:"kind"`
	Status    lockstep.JobStatus `json:"status"`
	DependsOn []string           `json:"depends_on"`
}

type createdCallbackOut struct {
	On     string             `json:"on"`
	ID     int64              `json:"id"`
	Kind   string             `json:"kind"`
	Status lockstep.JobStatus `json:"status"`
}

const specExample = `{
  "name": "nightly-import",
  "metadata": {"by": "cron"},
  "on_dependency_failure": "cancel",
  "jobs": [
    {"key": "extract", "kind": "extract", "args": {"day": "2030-01-02"}},
    {"key": "load-a", "kind": "load", "args": {"part": "a"}, "depends_on": ["extract"]},
    {"key": "load-b", "kind": "load", "args": {"part": "b"}, "depends_on": ["extract"], "queue": "slow"},
    {"key": "report", "kind": "report", "depends_on": ["load-a", "load-b"], "on_dependency_failure": "run"}
  ],
  "callbacks": [
    {"on": "failure", "kind": "page-oncall", "args": {"team": "data"}},
    {"on": "complete", "kind": "notify", "queue": "mail"}
  ]
}`

func newRunsCreateCmd(c *app) *cobra.Command {
	var specFile string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "create --spec FILE",
		Short: "Create a run from a JSON spec: its jobs, their dependencies, its callbacks",
		Long: `Create a run, its jobs and its callbacks in one transaction from a JSON
spec (--spec FILE, or - for standard input), and print the run's id and each
job's id by key.

A job that lists keys in depends_on is WAITING until those jobs are DONE,
then PENDING. When one of them FAILED or was CANCELLED the job is cancelled
("on_dependency_failure": "cancel", the default) or runs anyway ("run"), set
for the whole run and overridable per job. A callback is a job the run
enqueues once: "success" when every job is DONE, "failure" when one FAILED,
"complete" when all have ended; its worker receives the run's id, the
condition, the run's counts and the callback's args (as "data"). A run with
callbacks takes no more jobs after it is created.

Fields: name (required), metadata, on_dependency_failure, jobs (required;
each: key, kind (required), args, queue, priority, max_attempts, depends_on,
on_dependency_failure, metadata, limit_key), callbacks (each: on (required), kind
(required), args, queue, priority, max_attempts).

The whole spec is checked before anything is written: an unknown field, a
dependency on a key no job has, or a cycle is refused with the field's path,
e.g. jobs[3] ("report").depends_on[1].

Example spec:
` + specExample,
		Example: `  lockstep runs create --spec nightly.json
  generate-spec | lockstep runs create --spec - --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(specFile) == "" {
				return errors.New("--spec is required: a JSON run spec file, or - for standard input (see lockstep runs create --help)")
			}
			data, from, err := readSpec(specFile, cmd.InOrStdin())
			if err != nil {
				return err
			}
			spec, err := parseRunSpec(data, from)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			return c.withQueueClient(ctx, func(client *lockstep.Client) error {
				out, err := createRun(ctx, client, spec)
				if err != nil {
					return err
				}
				if asJSON {
					return clienv.JSON(c.Stdout, out)
				}
				return writeCreatedRun(c.Stdout, out)
			})
		},
	}
	cmd.Flags().StringVar(&specFile, "spec", "", "the run spec: a JSON file, or - for standard input")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// readSpec reads a spec file, bounded like enqueue's args.
func readSpec(name string, stdin io.Reader) ([]byte, string, error) {
	r, from := stdin, "standard input"
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, "", fmt.Errorf("--spec: no such file %s", name)
			}
			return nil, "", fmt.Errorf("--spec: %w", err)
		}
		defer func() { _ = f.Close() }()
		r, from = f, name
	}
	data, err := io.ReadAll(io.LimitReader(r, maxArgsInput+1))
	if err != nil {
		return nil, "", fmt.Errorf("--spec: read %s: %w", from, err)
	}
	if len(data) > maxArgsInput {
		return nil, "", fmt.Errorf("--spec: %s is larger than %d bytes", from, maxArgsInput)
	}
	return data, from, nil
}

// createRun inserts the spec's run and reads back its jobs' and
// callbacks' ids and statuses.
func createRun(ctx context.Context, client *lockstep.Client, spec *runSpec) (*createRunOut, error) {
	jobs, opts := spec.params()
	run, res, err := client.InsertRun(ctx, spec.Name, opts, jobs...)
	if err != nil {
		if errors.Is(err, lockstep.ErrInvalidJob) {
			// The spec was checked already; what is left is the client's
			// own limits (the args' size, say), in its words.
			return nil, fmt.Errorf("run spec refused, nothing was created: %w", err)
		}
		return nil, err
	}
	out := &createRunOut{Run: toRunRowOut(run), Jobs: make([]createdJobOut, len(spec.Jobs)), Callbacks: []createdCallbackOut{}}
	for i, j := range spec.Jobs {
		deps := j.DependsOn
		if deps == nil {
			deps = []string{}
		}
		out.Jobs[i] = createdJobOut{Key: j.Key, ID: res[i].ID, Kind: j.Kind, DependsOn: deps}
	}
	// The statuses (WAITING or PENDING) and the callbacks' ids, which
	// InsertRun does not return, from one bounded read of the new run.
	total := len(spec.Jobs) + len(spec.Callbacks)
	if total > lockstep.MaxRunGraphLimit {
		return out, nil
	}
	g, err := client.RunGraph(ctx, run.ID, total)
	if err != nil {
		return nil, fmt.Errorf("run %d was created; reading it back: %w", run.ID, err)
	}
	status := map[int64]lockstep.JobStatus{}
	for _, j := range g.Jobs {
		status[j.ID] = j.Status
		if j.Callback != "" {
			out.Callbacks = append(out.Callbacks, createdCallbackOut{On: j.Callback, ID: j.ID, Kind: j.Kind, Status: j.Status})
		}
	}
	for i := range out.Jobs {
		out.Jobs[i].Status = status[out.Jobs[i].ID]
	}
	return out, nil
}

func writeCreatedRun(w io.Writer, out *createRunOut) error {
	cbs := ""
	if n := len(out.Callbacks); n > 0 {
		cbs = fmt.Sprintf(", %d callback(s)", n)
	}
	fmt.Fprintf(w, "created run %d (%s): %d job(s)%s\n", out.Run.ID, outSafe(out.Run.Name, false), len(out.Jobs), cbs)
	tw := clienv.Table(w)
	fmt.Fprintln(tw, "KEY\tJOB\tKIND\tSTATUS\tDEPENDS_ON")
	for i, j := range out.Jobs {
		key := outCell(j.Key, 40)
		if j.Key == "" {
			key = "jobs[" + strconv.Itoa(i) + "]"
		}
		deps := "-"
		if len(j.DependsOn) > 0 {
			deps = outCell(strings.Join(j.DependsOn, ", "), 80)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", key, j.ID, outCell(j.Kind, 30), orDash(string(j.Status)), deps)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(out.Callbacks) == 0 {
		return nil
	}
	tw = clienv.Table(w)
	fmt.Fprintln(tw, "CALLBACK\tJOB\tKIND\tSTATUS\tFIRES")
	for _, cb := range out.Callbacks {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", cb.On, cb.ID, outCell(cb.Kind, 30), cb.Status, callbackWhen(cb.On))
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
