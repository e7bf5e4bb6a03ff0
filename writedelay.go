package lockstep

import (
	"sync"
	"time"
)

// writeDelays watches this process's own heartbeat writes (the jobs' and
// the process row's, one every HeartbeatInterval each), so that the reaper
// never reaps while the database has been keeping writers waiting.
//
// A job's heartbeat can only be as fresh as the database lets it be
// written. When every writer waits — SQLite's single write lock held by a
// long transaction, a lock or a stall on a server — the live jobs'
// heartbeats age with nobody dead, and the reaper, whose reads do not
// wait (SQLite's WAL, MVCC), would see them stale; its UPDATE would then
// wait for the same lock and, once it is free, could win it before the
// heartbeat and reap a live job. This process's heartbeats wait in that
// jam too: while one has been waiting longer than half a heartbeat
// interval, or one finished that late within the last ReapAfter, the
// reaper passes its turn, and for two heartbeat intervals and a second
// after such a wait ended (the other processes' heartbeats, retried with
// backoff, catch up then). The reap itself measures staleness against the
// database's clock as it begins, not at the end of its UPDATE's wait
// (sqlexec's JobReap). Together: a live job is not reaped while this
// process's own writes were kept waiting, however long the wait.
//
// The wait that counts is half of what the configuration leaves between a
// heartbeat and the reap limit, (ReapAfter − 2×HeartbeatInterval)/2: a
// heartbeat write that took longer could make a live job look dead.
type writeDelays struct {
	// tolerance is the wait that counts as a delay.
	tolerance time.Duration
	// memory is how long a finished delay holds the reaper back.
	memory time.Duration

	mu       sync.Mutex
	inFlight map[uint64]time.Time
	next     uint64
	lastLate time.Time // when the latest write that finished late finished
	lastWait time.Duration
}

func newWriteDelays(heartbeat, reapAfter time.Duration) *writeDelays {
	return &writeDelays{
		tolerance: (reapAfter - 2*heartbeat) / 2,
		memory:    min(2*heartbeat+time.Second, reapAfter),
		inFlight:  map[uint64]time.Time{},
	}
}

// start marks a write as begun; the returned func marks it finished.
func (w *writeDelays) start() (finish func()) {
	w.mu.Lock()
	id := w.next
	w.next++
	began := time.Now()
	w.inFlight[id] = began
	w.mu.Unlock()
	return func() {
		end := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.inFlight, id)
		if took := end.Sub(began); took > w.tolerance {
			w.lastLate, w.lastWait = end, took
		}
	}
}

// delayed reports whether the reaper must pass its turn at now, and the
// delay that holds it back (a write still waiting, or the latest late one).
func (w *writeDelays) delayed(now time.Time) (bool, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var longest time.Duration
	for _, began := range w.inFlight {
		longest = max(longest, now.Sub(began))
	}
	if longest > w.tolerance {
		return true, longest
	}
	if !w.lastLate.IsZero() && now.Sub(w.lastLate) < w.memory {
		return true, w.lastWait
	}
	return false, 0
}
