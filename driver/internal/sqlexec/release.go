package sqlexec

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// The release of BLOCKED jobs. A job with a key that leaves RUNNING (done,
// failed, retried, snoozed, reaped, cancelled) frees its slot in the same
// write: slots are counted from the jobs. What it must also do is make its
// key's BLOCKED jobs PENDING again, and that is a transaction of its own,
// after the write has committed: it locks the key's row (waiting: it holds
// nothing else) and then the jobs by primary key, the claim's order.
//
// Between a claim and a release nothing is lost: a claim that blocked a job
// while a job of its key was leaving RUNNING checks, after its own commit,
// whether the key has room, and releases it if so; the leaving job's
// release, after its commit, looks for BLOCKED jobs. Whichever commits last
// sees the other's write. LimitSweep is the net under both (a process that
// died between its commit and its release).

// leftKey is a queue and key one of whose jobs left RUNNING.
type leftKey struct{ queue, key string }

// afterLeave releases what the keys of jobs that left RUNNING hold back.
// Only on the executor's own pool: inside a caller's transaction the
// write has not committed yet, and LimitSweep finds those keys later.
func (e *Executor) afterLeave(ctx context.Context, left []leftKey) error {
	if e.pool == nil || len(left) == 0 {
		return nil
	}
	byQueue := map[string][]string{}
	for _, l := range left {
		if l.key != "" {
			byQueue[l.queue] = append(byQueue[l.queue], l.key)
		}
	}
	queues := make([]string, 0, len(byQueue))
	for q := range byQueue {
		queues = append(queues, q)
	}
	slices.Sort(queues)
	for _, queue := range queues {
		keys := byQueue[queue]
		slices.Sort(keys)
		keys = slices.Compact(keys)
		blocked, err := e.keyList(ctx, e.q, catalog.LimitBlockedIn, keys, queue)
		if err != nil {
			return e.wrap("release: find blocked jobs", err)
		}
		if len(blocked) == 0 {
			continue
		}
		lim, _, _, err := e.readLimits(ctx, e.q, queue, false)
		if err != nil {
			return e.wrap("release: read limits", err)
		}
		if _, err := e.releaseKeys(ctx, queue, lim, blocked, false); err != nil {
			return err
		}
	}
	return nil
}

// keyList runs a KeyList statement that returns one key per row.
func (e *Executor) keyList(ctx context.Context, q Querier, name catalog.Name, keys []string, args ...any) ([]string, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	sqlText, args := e.cat().BindKeys(e.cat().Get(name), keys, args...)
	rows, err := e.query(ctx, q, name, sqlText, args...)
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, k)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// releaseKeys makes PENDING the BLOCKED jobs each key has room for, one
// transaction per key (its row, then its jobs by primary key). With
// precheck, a key is first checked without locks and skipped when it has
// no room. It returns how many jobs it released. A release does not count
// the slots of jobs cancelled while running (their grace): it may release
// a job too many, which the next claim, counting them, blocks again.
func (e *Executor) releaseKeys(ctx context.Context, queue string, lim rowtype.QueueLimits, keys []string, precheck bool) (int, error) {
	total := 0
	for _, k := range keys {
		if precheck {
			room, err := e.room(ctx, e.q, queue, lim, k)
			if err != nil {
				return total, e.wrap("release: check room", err)
			}
			if room == 0 {
				continue
			}
		}
		var released int
		err := e.inTx(ctx, func(q Querier) error {
			released = 0
			st := e.cat().Get(catalog.LimitLockKey)
			rows, err := e.query(ctx, q, st.Name, st.SQL, queue, k)
			if err != nil {
				return err
			}
			found := rows.Next()
			if err := errors.Join(rows.Err(), rows.Close()); err != nil {
				return err
			}
			if !found {
				return nil // no claim ever blocked a job of it
			}
			if err := e.certifyKeys(ctx, q, queue, map[string]bool{k: true}); err != nil {
				return err
			}
			room, err := e.room(ctx, q, queue, lim, k)
			if err != nil || room == 0 {
				return err
			}
			ids, err := e.queryIDs(ctx, q, catalog.LimitBlockedIDs, e.cat().Get(catalog.LimitBlockedIDs).SQL, queue, k, room)
			if err != nil || len(ids) == 0 {
				return err
			}
			if lim.Sequence != rowtype.SequenceNone {
				// Only the sequence's first live job may go, and only if
				// it is BLOCKED (not PENDING already, nor a held FAILED).
				heads, err := e.keyCounts(ctx, q, catalog.LimitSequenceHead, []string{k}, queue, holdFailed(lim))
				if err != nil {
					return err
				}
				if int64(heads[k]) != ids[0] {
					return nil
				}
				ids = ids[:1]
			}
			n, err := e.execIDs(ctx, q, catalog.JobUnblock, sortedUnique(ids))
			if released = int(n); err != nil || n == 0 {
				return err
			}
			// Released jobs are work other processes' producers may be
			// idle for: wake them, as an enqueue does.
			if e.wake().dueQueue(queue) {
				return e.notify(ctx, q, []string{queue})
			}
			return nil
		})
		if err != nil {
			return total, e.wrap(fmt.Sprintf("release key %q of queue %q", k, queue), err)
		}
		total += released
	}
	return total, nil
}

// room is how many of a key's BLOCKED jobs may become PENDING: its limit
// less its RUNNING jobs, one for a sequence with none running, and all of
// them (up to a page) when the queue no longer limits its keys.
func (e *Executor) room(ctx context.Context, q Querier, queue string, lim rowtype.QueueLimits, k string) (int, error) {
	const page = 1000
	if lim.KeyConcurrency <= 0 && lim.Sequence == rowtype.SequenceNone {
		return page, nil
	}
	running, err := e.keyCounts(ctx, q, catalog.LimitKeyRunning, []string{k}, queue)
	if err != nil {
		return 0, err
	}
	room := page
	if lim.KeyConcurrency > 0 {
		room = lim.KeyConcurrency - running[k]
	}
	if lim.Sequence != rowtype.SequenceNone {
		room = min(room, 1-running[k])
	}
	return max(room, 0), nil
}

// createKeys gives the keys a claim met without a row one each, every row
// in a statement of its own outside any transaction: an insert that holds
// no other lock cannot close a cycle. Keys that have a row already (held
// by another claim at the time) are left alone.
func (e *Executor) createKeys(ctx context.Context, queue string, keys []string) error {
	have, err := e.keyList(ctx, e.q, catalog.LimitKeys, keys, queue)
	if err != nil {
		return err
	}
	st := e.cat().Get(catalog.LimitInsertKeys)
	for _, k := range keys {
		if _, ok := slices.BinarySearch(have, k); ok {
			continue
		}
		if _, err := e.exec(ctx, e.q, st.Name, st.SQL, queue, k); err != nil {
			return err
		}
	}
	return nil
}

// JobRelease implements driver.Executor.
func (e *Executor) JobRelease(ctx context.Context, ref driver.JobRef) error {
	st := e.cat().Get(catalog.JobRelease)
	res, err := e.exec(ctx, e.q, st.Name, st.SQL, ref.ID, ref.Attempt)
	if err != nil {
		return e.wrap(fmt.Sprintf("release job %d", ref.ID), err)
	}
	if res.RowsAffected == 1 {
		return e.afterLeave(ctx, []leftKey{{ref.Queue, ref.LimitKey}})
	}
	return nil
}

// LimitSweep implements driver.Executor: it pages through the queue's
// BLOCKED jobs in the order they were blocked and releases each key found.
func (e *Executor) LimitSweep(ctx context.Context, queue string) (int, error) {
	lim, _, _, err := e.readLimits(ctx, e.q, queue, false)
	if err != nil {
		return 0, e.wrap("sweep: read limits", err)
	}
	// A queue without a settings row (removed, or never limited) has no
	// limits: any BLOCKED job left there — blocked by a process whose
	// cached limits were older than the removal — is released.
	const page = 500
	st := e.cat().Get(catalog.LimitBlockedKeys)
	var from time.Time
	total := 0
	for pages := 0; pages < 20; pages++ {
		start := from
		if start.IsZero() {
			start = time.Unix(0, 0).UTC()
		}
		rows, err := e.query(ctx, e.q, st.Name, st.SQL, queue, e.timeArg(start), page)
		if err != nil {
			return total, e.wrap("sweep: blocked keys", err)
		}
		var keys []string
		n := 0
		last := from
		for rows.Next() {
			var k string
			if err := rows.Scan(&k, nullTime{&last}); err != nil {
				rows.Close()
				return total, e.wrap("sweep: blocked keys", err)
			}
			keys = append(keys, k)
			n++
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return total, e.wrap("sweep: blocked keys", err)
		}
		slices.Sort(keys)
		keys = slices.Compact(keys)
		released, err := e.releaseKeys(ctx, queue, lim, keys, true)
		total += released
		if err != nil {
			return total, err
		}
		if n < page || !last.After(from) {
			break
		}
		from = last
	}
	return total, nil
}
