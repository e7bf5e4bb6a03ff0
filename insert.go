package lockstep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-queue/lockstep/driver"
)

// InsertOpts are a job's insert-time options. The zero value enqueues on
// the default queue, priority 0, now, with Config.MaxAttempts attempts.
type InsertOpts struct {
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
	// LimitKey is the key the queue's per-key limits count the job under:
	// its KeyConcurrency, its sequences and a per-key rate (see
	// QueueLimits). A kind usually derives it from its args in its
	// InsertOpts (a customer id, an account); jobs without one are limited
	// only by the queue's own limits. At most MaxLimitKeyLen bytes of
	// UTF-8, compared byte for byte.
	LimitKey string
}

// JobArgsWithInsertOpts is implemented by args whose kind has default
// insert-time options (its usual queue, priority, attempts or delay), so
// that every enqueue of the kind need not repeat them. What the enqueue's
// own InsertOpts sets wins; a zero field takes the kind's default. The
// defaults live with the args type, not the worker, because the process
// that enqueues often runs no worker for the kind.
type JobArgsWithInsertOpts interface {
	JobArgs
	InsertOpts() InsertOpts
}

// withKindDefaults fills what o leaves unset from the kind's defaults.
func withKindDefaults(o, def InsertOpts) (InsertOpts, error) {
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
	if o.LimitKey == "" {
		o.LimitKey = def.LimitKey
	}
	return o, nil
}

// InsertManyParams is one job of an InsertMany or an InsertRun.
type InsertManyParams struct {
	Args JobArgs
	Opts *InsertOpts
	// Key names the job within one InsertRun, for other jobs' DependsOn.
	Key string
	// DependsOn names, by Key, the jobs of the same InsertRun this job
	// waits for: it stays WAITING until each is DONE. Only InsertRun
	// takes dependencies.
	DependsOn []string
	// OnDependencyFailure overrides the run's policy for this job.
	OnDependencyFailure DependencyPolicy
}

// InsertResult is the outcome of inserting one job.
type InsertResult struct {
	// ID is the new job, or for a duplicate the job that holds the key.
	// It is 0 only for a duplicate whose holder left its unique statuses
	// before it could be read.
	ID int64
	// Duplicate is true when a job with the same unique key was in one of
	// its unique statuses, and nothing was inserted.
	Duplicate bool
}

// Insert inserts one job on the client's own pool. A deadlock victim or a
// busy database is retried.
func (c *Client) Insert(ctx context.Context, args JobArgs, opts *InsertOpts) (*InsertResult, error) {
	res, err := c.insert(ctx, []InsertManyParams{{Args: args, Opts: opts}})
	if err != nil {
		return nil, err
	}
	return &res[0], nil
}

// InsertMany inserts jobs in batches, one statement per batch, and returns
// their results in input order. All jobs of one call share one RunID (or
// none). A call that mixes plain and unique jobs is one transaction.
func (c *Client) InsertMany(ctx context.Context, params []InsertManyParams) ([]InsertResult, error) {
	return c.insert(ctx, params)
}

// InsertTx inserts one job inside the caller's transaction (*sql.Tx, or
// pgx.Tx on PostgreSQL): the job exists if and only if the transaction
// commits — the transactional outbox. It is never retried: only the owner
// of a transaction can retry it. A duplicate found inside tx is final for
// tx: the holder committed first.
func (c *Client) InsertTx(ctx context.Context, tx any, args JobArgs, opts *InsertOpts) (*InsertResult, error) {
	res, err := c.insertTx(ctx, tx, []InsertManyParams{{Args: args, Opts: opts}})
	if err != nil {
		return nil, err
	}
	return &res[0], nil
}

// InsertManyTx is InsertMany inside the caller's transaction.
func (c *Client) InsertManyTx(ctx context.Context, tx any, params []InsertManyParams) ([]InsertResult, error) {
	return c.insertTx(ctx, tx, params)
}

// insert validates and inserts jobs on the client's own pool.
func (c *Client) insert(ctx context.Context, params []InsertManyParams) ([]InsertResult, error) {
	rows, runID, err := c.prepareInsert(params)
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	res, err := c.runInsertMiddleware(ctx, argsOf(params), rows, func(ctx context.Context) ([]InsertResult, error) {
		res, err := c.insertRows(ctx, c.exec, true, runID, rows)
		if err != nil {
			return nil, err
		}
		c.wakeFor(rows, res)
		c.emitEnqueued(rows, res)
		return res, nil
	})
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	return res, nil
}

// argsOf lists the args of params, for the insert middleware.
func argsOf(params []InsertManyParams) []JobArgs {
	args := make([]JobArgs, len(params))
	for i, p := range params {
		args[i] = p.Args
	}
	return args
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

// insertTx validates and inserts jobs inside the caller's transaction.
func (c *Client) insertTx(ctx context.Context, tx any, params []InsertManyParams) ([]InsertResult, error) {
	rows, runID, err := c.prepareInsert(params)
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	ex, err := c.drv.UnwrapTx(tx)
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	res, err := c.runInsertMiddleware(ctx, argsOf(params), rows, func(ctx context.Context) ([]InsertResult, error) {
		res, err := c.insertRows(ctx, ex, false, runID, rows)
		if err != nil {
			return nil, err
		}
		// The jobs are invisible until the caller commits; the poll finds
		// them.
		c.emitEnqueued(rows, res)
		return res, nil
	})
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
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
// errors.Is(err, ErrInvalidJob) holds when Insert, InsertMany, InsertTx,
// InsertManyTx or InsertRun refuse a job for its args, names
// or options; the message says what is wrong. A run that is cancelled or
// missing is the database's answer instead: ErrRunCancelled, ErrNotFound.
var ErrInvalidJob = errors.New("invalid job")

// invalidJobError marks err as ErrInvalidJob without changing its message.
type invalidJobError struct{ err error }

func (e *invalidJobError) Error() string   { return e.err.Error() }
func (e *invalidJobError) Unwrap() []error { return []error{e.err, ErrInvalidJob} }

func invalidJob(err error) error { return &invalidJobError{err: err} }

// Bounds of InsertOpts.ScheduledAt: the range every database stores
// (MySQL's DATETIME stops at 9999; SQLite compares times as text, which
// sorts a five-digit year before a four-digit one).
var (
	minScheduledAt = time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)
	maxScheduledAt = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

// prepareInsert validates and encodes jobs; nothing reaches the database
// unless every job is valid.
func (c *Client) prepareInsert(params []InsertManyParams) ([]driver.JobInsertParams, int64, error) {
	if len(params) == 0 {
		return nil, 0, invalidJob(errors.New("no jobs given"))
	}
	rows := make([]driver.JobInsertParams, len(params))
	var runID int64
	for i, p := range params {
		if len(p.DependsOn) > 0 || p.Key != "" || p.OnDependencyFailure != DependencyDefault {
			return nil, 0, invalidJob(fmt.Errorf("job %d: Key, DependsOn and OnDependencyFailure are for the jobs of one InsertRun", i))
		}
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

func (c *Client) encodeJob(p InsertManyParams) (driver.JobInsertParams, error) {
	if p.Args == nil {
		return driver.JobInsertParams{}, errors.New("nil args")
	}
	if v := reflect.ValueOf(p.Args); v.Kind() == reflect.Pointer && v.IsNil() {
		// Kind() on a nil pointer would panic (or name a kind for no args).
		return driver.JobInsertParams{}, fmt.Errorf("nil args (a nil %T)", p.Args)
	}
	o := InsertOpts{}
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
	if err := validLimitKey(o.LimitKey); err != nil {
		return driver.JobInsertParams{}, err
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
		Priority: o.Priority, MaxAttempts: o.MaxAttempts, ScheduledAt: at, LimitKey: o.LimitKey,
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

// insertRows inserts prepared jobs through ex: the plain ones in batches,
// then each unique one alone (its insert may find a duplicate instead), in
// descending key order. Inside one transaction each insert keeps its key
// locked until commit, so two transactions taking keys in opposite orders
// would deadlock; and one order is not enough on MariaDB, where an insert
// that waits for a holder also asks for the gap before the holder's
// record, which in an ascending index is where the holder's next larger
// key goes. The unique index is descending there, and keys go in its
// order: the next key a transaction inserts lies after the record others
// wait on, never in the gap they ask for.
//
// retry is true on the client's own pool: there a call with several jobs,
// some unique, runs in one transaction of its own (all or nothing, like a
// plain batch), and a deadlock victim or a busy database is retried
// (repeating a lone unique insert is harmless too: a try that committed
// before its connection failed makes the next its duplicate). A caller's
// transaction is the caller's to retry.
func (c *Client) insertRows(ctx context.Context, ex driver.Executor, retry bool, runID int64, rows []driver.JobInsertParams) ([]InsertResult, error) {
	if !retry {
		return c.insertRowsOnce(ctx, ex, runID, rows)
	}
	atomic := len(rows) > 1 && slices.ContainsFunc(rows, func(r driver.JobInsertParams) bool { return r.UniqueKey != "" })
	var res []InsertResult
	err := c.retryDB(ctx, "enqueue", func(ctx context.Context) error {
		if !atomic {
			var err error
			res, err = c.insertRowsOnce(ctx, ex, runID, rows)
			return err
		}
		tx, err := c.drv.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if res, err = c.insertRowsOnce(ctx, tx, runID, rows); err != nil {
			return err
		}
		return tx.Commit()
	})
	return res, err
}

// insertRowsOnce is insertRows' one try. When it makes more than one
// insert call, ex is a transaction (insertRows sees to it), so only the
// first call locks the run; the others name it on their rows.
func (c *Client) insertRowsOnce(ctx context.Context, ex driver.Executor, runID int64, rows []driver.JobInsertParams) ([]InsertResult, error) {
	res := make([]InsertResult, len(rows))
	var uniqueAt []int
	for i, r := range rows {
		if r.UniqueKey != "" {
			uniqueAt = append(uniqueAt, i)
		}
	}
	plain, plainAt := rows, []int(nil) // all plain: no copy
	if len(uniqueAt) > 0 {
		plain = nil
		at := make(map[int]int, len(rows)) // position in rows → in plain
		for i, r := range rows {
			if r.UniqueKey == "" {
				at[i] = len(plain)
				plain, plainAt = append(plain, r), append(plainAt, i)
			}
		}
		// A workflow's dependencies are never unique jobs (InsertRun
		// refuses them), so each names a plain job: renumber.
		for k := range plain {
			if len(plain[k].DependsOn) == 0 {
				continue
			}
			deps := make([]int, len(plain[k].DependsOn))
			for n, d := range plain[k].DependsOn {
				deps[n] = at[d]
			}
			plain[k].DependsOn = deps
		}
	}
	lockRun := runID
	if len(plain) > 0 {
		var ids []int64
		var err error
		if lockRun != 0 {
			ids, err = ex.JobInsertIntoRun(ctx, lockRun, plain)
		} else {
			ids, err = ex.JobInsertMany(ctx, plain)
		}
		if err != nil {
			return nil, err
		}
		for k, id := range ids {
			i := k
			if plainAt != nil {
				i = plainAt[k]
			}
			res[i].ID = id
		}
		lockRun = 0
	}
	slices.SortStableFunc(uniqueAt, func(a, b int) int { return strings.Compare(rows[b].UniqueKey, rows[a].UniqueKey) })
	for _, i := range uniqueAt {
		row := rows[i]
		if runID != 0 {
			row.RunID = runID
		}
		u, err := ex.JobInsertUnique(ctx, lockRun, row)
		if err != nil {
			return nil, err
		}
		lockRun = 0
		if u.Duplicate && u.ID == 0 {
			// The caller's snapshot predates the holder: read it from
			// outside the transaction.
			if u.ID, err = c.exec.JobIDByUniqueKey(ctx, row.UniqueKey); err != nil {
				return nil, err
			}
		}
		res[i] = InsertResult{ID: u.ID, Duplicate: u.Duplicate}
	}
	return res, nil
}
