package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep"
)

// maxArgsInput bounds what enqueue reads from --args-file; the client's
// own limit (1 MiB by default) applies after.
const maxArgsInput = 16 << 20

type enqueueOptions struct {
	argsFile    string
	queue       string
	priority    int
	maxAttempts int
	at          string
	in          time.Duration
	runID       int64
	newRun      string
	asJSON      bool
}

func newEnqueueCmd(c *cli) *cobra.Command {
	var o enqueueOptions
	cmd := &cobra.Command{
		Use:   "enqueue KIND [JSON_ARGS]",
		Short: "Add a job of a kind, with JSON args",
		Long: `Add one job of KIND. Its args are the JSON value JSON_ARGS (default {}),
or read from --args-file (- for standard input). The job's id is printed;
with --json, the whole job.

A job runs at once unless --at (an RFC 3339 time) or --in (a delay such as
10m) holds it back. --run adds it to an existing run; --new-run creates a
run holding it.`,
		Example: `  lockstep enqueue exec '{"image":"a.png"}'
  lockstep enqueue send_email --queue mail --in 10m '{"to":"a@example.com"}'
  generate-args | lockstep enqueue report --args-file - --new-run nightly`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			params, err := o.params(cmd, args, cmd.InOrStdin())
			if err != nil {
				return err
			}
			return c.withQueueClient(cmd.Context(), func(client *lockstep.Client) error {
				ctx := cmd.Context()
				var id int64
				if o.newRun != "" {
					_, ids, err := client.CreateRun(ctx, o.newRun, params)
					if err != nil {
						return err
					}
					id = ids[0]
				} else if id, err = client.Enqueue(ctx, params.Args, params.Opts); err != nil {
					if errors.Is(err, lockstep.ErrNotFound) {
						return fmt.Errorf("enqueue: run %d not found", o.runID)
					}
					if errors.Is(err, lockstep.ErrRunCancelled) {
						return fmt.Errorf("enqueue: run %d is cancelled; its jobs cannot be added to", o.runID)
					}
					return err
				}
				if !o.asJSON {
					_, err := fmt.Fprintln(c.stdout, id)
					return err
				}
				job, err := client.Job(ctx, id)
				if err != nil {
					return fmt.Errorf("read job %d back: %w", id, err)
				}
				return outJSON(c.stdout, toJobOut(job))
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.argsFile, "args-file", "", "read the JSON args from this file (- for standard input)")
	f.StringVar(&o.queue, "queue", lockstep.DefaultQueue, "queue")
	f.IntVar(&o.priority, "priority", 0, "priority: lower runs first among ready jobs")
	f.IntVar(&o.maxAttempts, "max-attempts", 0, "attempts before the job is FAILED (default the client's, 25)")
	f.StringVar(&o.at, "at", "", "run no earlier than this RFC 3339 time, e.g. 2030-01-02T15:04:05Z")
	f.DurationVar(&o.in, "in", 0, "run no earlier than this long from now, e.g. 10m")
	f.Int64Var(&o.runID, "run", 0, "add the job to this existing run")
	f.StringVar(&o.newRun, "new-run", "", "create a run with this name holding the job")
	f.BoolVar(&o.asJSON, "json", false, "print the job as JSON instead of its id")
	return cmd
}

// params checks the command line and builds the job, before any database
// is opened.
func (o *enqueueOptions) params(cmd *cobra.Command, args []string, stdin io.Reader) (lockstep.EnqueueParams, error) {
	kind := args[0]
	if strings.TrimSpace(kind) == "" {
		return lockstep.EnqueueParams{}, errors.New("KIND must not be empty")
	}
	raw, err := o.argsJSON(args, stdin)
	if err != nil {
		return lockstep.EnqueueParams{}, err
	}
	opts := &lockstep.EnqueueOpts{Queue: o.queue, Priority: o.priority, MaxAttempts: o.maxAttempts, RunID: o.runID}
	changed := cmd.Flags().Changed
	switch {
	case changed("queue") && strings.TrimSpace(o.queue) == "":
		// The API reads an empty queue as the default one; on the command
		// line it is a mistake (an unset variable, say), not a choice.
		return lockstep.EnqueueParams{}, fmt.Errorf("--queue must not be empty; omit it for the %q queue", lockstep.DefaultQueue)
	case changed("max-attempts") && o.maxAttempts < 1:
		return lockstep.EnqueueParams{}, fmt.Errorf("--max-attempts must be at least 1, got %d", o.maxAttempts)
	case changed("run") && o.runID < 1:
		return lockstep.EnqueueParams{}, fmt.Errorf("--run must be a positive run id, got %d", o.runID)
	case changed("run") && changed("new-run"):
		return lockstep.EnqueueParams{}, errors.New("give --run or --new-run, not both")
	case changed("new-run") && strings.TrimSpace(o.newRun) == "":
		return lockstep.EnqueueParams{}, errors.New("--new-run needs a name")
	case changed("at") && changed("in"):
		return lockstep.EnqueueParams{}, errors.New("give --at or --in, not both")
	case o.in < 0:
		return lockstep.EnqueueParams{}, fmt.Errorf("--in must not be negative, got %s", o.in)
	}
	if changed("at") {
		at, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(o.at))
		if err != nil {
			return lockstep.EnqueueParams{}, fmt.Errorf("--at %q is not an RFC 3339 time such as 2030-01-02T15:04:05Z", o.at)
		}
		opts.ScheduledAt = at
	}
	opts.Delay = o.in
	return lockstep.EnqueueParams{Args: lockstep.RawArgs{KindName: kind, JSON: raw}, Opts: opts}, nil
}

// argsJSON reads and checks the args.
func (o *enqueueOptions) argsJSON(args []string, stdin io.Reader) (json.RawMessage, error) {
	var raw []byte
	var from string
	switch {
	case len(args) == 2 && o.argsFile != "":
		return nil, errors.New("give JSON_ARGS or --args-file, not both")
	case len(args) == 2:
		raw, from = []byte(args[1]), "JSON_ARGS"
	case o.argsFile == "":
		return json.RawMessage("{}"), nil
	default:
		r := stdin
		from = "standard input"
		if o.argsFile != "-" {
			f, err := os.Open(o.argsFile)
			if err != nil {
				return nil, fmt.Errorf("--args-file: %w", err)
			}
			defer func() { _ = f.Close() }()
			r, from = f, o.argsFile
		}
		var err error
		if raw, err = io.ReadAll(io.LimitReader(r, maxArgsInput+1)); err != nil {
			return nil, fmt.Errorf("--args-file: read %s: %w", from, err)
		}
		if len(raw) > maxArgsInput {
			return nil, fmt.Errorf("--args-file: %s is larger than %d bytes", from, maxArgsInput)
		}
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("args from %s are not valid JSON: %v (at byte %d)", from, err, se.Offset)
		}
		return nil, fmt.Errorf("args from %s are not valid JSON: %v", from, err)
	}
	return json.RawMessage(raw), nil
}
