package lockstep

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep-queue/lockstep/driver"
)

// UniqueOpts make an enqueue unique: the job is inserted only if no other
// job with the same unique key is in one of ByStatus; otherwise the
// existing job is returned, flagged as a duplicate (InsertResult). The
// database enforces it with a unique index, so two processes enqueueing at
// once cannot both win.
//
// The key is the kind plus the args (or Key), and optionally the queue and
// the period. A job holds its key only while its status is one of
// ByStatus: once it leaves them (a default unique job that finishes), the
// same key may be enqueued again.
type UniqueOpts struct {
	// Key, when set, replaces the args in the key: jobs of one kind with
	// the same Key are duplicates whatever their args.
	Key string
	// ByQueue adds the queue to the key.
	ByQueue bool
	// ByPeriod adds the period the job falls in to the key: the job's
	// scheduled time (or now) truncated to ByPeriod. With an hour, at most
	// one such job per clock hour.
	ByPeriod time.Duration
	// ByStatus are the statuses in which a job holds its key. Default
	// PENDING and RUNNING; both must be included (a job moves between them
	// on every claim and retry, and must not lose or regain its key
	// there). Add DONE for "at most once per key", FAILED to keep a failed
	// job's key until someone retries or retention deletes it.
	ByStatus []JobStatus
}

// uniqueKeyVersion is hashed into every key: a change to how keys are
// built changes the prefix, so an old and a new key never collide.
const uniqueKeyVersion = "lockstep/unique/v1"

// key returns the job's unique key (hex SHA-256) and its status set.
func (u *UniqueOpts) key(kind, queue string, args []byte, at time.Time) (string, int, error) {
	statuses := u.ByStatus
	if len(statuses) == 0 {
		statuses = []JobStatus{StatusPending, StatusRunning}
	}
	mask := 0
	for _, s := range statuses {
		bit := driver.UniqueStateBit(s)
		if bit == 0 {
			return "", 0, fmt.Errorf("unique: %q is not a job status", s)
		}
		mask |= bit
	}
	if !slices.Contains(statuses, StatusPending) || !slices.Contains(statuses, StatusRunning) {
		return "", 0, errors.New("unique: ByStatus must include PENDING and RUNNING")
	}
	if u.ByPeriod < 0 {
		return "", 0, fmt.Errorf("unique: ByPeriod must not be negative, got %s", u.ByPeriod)
	}
	h := sha256.New()
	part := func(name, v string) {
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00", name, len(v), v)
	}
	part("version", uniqueKeyVersion)
	part("kind", kind)
	if u.Key != "" {
		part("key", u.Key)
	} else {
		canon, err := canonicalJSON(args)
		if err != nil {
			return "", 0, fmt.Errorf("unique: %w", err)
		}
		part("args", string(canon))
	}
	if u.ByQueue {
		part("queue", queue)
	}
	if u.ByPeriod > 0 {
		if at.IsZero() {
			at = time.Now()
		}
		part("period", strconv.FormatInt(at.UTC().Truncate(u.ByPeriod).UnixNano(), 10))
	}
	return hex.EncodeToString(h.Sum(nil)), mask, nil
}

// canonicalJSON re-encodes JSON with sorted object keys and no spaces, so
// that args equal as JSON give one key whatever their formatting.
func canonicalJSON(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("args: %w", err)
	}
	return json.Marshal(v)
}

// InsertResult is the outcome of an insert.
type InsertResult struct {
	// ID is the new job, or for a duplicate the job that holds the key.
	// It is 0 only for a duplicate whose holder left its unique statuses
	// before it could be read.
	ID int64
	// Duplicate is true when a job with the same unique key was in one of
	// its unique statuses, and nothing was inserted.
	Duplicate bool
}

// Insert is Enqueue, saying whether a unique job was a duplicate.
func (c *Client) Insert(ctx context.Context, args JobArgs, opts *EnqueueOpts) (*InsertResult, error) {
	res, err := c.insert(ctx, []EnqueueParams{{Args: args, Opts: opts}})
	if err != nil {
		return nil, err
	}
	return &res[0], nil
}

// InsertTx is EnqueueTx, saying whether a unique job was a duplicate. A
// duplicate found inside tx is final for tx: the holder committed first.
func (c *Client) InsertTx(ctx context.Context, tx any, args JobArgs, opts *EnqueueOpts) (*InsertResult, error) {
	res, err := c.insertTx(ctx, tx, []EnqueueParams{{Args: args, Opts: opts}})
	if err != nil {
		return nil, err
	}
	return &res[0], nil
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
		for i, r := range rows {
			if r.UniqueKey == "" {
				plain, plainAt = append(plain, r), append(plainAt, i)
			}
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

func resultIDs(res []InsertResult) []int64 {
	ids := make([]int64, len(res))
	for i, r := range res {
		ids[i] = r.ID
	}
	return ids
}
