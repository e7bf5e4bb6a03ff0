package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
)

// maxArgsInput bounds what enqueue reads from --args-file; the client's
// own limit (1 MiB by default) applies after.
const maxArgsInput = 16 << 20

type enqueueOptions struct {
	argsFile     string
	queue        string
	priority     int
	maxAttempts  int
	at           string
	in           time.Duration
	runID        int64
	newRun       string
	asJSON       bool
	metadata     string
	unique       bool
	uniqueKey    string
	uniqueQueue  bool
	uniquePeriod time.Duration
	limitKey     string
}

// enqueueOut is `enqueue --json`: the job, and whether it was a duplicate
// of a unique job (then it is the job that holds the key).
type enqueueOut struct {
	jobOut
	Duplicate bool `json:"duplicate"`
}

func newEnqueueCmd(c *app) *cobra.Command {
	var o enqueueOptions
	cmd := &cobra.Command{
		Use:   "enqueue KIND [JSON_ARGS]",
		Short: "Add a job of a kind, with JSON args",
		Long: `Add one job of KIND. Its args are the JSON value JSON_ARGS (default {}),
or read from --args-file (- for standard input). The job's id is printed;
with --json, the whole job.

A job runs at once unless --at (an RFC 3339 time) or --in (a delay such as
10m) holds it back. --run adds it to an existing run; --new-run creates a
run holding it. --metadata attaches a JSON value (who enqueued it, a trace
id), shown by 'jobs show' and the dashboard.

--unique enqueues the job only if no PENDING or RUNNING job of the same
kind has the same args (or, with --unique-key, the same key; with
--unique-by-queue, in the same queue; with --unique-period, in the same
period). A duplicate is not an error: the id of the job that holds the key
is printed, and a note on standard error says nothing was enqueued.

--limit-key gives the job the key its queue's per-key limits count it under
(a customer, an account): at most --key-concurrency jobs of one key run at
once, one at a time in order with --sequence ('lockstep queues limit').`,
		Example: `  lockstep enqueue exec '{"image":"a.png"}'
  lockstep enqueue send_email --queue mail --in 10m '{"to":"a@example.com"}'
  generate-args | lockstep enqueue report --args-file - --new-run nightly
  lockstep enqueue sync --unique-key customer-42 --metadata '{"by":"cron"}'
  lockstep enqueue charge --queue billing --limit-key customer-42 '{"cents":500}'`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			params, err := o.params(cmd, args, cmd.InOrStdin())
			if err != nil {
				return err
			}
			return c.withQueueClient(cmd.Context(), func(client *lockstep.Client) error {
				ctx := cmd.Context()
				res, emptyRun, err := o.insert(ctx, client, params)
				if err != nil {
					return err
				}
				note := ""
				if emptyRun != 0 {
					note = fmt.Sprintf(" (run %d was created empty)", emptyRun)
				}
				if res.Duplicate && res.ID == 0 {
					// The holder left its unique statuses between the
					// insert and the read: nothing to point at, and the
					// key is free again.
					return fmt.Errorf("enqueue: a job with the same unique key existed but has just left PENDING/RUNNING; nothing was enqueued%s, try again", note)
				}
				if res.Duplicate {
					fmt.Fprintf(c.Stderr, "duplicate: job %d holds the same unique key; nothing was enqueued%s\n", res.ID, note)
				}
				if !o.asJSON {
					_, err := fmt.Fprintln(c.Stdout, res.ID)
					return err
				}
				job, err := client.Job(ctx, res.ID)
				if err != nil {
					return fmt.Errorf("read job %d back: %w", res.ID, err)
				}
				return clienv.JSON(c.Stdout, enqueueOut{jobOut: toJobOut(job), Duplicate: res.Duplicate})
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
	f.StringVar(&o.metadata, "metadata", "", "attach this JSON value to the job, e.g. '{\"by\":\"cron\"}'")
	f.BoolVar(&o.unique, "unique", false, "enqueue only if no PENDING or RUNNING job of this kind has the same args")
	f.StringVar(&o.uniqueKey, "unique-key", "", "like --unique, comparing this key instead of the args")
	f.BoolVar(&o.uniqueQueue, "unique-by-queue", false, "like --unique, only among jobs of the same queue")
	f.DurationVar(&o.uniquePeriod, "unique-period", 0, "like --unique, only among jobs of the same period of this length (by --at/--in, else now), e.g. 1h")
	f.StringVar(&o.limitKey, "limit-key", "", "the key the queue's per-key limits and sequences count the job under, e.g. customer-42")
	return cmd
}

// insert adds the job, into a new run with --new-run, and says whether it
// was a duplicate; emptyRun is the new run a duplicate left without jobs.
func (o *enqueueOptions) insert(ctx context.Context, client *lockstep.Client, params lockstep.InsertManyParams) (res *lockstep.InsertResult, emptyRun int64, err error) {
	if o.newRun == "" {
		res, err := client.Insert(ctx, params.Args, params.Opts)
		switch {
		case errors.Is(err, lockstep.ErrNotFound):
			return nil, 0, fmt.Errorf("enqueue: run %d not found", o.runID)
		case errors.Is(err, lockstep.ErrRunCancelled):
			return nil, 0, fmt.Errorf("enqueue: run %d is cancelled; its jobs cannot be added to", o.runID)
		case err != nil:
			return nil, 0, err
		}
		return res, 0, nil
	}
	run, results, err := client.InsertRun(ctx, o.newRun, nil, params)
	if err != nil {
		return nil, 0, err
	}
	if res = &results[0]; res.Duplicate {
		return res, run.ID, nil
	}
	return res, 0, nil
}

// params checks the command line and builds the job, before any database
// is opened.
func (o *enqueueOptions) params(cmd *cobra.Command, args []string, stdin io.Reader) (lockstep.InsertManyParams, error) {
	kind := args[0]
	if strings.TrimSpace(kind) == "" {
		return lockstep.InsertManyParams{}, errors.New("KIND must not be empty")
	}
	raw, err := o.argsJSON(args, stdin)
	if err != nil {
		return lockstep.InsertManyParams{}, err
	}
	opts := &lockstep.InsertOpts{Queue: o.queue, Priority: o.priority, MaxAttempts: o.maxAttempts, RunID: o.runID}
	changed := cmd.Flags().Changed
	switch {
	case changed("queue") && strings.TrimSpace(o.queue) == "":
		// The API reads an empty queue as the default one; on the command
		// line it is a mistake (an unset variable, say), not a choice.
		return lockstep.InsertManyParams{}, fmt.Errorf("--queue must not be empty; omit it for the %q queue", lockstep.DefaultQueue)
	case changed("max-attempts") && o.maxAttempts < 1:
		return lockstep.InsertManyParams{}, fmt.Errorf("--max-attempts must be at least 1, got %d", o.maxAttempts)
	case changed("run") && o.runID < 1:
		return lockstep.InsertManyParams{}, fmt.Errorf("--run must be a positive run id, got %d", o.runID)
	case changed("run") && changed("new-run"):
		return lockstep.InsertManyParams{}, errors.New("give --run or --new-run, not both")
	case changed("new-run") && strings.TrimSpace(o.newRun) == "":
		return lockstep.InsertManyParams{}, errors.New("--new-run needs a name")
	case changed("at") && changed("in"):
		return lockstep.InsertManyParams{}, errors.New("give --at or --in, not both")
	case o.in < 0:
		return lockstep.InsertManyParams{}, fmt.Errorf("--in must not be negative, got %s", o.in)
	case changed("limit-key") && o.limitKey == "":
		// As --queue: an empty key is no key, which on the command line
		// is an unset variable, not a choice.
		return lockstep.InsertManyParams{}, errors.New("--limit-key must not be empty; omit it for a job without a key")
	}
	opts.LimitKey = o.limitKey
	if changed("at") {
		at, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(o.at))
		if err != nil {
			return lockstep.InsertManyParams{}, fmt.Errorf("--at %q is not an RFC 3339 time such as 2030-01-02T15:04:05Z", o.at)
		}
		opts.ScheduledAt = at
	}
	opts.Delay = o.in
	if changed("metadata") {
		meta, err := parseJSONFlag("--metadata", o.metadata)
		if err != nil {
			return lockstep.InsertManyParams{}, err
		}
		opts.Metadata = meta
	}
	unique, err := o.uniqueOpts(changed)
	if err != nil {
		return lockstep.InsertManyParams{}, err
	}
	opts.Unique = unique
	return lockstep.InsertManyParams{Args: lockstep.RawArgs{KindName: kind, JSON: raw}, Opts: opts}, nil
}

// uniqueOpts builds the unique options: any --unique* flag makes the
// enqueue unique.
func (o *enqueueOptions) uniqueOpts(changed func(string) bool) (*lockstep.UniqueOpts, error) {
	switch {
	case changed("unique-key") && strings.TrimSpace(o.uniqueKey) == "":
		return nil, errors.New("--unique-key must not be empty; use --unique to compare the args")
	case o.uniquePeriod < 0:
		return nil, fmt.Errorf("--unique-period must not be negative, got %s", o.uniquePeriod)
	case changed("unique") && !o.unique && (changed("unique-key") || o.uniqueQueue || changed("unique-period")):
		return nil, errors.New("--unique=false contradicts the other --unique-* flags")
	}
	if !o.unique && !changed("unique-key") && !o.uniqueQueue && !changed("unique-period") {
		return nil, nil
	}
	return &lockstep.UniqueOpts{Key: o.uniqueKey, ByQueue: o.uniqueQueue, ByPeriod: o.uniquePeriod}, nil
}

// parseJSONFlag checks that a flag's value is one JSON value.
func parseJSONFlag(flag, s string) (json.RawMessage, error) {
	raw := []byte(s)
	if err := checkJSON(raw); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON: %w", flag, err)
	}
	return json.RawMessage(raw), nil
}

// checkJSON reports why raw is not one JSON value, with the byte offset
// of a syntax error.
func checkJSON(raw []byte) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("%v (at byte %d)", err, se.Offset)
		}
		return err
	}
	return nil
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
	if err := checkJSON(raw); err != nil {
		return nil, fmt.Errorf("args from %s are not valid JSON: %w", from, err)
	}
	return json.RawMessage(raw), nil
}
