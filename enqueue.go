package lockstep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/lockstep-queue/lockstep/driver"
)

// EnqueueOpts are a job's insert-time options. The zero value enqueues on
// the default queue, priority 0, now, with Config.MaxAttempts attempts.
type EnqueueOpts struct {
	// Queue; default "default".
	Queue string
	// Priority: lower runs first among ready jobs. Default 0.
	Priority int
	// MaxAttempts; default Config.MaxAttempts.
	MaxAttempts int
	// ScheduledAt: the job is not claimed before this time.
	ScheduledAt time.Time
	// Delay: the job is not claimed before now+Delay. Not with ScheduledAt.
	Delay time.Duration
	// RunID adds the job to an existing, not cancelled run.
	RunID int64
	// Metadata is any JSON-encodable value kept with the job (shown by the
	// CLI and the dashboard, returned with the job): who enqueued it, a
	// trace id. Its encoding counts against Config.MaxArgsBytes.
	Metadata any
	// Unique, when set, enqueues the job only if no job with the same
	// unique key is in one of the unique statuses; see UniqueOpts.
	Unique *UniqueOpts
}

// JobArgsWithInsertOpts is implemented by args whose kind has default
// insert-time options (its usual queue, priority, attempts or delay), so
// that every enqueue of the kind need not repeat them. What the enqueue's
// own EnqueueOpts sets wins; a zero field takes the kind's default. The
// defaults live with the args type, not the worker, because the process
// that enqueues often runs no worker for the kind.
type JobArgsWithInsertOpts interface {
	JobArgs
	InsertOpts() EnqueueOpts
}

// withKindDefaults fills what o leaves unset from the kind's defaults.
func withKindDefaults(o, def EnqueueOpts) (EnqueueOpts, error) {
	if def.RunID != 0 {
		return o, errors.New("InsertOpts must not name a RunID: a run is chosen per enqueue")
	}
	if o.Queue == "" {
		o.Queue = def.Queue
	}
	if o.Priority == 0 {
		o.Priority = def.Priority
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = def.MaxAttempts
	}
	if o.Delay == 0 && o.ScheduledAt.IsZero() {
		o.Delay, o.ScheduledAt = def.Delay, def.ScheduledAt
	}
	if o.Metadata == nil {
		o.Metadata = def.Metadata
	}
	if o.Unique == nil {
		o.Unique = def.Unique
	}
	return o, nil
}

// EnqueueParams is one job of a batch.
type EnqueueParams struct {
	Args JobArgs
	Opts *EnqueueOpts
}

// Enqueue inserts one job.
func (c *Client) Enqueue(ctx context.Context, args JobArgs, opts *EnqueueOpts) (int64, error) {
	ids, err := c.EnqueueMany(ctx, []EnqueueParams{{Args: args, Opts: opts}})
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// EnqueueMany inserts jobs in batches, one statement per batch, and
// returns their ids in input order. All jobs of one call share one RunID
// (or none).
func (c *Client) EnqueueMany(ctx context.Context, params []EnqueueParams) ([]int64, error) {
	res, err := c.insert(ctx, params)
	if err != nil {
		return nil, err
	}
	return resultIDs(res), nil
}

// insert validates and inserts jobs on the client's own pool.
func (c *Client) insert(ctx context.Context, params []EnqueueParams) ([]InsertResult, error) {
	rows, runID, err := c.prepareInsert(params)
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	res, err := c.insertRows(ctx, c.exec, true, runID, rows)
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	c.wakeFor(rows, res)
	c.emitEnqueued(rows, res)
	return res, nil
}

// emitEnqueued reports one EventEnqueued per inserted job (not for a
// duplicate).
func (c *Client) emitEnqueued(rows []driver.JobInsertParams, res []InsertResult) {
	if c.cfg.OnEvent == nil {
		return
	}
	for i, r := range rows {
		if !res[i].Duplicate {
			c.emit(Event{Kind: EventEnqueued, Queue: r.Queue, JobKind: r.Kind})
		}
	}
}

// EnqueueTx inserts one job inside the caller's transaction (*sql.Tx, or
// pgx.Tx on PostgreSQL): the job exists if and only if the transaction
// commits — the transactional outbox. It is never retried: only the owner
// of a transaction can retry it.
func (c *Client) EnqueueTx(ctx context.Context, tx any, args JobArgs, opts *EnqueueOpts) (int64, error) {
	ids, err := c.EnqueueManyTx(ctx, tx, []EnqueueParams{{Args: args, Opts: opts}})
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// EnqueueManyTx is EnqueueMany inside the caller's transaction.
func (c *Client) EnqueueManyTx(ctx context.Context, tx any, params []EnqueueParams) ([]int64, error) {
	res, err := c.insertTx(ctx, tx, params)
	if err != nil {
		return nil, err
	}
	return resultIDs(res), nil
}

// insertTx validates and inserts jobs inside the caller's transaction.
func (c *Client) insertTx(ctx context.Context, tx any, params []EnqueueParams) ([]InsertResult, error) {
	rows, runID, err := c.prepareInsert(params)
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	ex, err := c.drv.UnwrapTx(tx)
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	res, err := c.insertRows(ctx, ex, false, runID, rows)
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	// The jobs are invisible until the caller commits; the poll finds them.
	c.emitEnqueued(rows, res)
	return res, nil
}

func (c *Client) wakeFor(rows []driver.JobInsertParams, res []InsertResult) {
	seen := map[string]bool{}
	for i, r := range rows {
		if res[i].Duplicate {
			continue
		}
		if !seen[r.Queue] && (r.ScheduledAt.IsZero() || !r.ScheduledAt.After(time.Now())) {
			seen[r.Queue] = true
			c.wakeQueue(r.Queue)
		}
	}
}

// ErrInvalidJob classifies a job refused before anything reached the
// database: args that are not valid JSON or too large, an empty, too long
// or control-character queue or kind name, or an option out of range.
// errors.Is(err, ErrInvalidJob) holds when Enqueue, EnqueueMany,
// EnqueueTx, EnqueueManyTx or CreateRun refuse a job for its args, names
// or options; the message says what is wrong. A run that is cancelled or
// missing is the database's answer instead: ErrRunCancelled, ErrNotFound.
var ErrInvalidJob = errors.New("invalid job")

// invalidJobError marks err as ErrInvalidJob without changing its message.
type invalidJobError struct{ err error }

func (e *invalidJobError) Error() string   { return e.err.Error() }
func (e *invalidJobError) Unwrap() []error { return []error{e.err, ErrInvalidJob} }

func invalidJob(err error) error { return &invalidJobError{err: err} }

// Bounds of EnqueueOpts.ScheduledAt: the range every database stores
// (MySQL's DATETIME stops at 9999; SQLite compares times as text, which
// sorts a five-digit year before a four-digit one).
var (
	minScheduledAt = time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)
	maxScheduledAt = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

// prepareInsert validates and encodes jobs; nothing reaches the database
// unless every job is valid.
func (c *Client) prepareInsert(params []EnqueueParams) ([]driver.JobInsertParams, int64, error) {
	if len(params) == 0 {
		return nil, 0, invalidJob(errors.New("no jobs given"))
	}
	rows := make([]driver.JobInsertParams, len(params))
	var runID int64
	for i, p := range params {
		row, err := c.encodeJob(p)
		if err != nil {
			if len(params) > 1 {
				return nil, 0, invalidJob(fmt.Errorf("job %d: %w", i, err))
			}
			return nil, 0, invalidJob(err)
		}
		if i == 0 {
			runID = row.RunID
		} else if row.RunID != runID {
			return nil, 0, invalidJob(fmt.Errorf("job %d: all jobs of one call must share one RunID (%d vs %d)", i, row.RunID, runID))
		}
		row.RunID = 0 // the executor sets it after locking the run
		rows[i] = row
	}
	return rows, runID, nil
}

func (c *Client) encodeJob(p EnqueueParams) (driver.JobInsertParams, error) {
	if p.Args == nil {
		return driver.JobInsertParams{}, errors.New("nil args")
	}
	if v := reflect.ValueOf(p.Args); v.Kind() == reflect.Pointer && v.IsNil() {
		// Kind() on a nil pointer would panic (or name a kind for no args).
		return driver.JobInsertParams{}, fmt.Errorf("nil args (a nil %T)", p.Args)
	}
	o := EnqueueOpts{}
	if p.Opts != nil {
		o = *p.Opts
	}
	kind := p.Args.Kind()
	if err := validName("kind", kind); err != nil {
		return driver.JobInsertParams{}, err
	}
	if d, ok := p.Args.(JobArgsWithInsertOpts); ok {
		var err error
		if o, err = withKindDefaults(o, d.InsertOpts()); err != nil {
			return driver.JobInsertParams{}, fmt.Errorf("%w: kind %q: %w", ErrInvalidJob, kind, err)
		}
	}
	if o.Queue == "" {
		o.Queue = DefaultQueue
	}
	if err := validName("queue", o.Queue); err != nil {
		return driver.JobInsertParams{}, err
	}
	if o.Priority < math.MinInt16 || o.Priority > math.MaxInt16 {
		return driver.JobInsertParams{}, fmt.Errorf("priority %d is out of range [%d, %d]", o.Priority, math.MinInt16, math.MaxInt16)
	}
	if o.MaxAttempts < 0 {
		return driver.JobInsertParams{}, fmt.Errorf("max attempts must be positive, got %d", o.MaxAttempts)
	}
	if o.MaxAttempts > math.MaxInt32 {
		// The column is a 32-bit INTEGER everywhere.
		return driver.JobInsertParams{}, fmt.Errorf("max attempts %d is out of range [1, %d]", o.MaxAttempts, math.MaxInt32)
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = c.cfg.MaxAttempts
	}
	if o.Delay < 0 {
		return driver.JobInsertParams{}, fmt.Errorf("delay must not be negative, got %s", o.Delay)
	}
	if o.Delay > 0 && !o.ScheduledAt.IsZero() {
		return driver.JobInsertParams{}, errors.New("give Delay or ScheduledAt, not both")
	}
	if !o.ScheduledAt.IsZero() && (o.ScheduledAt.Before(minScheduledAt) || o.ScheduledAt.After(maxScheduledAt)) {
		return driver.JobInsertParams{}, fmt.Errorf("scheduled time %s is outside the range the databases store, years 1000 to 9999", o.ScheduledAt.UTC().Format(time.RFC3339))
	}
	if o.RunID < 0 {
		return driver.JobInsertParams{}, fmt.Errorf("run id must be positive, got %d", o.RunID)
	}
	at := o.ScheduledAt
	if o.Delay > 0 {
		at = time.Now().Add(o.Delay)
	}
	args, err := json.Marshal(p.Args)
	if err != nil {
		return driver.JobInsertParams{}, fmt.Errorf("encode args of kind %q: %w", kind, err)
	}
	if len(args) > c.cfg.MaxArgsBytes {
		return driver.JobInsertParams{}, fmt.Errorf("args of kind %q are %d bytes; the limit is %d", kind, len(args), c.cfg.MaxArgsBytes)
	}
	row := driver.JobInsertParams{
		RunID: o.RunID, Queue: o.Queue, Kind: kind, Args: args,
		Priority: o.Priority, MaxAttempts: o.MaxAttempts, ScheduledAt: at,
	}
	if o.Metadata != nil {
		if row.Metadata, err = c.encodeSmallJSON("metadata", o.Metadata); err != nil {
			return driver.JobInsertParams{}, err
		}
	}
	if o.Unique != nil {
		if row.UniqueKey, row.UniqueStates, err = o.Unique.key(kind, o.Queue, args, at); err != nil {
			return driver.JobInsertParams{}, err
		}
	}
	return row, nil
}

// encodeSmallJSON encodes metadata or output within Config.MaxArgsBytes.
func (c *Client) encodeSmallJSON(what string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", what, err)
	}
	if len(b) > c.cfg.MaxArgsBytes {
		return nil, fmt.Errorf("%s is %d bytes; the limit is %d", what, len(b), c.cfg.MaxArgsBytes)
	}
	if hasNUL(b) {
		return nil, fmt.Errorf("%s %w", what, errNUL)
	}
	return b, nil
}

// RawArgs enqueues a job of any kind from JSON that is already encoded,
// for tools and other languages; Go code uses typed JobArgs.
type RawArgs struct {
	KindName string
	JSON     json.RawMessage
}

// Kind implements JobArgs.
func (r RawArgs) Kind() string { return r.KindName }

// MarshalJSON checks and returns the raw JSON. Its error for invalid JSON
// wraps the *json.SyntaxError that says where.
func (r RawArgs) MarshalJSON() ([]byte, error) {
	if !json.Valid(r.JSON) {
		var where json.RawMessage
		if err := json.Unmarshal(r.JSON, &where); err != nil {
			return nil, fmt.Errorf("args are not valid JSON: %w", err)
		}
		return nil, errors.New("args are not valid JSON")
	}
	return r.JSON, nil
}
