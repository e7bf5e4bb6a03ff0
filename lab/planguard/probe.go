package planguard

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/lockstep-queue/lockstep/driver/catalog"
)

// The LIMITs the guard binds: a claim's, and the defaults of the bounded
// reads (pages and counts) of the CLI and the dashboard.
const (
	claimLimit = 10
	// claimAfterDepth is how far into the queue a claim after a key
	// starts: past a head that a plan reading from it would betray.
	claimAfterDepth = 500
	pageLimit       = 50
	// pageSearch is a search of the job page: a LIKE over every row of
	// its window, which must not change the window's access path.
	pageSearch = "%planguard%"
	pageWindow = 10_000
	countLimit = 100_000
	// A bulk action's window of the primary key and its batch.
	matchWindow = 100_000
	matchLimit  = 500
)

// probe holds the values statements are bound with: real rows of the data
// under test, so that the optimizer sees the selectivity the queue's own
// calls would present.
type probe struct {
	queue     string
	pendingID int64   // the first PENDING job
	claimIDs  []int64 // what a claim of claimLimit would take from queue
	// claimAfter is the claim-order key (priority, available_at as the
	// database returns it, id) of a PENDING job of queue claimAfterDepth
	// jobs from its head, or the head's when the queue is shorter: a
	// claim after it that read from the head would read them all.
	claimAfter []any
	runID      int64   // the run of the first live job that has one
	liveIDs    []int64 // that run's PENDING and RUNNING jobs
	running    []int64 // RUNNING jobs, with the attempt of the first
	runningAtt int64
	staleID    int64 // a job in a final status
	failedID   int64 // the first FAILED job
	uniqueKey  string
	waiting    []int64 // WAITING jobs (workflow dependents)
	depOn      []int64 // jobs others depend on
	cancelled  int64   // the first CANCELLED job, or a finished one
	// Limits: the keys of queue's first keyed PENDING jobs (what a claim
	// locks and counts), a key of queue with BLOCKED jobs and the first of
	// them (what a release locks and unblocks), and a job cancelled while
	// it ran, with its attempt (what a worker's release writes).
	limitKeys     []string
	blockedKey    string
	blockedIDs    []int64
	cancelling    int64
	cancellingAtt int64
	// processID is a registered process, one that claimed RUNNING jobs
	// when there are any.
	processID string
	// textIndex: the optional text index of the job search exists, so
	// job.search can be explained.
	textIndex bool
}

// processRows is how many registered processes a distribution holds.
const processRows = 20

// discover reads the probe values with plain, non-locking reads.
func discover(ctx context.Context, db *sql.DB, d dialect) (*probe, error) {
	p := &probe{}
	one := func(q string, dest ...any) error {
		err := db.QueryRowContext(ctx, d.rebind(q)).Scan(dest...)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	}
	if err := one("SELECT id, queue FROM lockstep_jobs WHERE status = 'PENDING' ORDER BY id LIMIT 1", &p.pendingID, &p.queue); err != nil {
		return nil, fmt.Errorf("discover pending: %w", err)
	}
	if p.queue != "" {
		ids, err := queryInts(ctx, db, d.rebind("SELECT id FROM lockstep_jobs WHERE queue = ? AND status = 'PENDING' ORDER BY priority, available_at, id LIMIT 10"), p.queue)
		if err != nil {
			return nil, fmt.Errorf("discover claim: %w", err)
		}
		p.claimIDs = ids
		for _, offset := range []int{claimAfterDepth, 0} {
			var prio int
			var at any
			var id int64
			err := db.QueryRowContext(ctx, d.rebind(fmt.Sprintf("SELECT priority, available_at, id FROM lockstep_jobs WHERE queue = ? AND status = 'PENDING'"+
				" ORDER BY priority, available_at, id LIMIT 1 OFFSET %d", offset)), p.queue).Scan(&prio, &at, &id)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("discover claim key: %w", err)
			}
			p.claimAfter = []any{prio, at, id}
			break
		}
	}
	var run sql.NullInt64
	if err := one("SELECT run_id FROM lockstep_jobs WHERE status IN ('PENDING', 'RUNNING') AND run_id IS NOT NULL ORDER BY id LIMIT 1", &run); err != nil {
		return nil, fmt.Errorf("discover run: %w", err)
	}
	if !run.Valid {
		if err := one("SELECT id FROM lockstep_runs ORDER BY id LIMIT 1", &run); err != nil {
			return nil, fmt.Errorf("discover run: %w", err)
		}
	}
	p.runID = run.Int64
	if p.runID != 0 {
		ids, err := queryInts(ctx, db, d.rebind("SELECT id FROM lockstep_jobs WHERE run_id = ? AND status IN ('PENDING', 'RUNNING') ORDER BY id LIMIT 500"), p.runID)
		if err != nil {
			return nil, fmt.Errorf("discover live jobs: %w", err)
		}
		p.liveIDs = ids
	}
	ids, err := queryInts(ctx, db, "SELECT id FROM lockstep_jobs WHERE status = 'RUNNING' ORDER BY id LIMIT 10")
	if err != nil {
		return nil, fmt.Errorf("discover running: %w", err)
	}
	p.running = ids
	if len(ids) > 0 {
		if err := one(fmt.Sprintf("SELECT attempts FROM lockstep_jobs WHERE id = %d", ids[0]), &p.runningAtt); err != nil {
			return nil, fmt.Errorf("discover running: %w", err)
		}
	}
	if err := one("SELECT id FROM lockstep_jobs WHERE status IN ('DONE', 'FAILED', 'CANCELLED') ORDER BY id LIMIT 1", &p.staleID); err != nil {
		return nil, fmt.Errorf("discover stale: %w", err)
	}
	if err := one("SELECT id FROM lockstep_jobs WHERE status = 'FAILED' ORDER BY id LIMIT 1", &p.failedID); err != nil {
		return nil, fmt.Errorf("discover failed: %w", err)
	}
	var key sql.NullString
	if err := one("SELECT unique_key FROM lockstep_jobs WHERE status IN ('PENDING', 'RUNNING') AND unique_key IS NOT NULL ORDER BY id LIMIT 1", &key); err != nil {
		return nil, fmt.Errorf("discover unique key: %w", err)
	}
	p.uniqueKey = key.String
	if p.waiting, err = queryInts(ctx, db, "SELECT id FROM lockstep_jobs WHERE status = 'WAITING' ORDER BY id LIMIT 10"); err != nil {
		return nil, fmt.Errorf("discover waiting: %w", err)
	}
	if p.depOn, err = queryInts(ctx, db, "SELECT depends_on FROM lockstep_job_deps ORDER BY depends_on, job_id LIMIT 10"); err != nil {
		return nil, fmt.Errorf("discover dependencies: %w", err)
	}
	p.depOn = slices.Compact(p.depOn)
	if err := one("SELECT id FROM lockstep_jobs WHERE status = 'CANCELLED' ORDER BY id LIMIT 1", &p.cancelled); err != nil {
		return nil, fmt.Errorf("discover cancelled: %w", err)
	}
	if p.cancelled == 0 {
		// No distribution holds a CANCELLED job; a revive's plan is the
		// same on any finished one.
		p.cancelled = p.staleID
	}
	var proc sql.NullString
	if err := one("SELECT claimed_by FROM lockstep_jobs WHERE status = 'RUNNING' AND claimed_by IS NOT NULL ORDER BY id LIMIT 1", &proc); err != nil {
		return nil, fmt.Errorf("discover process: %w", err)
	}
	if !proc.Valid {
		if err := one("SELECT id FROM lockstep_processes ORDER BY id LIMIT 1", &proc); err != nil {
			return nil, fmt.Errorf("discover process: %w", err)
		}
	}
	p.processID = proc.String
	if p.queue != "" {
		keys, err := queryStrings(ctx, db, d.rebind("SELECT limit_key FROM lockstep_jobs WHERE queue = ? AND status = 'PENDING' AND limit_key IS NOT NULL ORDER BY id LIMIT 28"), p.queue)
		if err != nil {
			return nil, fmt.Errorf("discover limit keys: %w", err)
		}
		slices.Sort(keys)
		p.limitKeys = slices.Compact(keys)
		var key sql.NullString
		if err := db.QueryRowContext(ctx, d.rebind("SELECT limit_key FROM lockstep_jobs WHERE queue = ? AND status = 'BLOCKED' AND limit_key IS NOT NULL ORDER BY id LIMIT 1"), p.queue).Scan(&key); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("discover blocked key: %w", err)
		}
		p.blockedKey = key.String
		if p.blockedKey != "" {
			if p.blockedIDs, err = queryInts(ctx, db, d.rebind("SELECT id FROM lockstep_jobs WHERE queue = ? AND limit_key = ? AND status = 'BLOCKED' ORDER BY id LIMIT 10"), p.queue, p.blockedKey); err != nil {
				return nil, fmt.Errorf("discover blocked jobs: %w", err)
			}
		}
	}
	if err := one("SELECT id, attempts FROM lockstep_jobs WHERE status = 'CANCELLED' AND finished_at IS NULL ORDER BY id LIMIT 1", &p.cancelling, &p.cancellingAtt); err != nil {
		return nil, fmt.Errorf("discover cancelled while running: %w", err)
	}
	return p, nil
}

func queryStrings(ctx context.Context, db *sql.DB, q string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func queryInts(ctx context.Context, db *sql.DB, q string, args ...any) ([]int64, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// bind renders a statement with probe values, in the argument order the
// shared executor uses for it (the same in every dialect). skip says why a
// statement cannot be probed on this data; an unknown statement is an
// error, so a new statement cannot escape the guard unnoticed.
// historyMinutes is how many minutes of history per queue the fixture
// loads: three days.
const historyMinutes = 3 * 24 * 60

func bind(cat *catalog.Catalog, st catalog.Statement, variant string, p *probe) (string, []any, string, error) {
	stale := variant == "stale"
	// target is one row: the live one the statement expects, or one that
	// has moved on.
	target := func(live int64, what string) (int64, string) {
		if stale {
			if p.staleID == 0 {
				return 0, "no finished job in the data"
			}
			return p.staleID, ""
		}
		if live == 0 {
			return 0, "no " + what + " job in the data"
		}
		return live, ""
	}
	list := func(live []int64, what string) ([]int64, string) {
		if stale {
			if p.staleID == 0 {
				return nil, "no finished job in the data"
			}
			return []int64{p.staleID}, ""
		}
		if len(live) == 0 {
			return nil, "no " + what + " job in the data"
		}
		return live, ""
	}
	first := func(ids []int64) int64 {
		if len(ids) == 0 {
			return 0
		}
		return ids[0]
	}
	const hist = `[{"attempt":1,"error":"planguard"}]`
	const micros = int64(time.Minute / time.Microsecond)
	now := time.Now().UTC()
	plain := func(args ...any) (string, []any, string, error) { return st.SQL, args, "", nil }
	withIDs := func(ids []int64, skip string, args ...any) (string, []any, string, error) {
		if skip != "" {
			return "", nil, skip, nil
		}
		q, a := cat.BindIDs(st, ids, args...)
		return q, a, "", nil
	}
	withRow := func(id int64, skip string, args ...any) (string, []any, string, error) {
		if skip != "" {
			return "", nil, skip, nil
		}
		return plain(args...)
	}
	needRun := func(args ...any) (string, []any, string, error) {
		if p.runID == 0 {
			return "", nil, "no run in the data", nil
		}
		return plain(args...)
	}
	needQueue := func(args ...any) (string, []any, string, error) {
		if p.queue == "" {
			return "", nil, "no PENDING job in the data", nil
		}
		return plain(args...)
	}
	needProcess := func(args ...any) (string, []any, string, error) {
		if p.processID == "" {
			return "", nil, "no registered process in the data", nil
		}
		return plain(args...)
	}
	withKeys := func(keys []string, args ...any) (string, []any, string, error) {
		if p.queue == "" || len(keys) == 0 {
			return "", nil, "no keyed PENDING job in the data", nil
		}
		q, a := cat.BindKeys(st, keys, args...)
		return q, a, "", nil
	}
	// A release's keys: those of jobs that left RUNNING, among them one
	// that holds jobs BLOCKED.
	var releaseKeys []string
	if len(p.limitKeys) > 0 {
		releaseKeys = append(slices.Clone(p.limitKeys), p.blockedKey)
		slices.Sort(releaseKeys)
		releaseKeys = slices.Compact(releaseKeys)
	}
	switch st.Name {
	case catalog.RunLockShared, catalog.RunGet, catalog.RunCancel, catalog.RunCounts, catalog.JobIDsLiveByRun:
		return needRun(p.runID)
	case catalog.JobListByRun:
		return needRun(p.runID, 0, "", "", 100)
	case catalog.JobList:
		return plain(0, "", "", 100)
	case catalog.JobGet:
		id, skip := target(p.pendingID, "PENDING")
		return withRow(id, skip, id)
	case catalog.JobClaimSelect, catalog.JobClaim:
		if p.queue == "" {
			return "", nil, "no PENDING job in the data", nil
		}
		if st.Name == catalog.JobClaimSelect {
			return plain(p.queue, claimLimit)
		}
		return plain(p.queue, claimLimit, "planguard-1")
	case catalog.JobClaimAfter, catalog.JobClaimSelectAfter:
		if len(p.claimAfter) == 0 {
			return "", nil, "no PENDING job in the data", nil
		}
		prio, at, id := p.claimAfter[0], p.claimAfter[1], p.claimAfter[2]
		if st.Name == catalog.JobClaimSelectAfter {
			return plain(p.queue, prio, prio, at, at, id, claimLimit)
		}
		return plain(p.queue, claimLimit, "planguard-1", prio, at, id)
	case catalog.JobClaimUpdate:
		ids, skip := list(p.claimIDs, "PENDING")
		return withIDs(ids, skip, now, now, "planguard-1")
	case catalog.JobFinishDoneMany:
		ids, skip := list(p.running, "RUNNING")
		return withIDs(ids, skip, p.runningAtt)
	case catalog.JobLockIDs, catalog.JobLockMany, catalog.JobCancelMany:
		ids, skip := list(p.liveIDs, "live")
		return withIDs(ids, skip)
	case catalog.JobHeartbeat, catalog.JobStateMany:
		ids, skip := list(p.running, "RUNNING")
		return withIDs(ids, skip)
	case catalog.JobCancel:
		id, skip := target(p.pendingID, "PENDING")
		return withRow(id, skip, id)
	case catalog.JobFinishDone:
		id, skip := target(first(p.running), "RUNNING")
		return withRow(id, skip, `{"planguard":true}`, id, p.runningAtt)
	case catalog.JobIDByUniqueKey:
		// A key some live job holds: MariaDB reads a unique-index value
		// as a constant first, and a missing one leaves no plan to check.
		if p.uniqueKey == "" {
			return "", nil, "no job holds a unique key in the data", nil
		}
		return plain(p.uniqueKey)
	case catalog.JobFinishFailed:
		id, skip := target(first(p.running), "RUNNING")
		return withRow(id, skip, "planguard", hist, id, p.runningAtt)
	case catalog.JobFinishRetry:
		id, skip := target(first(p.running), "RUNNING")
		return withRow(id, skip, micros, "planguard", hist, id, p.runningAtt)
	case catalog.JobFinishSnooze:
		id, skip := target(first(p.running), "RUNNING")
		return withRow(id, skip, micros, id, p.runningAtt)
	case catalog.JobReapSelect:
		return plain(now.Add(-time.Minute), 100)
	case catalog.JobReap:
		id, skip := target(first(p.running), "RUNNING")
		return withRow(id, skip, "planguard", hist, id, p.runningAtt, now.Add(-time.Minute))
	case catalog.JobRetry:
		id, skip := target(p.failedID, "FAILED")
		return withRow(id, skip, id)
	case catalog.JobPruneSelect:
		if p.queue == "" {
			return "", nil, "no PENDING job in the data", nil
		}
		return plain(p.queue, "DONE", micros, 1000)
	case catalog.JobPruneLock:
		// Two ids at least, whether they qualify or not (live and stale
		// alike): MariaDB reads a single primary-key value as a constant
		// first, and a row that does not qualify then leaves no plan to
		// check.
		var ids []int64
		for _, id := range []int64{p.failedID, p.staleID, p.pendingID} {
			if id != 0 && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		if len(ids) < 2 {
			return "", nil, "fewer than two jobs in the data", nil
		}
		return withIDs(ids, "", "FAILED", 0)
	case catalog.JobDeleteMany:
		ids, skip := list(p.liveIDs, "live")
		return withIDs(ids, skip)
	// The reads of the CLI and the dashboard, bound as their first page is.
	case catalog.JobPageFloor:
		return plain(int64(math.MaxInt64), pageWindow)
	case catalog.JobPage:
		return plain(int64(math.MaxInt64), 0, "", "", "", "", "", "", 0, 0, pageSearch, pageSearch, pageSearch, pageLimit)
	// The bulk actions: a window of the primary key as the first of a
	// scan reads it (a search and a finish time in it), the batch's refs,
	// and the batch's retry.
	case catalog.JobSearch:
		// A search the newest window did not fill, on through the text
		// index: the words' boolean-mode query (MySQL's MATCH; checked
		// not empty elsewhere), the window's floor, the page's filter.
		if !p.textIndex {
			return "", nil, "the optional text index is not created here ('lockstep migrate text-index up')", nil
		}
		return plain("+(planguard* PLANGUARD* Planguard*)", int64(math.MaxInt64), "", "", "", "", "", "", 0, 0, pageSearch, pageSearch, pageSearch, pageLimit)
	case catalog.JobIDBounds:
		return plain()
	case catalog.JobMatch, catalog.JobMatchCount:
		args := []any{int64(0), int64(matchWindow), "", "", "", "", "", "", 0, 0, pageSearch, pageSearch, pageSearch, 0, 0, 1, 0, 0, 1, now}
		if st.Name == catalog.JobMatch {
			args = append(args, matchLimit)
		}
		return plain(args...)
	case catalog.JobMatchCountStatus:
		// The preview of a retry: every FAILED job's entry, a search in
		// each.
		return plain(int64(0), int64(math.MaxInt64), "", "", "", "", "", "", 0, 0, pageSearch, pageSearch, pageSearch, 0, 0, 1, 0, 0, 1, now, "FAILED")
	case catalog.JobBulkRefs:
		ids, skip := list(p.liveIDs, "live")
		return withIDs(ids, skip)
	case catalog.JobRetryMany:
		// Two ids at least, as job.prune_lock binds them.
		var ids []int64
		for _, id := range []int64{p.failedID, p.staleID, p.pendingID} {
			if id != 0 && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		if len(ids) < 2 {
			return "", nil, "fewer than two jobs in the data", nil
		}
		return withIDs(ids, "")
	case catalog.JobPageFloorByRun:
		return needRun(p.runID, int64(math.MaxInt64), pageWindow)
	case catalog.JobPageByRun:
		return needRun(p.runID, int64(math.MaxInt64), 0, "", "", "", "", "", "", 0, 0, pageSearch, pageSearch, pageSearch, pageLimit)
	case catalog.RunList:
		return plain(int64(math.MaxInt64), pageLimit)
	case catalog.RunCountsBounded:
		return needRun(p.runID, countLimit)
	case catalog.QueueList:
		return plain(1000)
	case catalog.QueueCount, catalog.QueueFinished, catalog.QueueOldest:
		if p.queue == "" {
			return "", nil, "no PENDING job in the data", nil
		}
		switch st.Name {
		case catalog.QueueCount:
			return plain(p.queue, "DONE", countLimit)
		case catalog.QueueFinished:
			return plain(p.queue, "DONE", micros, countLimit)
		}
		return plain(p.queue, countLimit)
	// Workflows.
	case catalog.DepDependents, catalog.JobOutputsMany:
		ids, skip := list(p.depOn, "depended-on")
		return withIDs(ids, skip)
	case catalog.DepDependencies, catalog.DepDeleteMany:
		ids, skip := list(p.waiting, "WAITING")
		return withIDs(ids, skip)
	case catalog.JobLockFlow:
		ids, skip := list(p.waiting, "WAITING")
		return withIDs(ids, skip)
	case catalog.JobSetWaiting:
		id, skip := target(first(p.waiting), "WAITING")
		return withRow(id, skip, 1, id)
	case catalog.JobPromote:
		id, skip := target(first(p.waiting), "WAITING")
		return withRow(id, skip, nil, id)
	case catalog.JobCancelWaiting:
		id, skip := target(first(p.waiting), "WAITING")
		return withRow(id, skip, "planguard", nil, id)
	case catalog.JobRevive:
		id, skip := target(p.cancelled, "CANCELLED")
		return withRow(id, skip, "WAITING", 1, id)
	case catalog.RunLock, catalog.RunCertify:
		return needRun(p.runID)
	// Limits, bound as the limited claim (sqlexec/limits.go) and the
	// release (release.go) bind them, with keys the queue's jobs carry.
	case catalog.QueueLimits, catalog.QueueLockLimits, catalog.QueueDelete, catalog.QueueCertify:
		return needQueue(p.queue)
	case catalog.QueueOccupied, catalog.LimitCancelling:
		return needQueue(p.queue, micros)
	case catalog.JobClaimCandidates:
		return needQueue(p.queue, claimLimit)
	case catalog.JobClaimIDs:
		ids, skip := list(p.claimIDs, "PENDING")
		return withIDs(ids, skip, now, now, "planguard-1")
	case catalog.JobBlock:
		ids, skip := list(p.claimIDs, "PENDING")
		return withIDs(ids, skip, now)
	case catalog.JobDefer:
		ids, skip := list(p.claimIDs, "PENDING")
		return withIDs(ids, skip, now.Add(time.Minute))
	case catalog.JobUnblock:
		ids, skip := list(p.blockedIDs, "BLOCKED")
		return withIDs(ids, skip)
	case catalog.JobRelease:
		id, skip := target(p.cancelling, "cancelled-while-running")
		att := p.cancellingAtt
		if stale {
			att = 1
		}
		return withRow(id, skip, id, att)
	case catalog.LimitLockKeys, catalog.LimitKeys, catalog.LimitKeyRunning, catalog.LimitCertifyKeys:
		return withKeys(p.limitKeys, p.queue)
	case catalog.LimitBlockedIn:
		return withKeys(releaseKeys, p.queue)
	case catalog.LimitSequenceHead:
		return withKeys(p.limitKeys, p.queue, 1)
	case catalog.LimitLockKey:
		if p.blockedKey == "" {
			return "", nil, "no BLOCKED job in the data", nil
		}
		return plain(p.queue, p.blockedKey)
	case catalog.LimitBlockedIDs:
		if p.blockedKey == "" {
			return "", nil, "no BLOCKED job in the data", nil
		}
		return plain(p.queue, p.blockedKey, 1000)
	case catalog.LimitBlockedKeys:
		return needQueue(p.queue, time.Unix(0, 0).UTC(), 500)
	case catalog.RateWindow:
		// The queue's own window ('') and its keys'.
		return withKeys(append([]string{""}, p.limitKeys...), p.queue, now.Add(-time.Minute))
	case catalog.RatePrune:
		return withKeys(p.limitKeys, p.queue, now.Add(-time.Minute))
	// Processes: the process's own row by primary key, the small table
	// in id order, and a process's RUNNING jobs through the heartbeat
	// index, bound as sqlexec/processes.go binds them.
	case catalog.ProcessHeartbeat, catalog.ProcessDelete:
		return needProcess(p.processID)
	case catalog.ProcessPrune:
		return needProcess(p.processID, micros)
	case catalog.ProcessStale:
		return plain(micros, 100)
	case catalog.ProcessList:
		return plain(1000)
	case catalog.JobRunningByProcess:
		return needProcess(p.processID, 1000)
	// History, bound as the flush, the charts and retention bind them
	// (sqlexec/history.go): a minute of the loaded range, the last day,
	// and the rows older than a day.
	case catalog.HistoryAdd:
		b := now.Add(-time.Hour).Truncate(time.Minute)
		return needQueue(b, p.queue, "planguard", 1, 0, 0, 0, 10, 1, 0, 0, 0, 10)
	case catalog.HistoryRange:
		// Whole minutes, as the executor binds them (sqlexec/history.go):
		// MariaDB compares a DATETIME with a fractional time by a full scan.
		minute := now.Truncate(time.Minute)
		return needQueue(minute.Add(-24*time.Hour), minute.Add(time.Minute), p.queue, p.queue, "", "")
	case catalog.HistoryPruneBound:
		return plain(now.Truncate(time.Minute).Add(-24*time.Hour), 999)
	case catalog.HistoryPrune:
		return plain(now.Truncate(time.Minute).Add(-(historyMinutes - 60) * time.Minute))
	case catalog.JobNotify, catalog.JobListen:
		// pg_notify and LISTEN read no table; the guard skips statements
		// that declare no access path before binding them.
		return "", nil, "reads no table", nil
	}
	return "", nil, "", fmt.Errorf("the plan guard has no probe for %s: add one in lab/planguard/probe.go", st.Name)
}
