package sqlexec

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// Dialect is what a database contributes to the shared executor.
type Dialect struct {
	Catalog *catalog.Catalog
	// BeginTx opens the queue's own short transaction.
	BeginTx func(ctx context.Context, db *sql.DB) (*sql.Tx, error)
	// Classify returns the kind and code of a database error.
	Classify func(err error) (rowtype.ErrorKind, string)
	// TimeArg converts a time parameter; nil passes time.Time unchanged.
	TimeArg func(time.Time) any
	// ColumnarInsert builds the array-per-column arguments of "job.insert"
	// for dialects that insert from arrays; nil expands {rows}.
	ColumnarInsert func(jobs []driver.JobInsertParams) []any
	// ChunkSize bounds the ids one multi-row statement names.
	ChunkSize int
	// Wake, when set on a dialect with the Notify capability, paces
	// the wake-ups that inserts and retries send to other processes'
	// listeners (driver.Notifier); nil sends none.
	Wake *Wake
}

// Executor implements driver.Executor on a pool or inside a transaction.
type Executor struct {
	d    *Dialect
	q    Querier
	pool *sql.DB // nil: q is a transaction someone else owns
}

// New returns an Executor over a pool; multi-statement operations open
// their own transaction.
func New(d *Dialect, pool *sql.DB) *Executor {
	return &Executor{d: d, q: SQL(pool), pool: pool}
}

// InTx returns an Executor that runs inside an existing transaction.
func InTx(d *Dialect, q Querier) *Executor { return &Executor{d: d, q: q} }

var _ driver.Executor = (*Executor)(nil)

func (e *Executor) cat() *catalog.Catalog { return e.d.Catalog }

// caps are the dialect's declared capabilities; the executor chooses its
// way through a stage by them alone.
func (e *Executor) caps() catalog.Capabilities { return e.d.Catalog.Capabilities() }

// wrap classifies a database error by code and names the operation.
func (e *Executor) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, rowtype.ErrNotFound) || errors.Is(err, rowtype.ErrRunCancelled) || rowtype.KindOf(err) != rowtype.ErrorOther {
		return fmt.Errorf("%s: %w", op, err)
	}
	if kind, code := e.d.Classify(err); kind != rowtype.ErrorOther {
		return fmt.Errorf("%s: %w", op, &rowtype.DBError{Kind: kind, Code: code, Err: err})
	}
	return fmt.Errorf("%s: %w", op, err)
}

// inTx runs fn in the queue's own transaction, or in the caller's.
func (e *Executor) inTx(ctx context.Context, fn func(q Querier) error) error {
	if e.pool == nil {
		return fn(e.q)
	}
	tx, err := e.d.BeginTx(ctx, e.pool)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(SQL(tx)); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := driver.TraceBefore(ctx, driver.TraceCommit); err != nil {
		_ = tx.Rollback()
		return fmt.Errorf("trace: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// query and exec run one catalogue statement, telling the context's
// statement trace first.
func (e *Executor) query(ctx context.Context, q Querier, name catalog.Name, sqlText string, args ...any) (Rows, error) {
	if err := driver.TraceBefore(ctx, string(name)); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	return q.Query(ctx, sqlText, args...)
}

func (e *Executor) exec(ctx context.Context, q Querier, name catalog.Name, sqlText string, args ...any) (Result, error) {
	if err := driver.TraceBefore(ctx, string(name)); err != nil {
		return Result{}, fmt.Errorf("trace: %w", err)
	}
	return q.Exec(ctx, sqlText, args...)
}

func (e *Executor) timeArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	if e.d.TimeArg != nil {
		return e.d.TimeArg(t)
	}
	return t.UTC()
}

func micros(d time.Duration) int64 { return d.Microseconds() }

// execIDs runs an IDList statement over ascending ids in chunks, locking
// the chunk first where the dialect needs it (LockIDsFirst, job.lock_ids:
// PostgreSQL locks rows in plan order, so the ids are locked ORDER BY id
// first).
func (e *Executor) execIDs(ctx context.Context, q Querier, name catalog.Name, ids []int64, args ...any) (int64, error) {
	st := e.cat().Get(name)
	var lock catalog.Statement
	needLock := e.caps().LockIDsFirst
	if needLock {
		lock = e.cat().Get(catalog.JobLockIDs)
	}
	chunk := e.chunkSize()
	var total int64
	for start := 0; start < len(ids); start += chunk {
		part := ids[start:min(start+chunk, len(ids))]
		if needLock {
			if err := e.lockRows(ctx, q, lock, part); err != nil {
				return total, err
			}
		}
		sqlText, bargs := e.cat().BindIDs(st, part, args...)
		res, err := e.exec(ctx, q, name, sqlText, bargs...)
		if err != nil {
			return total, err
		}
		total += res.RowsAffected
	}
	return total, nil
}

// chunkSize is how many ids one IDList statement binds.
func (e *Executor) chunkSize() int {
	if e.d.ChunkSize <= 0 {
		return 500
	}
	return e.d.ChunkSize
}

// lockRows runs a locking read over ids (ascending) and discards its rows:
// the locks are what it is for.
func (e *Executor) lockRows(ctx context.Context, q Querier, st catalog.Statement, ids []int64) error {
	sqlText, args := e.cat().BindIDs(st, ids)
	rows, err := e.query(ctx, q, st.Name, sqlText, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	return errors.Join(rows.Err(), rows.Close())
}

func sortedUnique(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// JobInsertMany inserts jobs in batches, one statement per batch. When the
// dialect wakes listeners and a queue is due a wake-up, the inserts and
// "job.notify" share one transaction (the executor's own on a pool).
func (e *Executor) JobInsertMany(ctx context.Context, jobs []driver.JobInsertParams) ([]int64, error) {
	queues := e.wake().due(jobs)
	if len(queues) == 0 {
		ids, err := e.insertJobs(ctx, e.q, jobs)
		return ids, e.wrap("insert jobs", err)
	}
	var ids []int64
	err := e.inTx(ctx, func(q Querier) error {
		var err error
		if ids, err = e.insertJobs(ctx, q, jobs); err != nil {
			return err
		}
		return e.notify(ctx, q, queues)
	})
	return ids, e.wrap("insert jobs", err)
}

func (e *Executor) insertJobs(ctx context.Context, q Querier, jobs []driver.JobInsertParams) ([]int64, error) {
	const batch = 1000
	ids := make([]int64, 0, len(jobs))
	for start := 0; start < len(jobs); start += batch {
		part := jobs[start:min(start+batch, len(jobs))]
		got, err := e.insertBatch(ctx, q, part)
		if err != nil {
			return nil, err
		}
		ids = append(ids, got...)
	}
	return ids, nil
}

func (e *Executor) insertBatch(ctx context.Context, q Querier, jobs []driver.JobInsertParams) ([]int64, error) {
	st := e.cat().Get(catalog.JobInsert)
	var sqlText string
	var args []any
	if e.d.ColumnarInsert != nil {
		sqlText, args = st.SQL, e.d.ColumnarInsert(jobs)
	} else {
		sqlText = e.cat().BindRows(st, len(jobs))
		args = make([]any, 0, len(jobs)*8)
		for _, j := range jobs {
			args = e.rowArgs(args, j)
		}
	}
	if !st.Returning {
		// No INSERT ... RETURNING (MySQL 8): the ids come from LastInsertId,
		// consecutive within one multi-row statement (InnoDB guarantees this
		// for simple inserts).
		res, err := e.exec(ctx, q, st.Name, sqlText, args...)
		if err != nil {
			return nil, err
		}
		if res.RowsAffected != int64(len(jobs)) || res.LastInsertID == 0 {
			return nil, fmt.Errorf("insert reported %d rows, first id %d, for %d jobs", res.RowsAffected, res.LastInsertID, len(jobs))
		}
		ids := make([]int64, len(jobs))
		for i := range ids {
			ids[i] = res.LastInsertID + int64(i)
		}
		return ids, nil
	}
	ids, err := e.queryIDs(ctx, q, st.Name, sqlText, args...)
	if err != nil {
		return nil, err
	}
	if len(ids) != len(jobs) {
		return nil, fmt.Errorf("insert returned %d ids for %d jobs", len(ids), len(jobs))
	}
	// RETURNING order is not guaranteed everywhere; ids are assigned in
	// insertion order within one statement, so sorted ids are input order.
	slices.Sort(ids)
	return ids, nil
}

// rowArgs appends one job's values in the column order of job.insert's
// rows (and the start of job.insert_unique's): run (NULL for none), queue,
// kind, args, priority, max attempts, time, metadata.
func (e *Executor) rowArgs(args []any, j driver.JobInsertParams) []any {
	var run any
	if j.RunID != 0 {
		run = j.RunID
	}
	return append(args, run, j.Queue, j.Kind, string(j.Args), j.Priority, j.MaxAttempts, e.timeArg(j.ScheduledAt), jsonArg(j.Metadata))
}

// jsonArg binds optional JSON as text, or NULL when there is none.
func jsonArg(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

func (e *Executor) queryIDs(ctx context.Context, q Querier, name catalog.Name, sqlText string, args ...any) ([]int64, error) {
	rows, err := e.query(ctx, q, name, sqlText, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// JobInsertIntoRun locks the run row first — the run before its jobs, the
// same order as RunCancel — so no job can slip into a run being cancelled.
func (e *Executor) JobInsertIntoRun(ctx context.Context, runID int64, jobs []driver.JobInsertParams) ([]int64, error) {
	queues := e.wake().due(jobs)
	var ids []int64
	err := e.inTx(ctx, func(q Querier) error {
		var err error
		if ids, err = e.insertIntoRun(ctx, q, runID, jobs); err != nil {
			return err
		}
		return e.notify(ctx, q, queues)
	})
	return ids, e.wrap("insert jobs into run", err)
}

func (e *Executor) insertIntoRun(ctx context.Context, q Querier, runID int64, jobs []driver.JobInsertParams) ([]int64, error) {
	if err := e.lockRunShared(ctx, q, runID); err != nil {
		return nil, err
	}
	withRun := make([]driver.JobInsertParams, len(jobs))
	for i, j := range jobs {
		j.RunID = runID
		withRun[i] = j
	}
	return e.insertJobs(ctx, q, withRun)
}

// lockRunShared locks a run row in share mode — the run before its jobs —
// and refuses a missing or cancelled run.
func (e *Executor) lockRunShared(ctx context.Context, q Querier, runID int64) error {
	rows, err := e.query(ctx, q, catalog.RunLockShared, e.cat().Get(catalog.RunLockShared).SQL, runID)
	if err != nil {
		return err
	}
	var status string
	found := rows.Next()
	if found {
		err = rows.Scan(&status)
	}
	if err := errors.Join(err, rows.Err(), rows.Close()); err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("run %d: %w", runID, rowtype.ErrNotFound)
	}
	if rowtype.RunStatus(status) == rowtype.RunCancelled {
		return fmt.Errorf("run %d: %w", runID, rowtype.ErrRunCancelled)
	}
	return nil
}

// JobClaim takes up to Max ready jobs of a queue in one short transaction.
func (e *Executor) JobClaim(ctx context.Context, p *driver.JobClaimParams) ([]*rowtype.JobRow, error) {
	if p.Max <= 0 {
		return nil, nil
	}
	if e.caps().OneStatementClaim {
		// One statement locks (SKIP LOCKED), updates and returns the rows.
		st := e.cat().Get(catalog.JobClaim)
		rows, err := e.query(ctx, e.q, st.Name, st.SQL, p.Queue, p.Max)
		if err != nil {
			return nil, e.wrap("claim", err)
		}
		jobs, err := scanJobs(rows)
		if err != nil {
			// The statement did not complete, so nothing was claimed.
			return nil, e.wrap("claim", err)
		}
		slices.SortFunc(jobs, func(a, b *rowtype.JobRow) int { return cmpInt64(a.ID, b.ID) })
		return jobs, nil
	}
	// MySQL: no UPDATE ... RETURNING. Lock the rows through the claim index
	// with SKIP LOCKED, then move them to RUNNING by primary key.
	var jobs []*rowtype.JobRow
	err := e.inTx(ctx, func(q Querier) error {
		rows, err := e.query(ctx, q, catalog.JobClaimSelect, e.cat().Get(catalog.JobClaimSelect).SQL, p.Queue, p.Max)
		if err != nil {
			return err
		}
		var now time.Time
		jobs = jobs[:0]
		for rows.Next() {
			j, err := scanJob(rows, nullTime{&now})
			if err != nil {
				rows.Close()
				return err
			}
			jobs = append(jobs, j)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		if len(jobs) == 0 {
			return nil
		}
		ids := make([]int64, len(jobs))
		for i, j := range jobs {
			ids[i] = j.ID
			j.Status, j.Attempts, j.StartedAt, j.HeartbeatAt = rowtype.StatusRunning, j.Attempts+1, now, now
		}
		ids = sortedUnique(ids)
		n, err := e.execIDs(ctx, q, catalog.JobClaimUpdate, ids, e.timeArg(now), e.timeArg(now))
		if err != nil {
			return err
		}
		if n != int64(len(ids)) {
			// The rows are locked by this transaction; anything else is a bug
			// worth failing loudly on rather than running a job twice.
			return fmt.Errorf("claim updated %d of %d locked rows", n, len(ids))
		}
		return nil
	})
	if err != nil {
		return nil, e.wrap("claim", err)
	}
	slices.SortFunc(jobs, func(a, b *rowtype.JobRow) int { return cmpInt64(a.ID, b.ID) })
	return jobs, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func historyEntry(attempt int, msg string) string {
	b, _ := json.Marshal([]rowtype.AttemptError{{Attempt: attempt, At: time.Now().UTC(), Error: msg}})
	return string(b)
}

// JobFinish writes a worker's result by primary key, fenced on the attempt.
func (e *Executor) JobFinish(ctx context.Context, p *driver.JobFinishParams) (bool, error) {
	var name catalog.Name
	var args []any
	switch {
	case p.Status == rowtype.StatusDone:
		name, args = catalog.JobFinishDone, []any{jsonArg(p.Output), p.ID, p.Attempt}
	case p.Status == rowtype.StatusFailed:
		name, args = catalog.JobFinishFailed, []any{p.Error, historyEntry(p.Attempt, p.Error), p.ID, p.Attempt}
	case p.Status == rowtype.StatusPending && p.Snooze:
		name, args = catalog.JobFinishSnooze, []any{micros(p.RetryAfter), p.ID, p.Attempt}
	case p.Status == rowtype.StatusPending:
		name, args = catalog.JobFinishRetry, []any{micros(p.RetryAfter), p.Error, historyEntry(p.Attempt, p.Error), p.ID, p.Attempt}
	default:
		return false, fmt.Errorf("finish job %d: status %q is not a result", p.ID, p.Status)
	}
	res, err := e.exec(ctx, e.q, name, e.cat().Get(name).SQL, args...)
	if err != nil {
		return false, e.wrap(fmt.Sprintf("finish job %d", p.ID), err)
	}
	return res.RowsAffected == 1, nil
}

// JobHeartbeat refreshes heartbeats by primary key in ascending id order
// and reports the attempts this worker no longer owns.
func (e *Executor) JobHeartbeat(ctx context.Context, jobs []driver.JobRef) ([]driver.JobRef, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	want := make(map[int64]int, len(jobs))
	ids := make([]int64, 0, len(jobs))
	for _, j := range jobs {
		want[j.ID] = j.Attempt
		ids = append(ids, j.ID)
	}
	ids = sortedUnique(ids)
	owned := map[int64]bool{}
	err := e.inTx(ctx, func(q Querier) error {
		if _, err := e.execIDs(ctx, q, catalog.JobHeartbeat, ids); err != nil {
			return err
		}
		sqlText, args := e.cat().BindIDs(e.cat().Get(catalog.JobStateMany), ids)
		rows, err := e.query(ctx, q, catalog.JobStateMany, sqlText, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		clear(owned)
		for rows.Next() {
			var id, attempts int64
			var status string
			if err := rows.Scan(&id, &status, &attempts); err != nil {
				return err
			}
			owned[id] = rowtype.JobStatus(status) == rowtype.StatusRunning && int(attempts) == want[id]
		}
		return rows.Err()
	})
	if err != nil {
		return nil, e.wrap("heartbeat", err)
	}
	var lost []driver.JobRef
	for _, j := range jobs {
		if !owned[j.ID] {
			lost = append(lost, j)
		}
	}
	return lost, nil
}

// JobReap returns RUNNING jobs with a stale heartbeat to PENDING (FAILED
// when no attempt is left). Candidates come from a non-locking read; each
// is then updated alone by primary key, in ascending id order, re-checking
// that it is still the same stale attempt.
func (e *Executor) JobReap(ctx context.Context, p *driver.JobReapParams) ([]rowtype.ReapResult, error) {
	limit := p.Max
	if limit <= 0 {
		limit = 1000
	}
	rows, err := e.query(ctx, e.q, catalog.JobReapSelect, e.cat().Get(catalog.JobReapSelect).SQL, micros(p.StaleAfter), limit)
	if err != nil {
		return nil, e.wrap("reap: select", err)
	}
	type cand struct {
		id                  int64
		attempts, maxAttmpt int64
	}
	var cands []cand
	for rows.Next() {
		var c cand
		if err := rows.Scan(&c.id, &c.attempts, &c.maxAttmpt); err != nil {
			rows.Close()
			return nil, e.wrap("reap: select", err)
		}
		cands = append(cands, c)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, e.wrap("reap: select", err)
	}
	slices.SortFunc(cands, func(a, b cand) int { return cmpInt64(a.id, b.id) })
	st := e.cat().Get(catalog.JobReap)
	var out []rowtype.ReapResult
	for _, c := range cands {
		msg := fmt.Sprintf("heartbeat lost: no heartbeat for over %s (worker presumed dead)", p.StaleAfter)
		res, err := e.exec(ctx, e.q, st.Name, st.SQL, msg, historyEntry(int(c.attempts), msg), c.id, c.attempts, micros(p.StaleAfter))
		if err != nil {
			return out, e.wrap(fmt.Sprintf("reap job %d", c.id), err)
		}
		if res.RowsAffected == 1 {
			status := rowtype.StatusPending
			if c.attempts >= c.maxAttmpt {
				status = rowtype.StatusFailed
			}
			out = append(out, rowtype.ReapResult{ID: c.id, Attempt: int(c.attempts), Status: status})
		}
	}
	return out, nil
}

// JobPrune implements driver.Executor: the candidates are read without
// locks through the queue-status index; then, in one transaction per
// call, each chunk is locked by primary key in ascending id order and
// checked again (a retried FAILED job is PENDING now), and what still
// qualifies is deleted by primary key.
func (e *Executor) JobPrune(ctx context.Context, p *driver.JobPruneParams) ([]int64, error) {
	switch p.Status {
	case rowtype.StatusDone, rowtype.StatusCancelled, rowtype.StatusFailed:
	default:
		return nil, fmt.Errorf("prune: status %q is not a final status", p.Status)
	}
	limit := p.Max
	if limit <= 0 {
		limit = 1000
	}
	cands, err := e.queryIDs(ctx, e.q, catalog.JobPruneSelect, e.cat().Get(catalog.JobPruneSelect).SQL, p.Queue, string(p.Status), micros(p.OlderThan), limit)
	if err != nil {
		return nil, e.wrap("prune: select", err)
	}
	if len(cands) == 0 {
		return nil, nil
	}
	cands = sortedUnique(cands)
	lock, del := e.cat().Get(catalog.JobPruneLock), e.cat().Get(catalog.JobDeleteMany)
	var deleted []int64
	err = e.inTx(ctx, func(q Querier) error {
		deleted = deleted[:0]
		chunk := e.chunkSize()
		for start := 0; start < len(cands); start += chunk {
			sqlText, args := e.cat().BindIDs(lock, cands[start:min(start+chunk, len(cands))], string(p.Status), micros(p.OlderThan))
			still, err := e.queryIDs(ctx, q, lock.Name, sqlText, args...)
			if err != nil {
				return err
			}
			if len(still) == 0 {
				continue
			}
			slices.Sort(still)
			sqlText, args = e.cat().BindIDs(del, still)
			if _, err := e.exec(ctx, q, del.Name, sqlText, args...); err != nil {
				return err
			}
			deleted = append(deleted, still...)
		}
		return nil
	})
	if err != nil {
		return nil, e.wrap("prune", err)
	}
	return deleted, nil
}

// JobCancel cancels one job by primary key.
func (e *Executor) JobCancel(ctx context.Context, id int64) (bool, error) {
	res, err := e.exec(ctx, e.q, catalog.JobCancel, e.cat().Get(catalog.JobCancel).SQL, id)
	if err != nil {
		return false, e.wrap(fmt.Sprintf("cancel job %d", id), err)
	}
	return res.RowsAffected == 1, nil
}

// JobGet reads one job.
func (e *Executor) JobGet(ctx context.Context, id int64) (*rowtype.JobRow, error) {
	job, err := e.getJob(ctx, e.q, id)
	if err != nil {
		return nil, e.wrap(fmt.Sprintf("get job %d", id), err)
	}
	return job, nil
}

// JobList lists jobs by id, optionally of one run and one status.
func (e *Executor) JobList(ctx context.Context, p *rowtype.JobListParams) ([]*rowtype.JobRow, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	var rows Rows
	var err error
	if p.RunID != 0 {
		rows, err = e.query(ctx, e.q, catalog.JobListByRun, e.cat().Get(catalog.JobListByRun).SQL, p.RunID, p.AfterID, string(p.Status), string(p.Status), limit)
	} else {
		rows, err = e.query(ctx, e.q, catalog.JobList, e.cat().Get(catalog.JobList).SQL, p.AfterID, string(p.Status), string(p.Status), limit)
	}
	if err != nil {
		return nil, e.wrap("list jobs", err)
	}
	jobs, err := scanJobs(rows)
	return jobs, e.wrap("list jobs", err)
}

// Tx is an Executor inside a transaction the driver opened.
type Tx struct {
	*Executor
	tx *sql.Tx
}

// NewTx wraps a transaction the driver began.
func NewTx(d *Dialect, tx *sql.Tx) *Tx { return &Tx{Executor: InTx(d, SQL(tx)), tx: tx} }

// Commit commits the transaction.
func (t *Tx) Commit() error { return t.tx.Commit() }

// Rollback rolls the transaction back.
func (t *Tx) Rollback() error { return t.tx.Rollback() }

// JobCompleteMany writes DONE for a batch of attempts, one statement per
// attempt number (nearly always one) and chunk, each its own transaction
// that locks its rows by primary key in ascending id order. Where the
// statement returns the ids it changed (PostgreSQL, SQLite) that is all.
// On MySQL, which cannot return them, each statement runs in a transaction
// that commits only if every fence matched; otherwise it is rolled back
// and written again the careful way: lock the rows, read their states,
// write those still owned.
func (e *Executor) JobCompleteMany(ctx context.Context, jobs []driver.JobRef) ([]driver.JobRef, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	want := make(map[int64]int, len(jobs))
	for _, j := range jobs {
		want[j.ID] = j.Attempt
	}
	st := e.cat().Get(catalog.JobFinishDoneMany)
	chunk := e.chunkSize()
	groups := groupByAttempt(want)
	attempts := make([]int, 0, len(groups))
	for a := range groups {
		attempts = append(attempts, a)
	}
	slices.Sort(attempts)
	var written []driver.JobRef
	for _, a := range attempts {
		ids := sortedUnique(groups[a])
		for start := 0; start < len(ids); start += chunk {
			part := ids[start:min(start+chunk, len(ids))]
			var got []int64
			var err error
			if st.Returning {
				sqlText, args := e.cat().BindIDs(st, part, a)
				got, err = e.queryIDs(ctx, e.q, st.Name, sqlText, args...)
			} else {
				got, err = e.completeChecked(ctx, part, a)
			}
			if err != nil {
				return nil, e.wrap(fmt.Sprintf("complete %d jobs", len(jobs)), err)
			}
			for _, id := range got {
				written = append(written, driver.JobRef{ID: id, Attempt: a})
			}
		}
	}
	slices.SortFunc(written, func(x, y driver.JobRef) int { return cmpInt64(x.ID, y.ID) })
	return written, nil
}

// completeChecked is the batched DONE where the statement cannot say which
// rows it changed: all or nothing, then row by row under lock.
func (e *Executor) completeChecked(ctx context.Context, ids []int64, attempt int) ([]int64, error) {
	err := e.inTx(ctx, func(q Querier) error {
		n, err := e.execIDs(ctx, q, catalog.JobFinishDoneMany, ids, attempt)
		if err != nil {
			return err
		}
		if n != int64(len(ids)) {
			return errPartialComplete
		}
		return nil
	})
	if err == nil {
		return ids, nil
	}
	if !errors.Is(err, errPartialComplete) {
		return nil, err
	}
	var owned []int64
	err = e.inTx(ctx, func(q Querier) error {
		if err := e.lockMany(ctx, q, ids); err != nil {
			return err
		}
		want := make(map[int64]int, len(ids))
		for _, id := range ids {
			want[id] = attempt
		}
		still, err := e.owned(ctx, q, ids, want)
		if err != nil {
			return err
		}
		owned = owned[:0]
		for _, id := range ids {
			if _, ok := still[id]; ok {
				owned = append(owned, id)
			}
		}
		if len(owned) == 0 {
			return nil
		}
		_, err = e.execIDs(ctx, q, catalog.JobFinishDoneMany, owned, attempt)
		return err
	})
	return owned, err
}

// errPartialComplete rolls back a batched DONE whose fences did not all
// match.
var errPartialComplete = errors.New("some fences did not match")

// owned reads which of ids are still RUNNING at the wanted attempt.
func (e *Executor) owned(ctx context.Context, q Querier, ids []int64, want map[int64]int) (map[int64]int, error) {
	sqlText, args := e.cat().BindIDs(e.cat().Get(catalog.JobStateMany), ids)
	rows, err := e.query(ctx, q, catalog.JobStateMany, sqlText, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]int{}
	for rows.Next() {
		var id, att int64
		var status string
		if err := rows.Scan(&id, &status, &att); err != nil {
			return nil, err
		}
		if rowtype.JobStatus(status) == rowtype.StatusRunning && int(att) == want[id] {
			out[id] = int(att)
		}
	}
	return out, rows.Err()
}

func groupByAttempt(attempts map[int64]int) map[int][]int64 {
	out := map[int][]int64{}
	for id, a := range attempts {
		out[a] = append(out[a], id)
	}
	return out
}

// lockMany locks job rows by primary key in ascending id order, through
// the dialect's locking read (LockIDsFirst: job.lock_ids on PostgreSQL;
// LockMany: job.lock_many on MySQL); SQLite has one writer and needs none.
func (e *Executor) lockMany(ctx context.Context, q Querier, ids []int64) error {
	var st catalog.Statement
	switch caps := e.caps(); {
	case caps.LockIDsFirst:
		st = e.cat().Get(catalog.JobLockIDs)
	case caps.LockMany:
		st = e.cat().Get(catalog.JobLockMany)
	default:
		return nil
	}
	chunk := e.chunkSize()
	for start := 0; start < len(ids); start += chunk {
		if err := e.lockRows(ctx, q, st, ids[start:min(start+chunk, len(ids))]); err != nil {
			return err
		}
	}
	return nil
}
