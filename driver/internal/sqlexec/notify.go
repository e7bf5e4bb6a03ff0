package sqlexec

import (
	"context"
	"sync"
	"time"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/catalog"
)

// Wake paces the wake-ups ("job.notify") of one driver: at most one per
// queue per Cooldown. A producer woken by the first job of a burst claims
// again as soon as it has claimed anything (and whenever a job finishes),
// so the jobs enqueued in the next few milliseconds need no wake-up of
// their own; what the pacing saves is the cost of NOTIFY itself, which
// PostgreSQL serialises at commit across the whole database. The window
// starts when a wake-up is decided on, whether or not its transaction
// commits: a rolled-back one leaves the queue's next jobs to the poll.
type Wake struct {
	Cooldown time.Duration

	mu   sync.Mutex
	last map[string]time.Time
}

// NewWake returns a Wake with the given cooldown (0: every batch notifies).
func NewWake(cooldown time.Duration) *Wake {
	return &Wake{Cooldown: cooldown, last: map[string]time.Time{}}
}

// due returns the distinct queues of jobs that are available now (not
// scheduled later) and have had no wake-up within the cooldown, and
// records them as woken.
func (w *Wake) due(jobs []driver.JobInsertParams) []string {
	if w == nil {
		return nil
	}
	now := time.Now()
	var out []string
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, j := range jobs {
		if !j.ScheduledAt.IsZero() && j.ScheduledAt.After(now) {
			continue
		}
		if w.allow(j.Queue, now) {
			out = append(out, j.Queue)
		}
	}
	return out
}

// allow records a wake-up of queue at now if it is due; w.mu is held.
func (w *Wake) allow(queue string, now time.Time) bool {
	if last, ok := w.last[queue]; ok && now.Sub(last) < w.Cooldown {
		return false
	}
	if len(w.last) >= 4096 {
		for q, t := range w.last { // forget queues not woken lately
			if now.Sub(t) >= w.Cooldown {
				delete(w.last, q)
			}
		}
	}
	w.last[queue] = now
	return true
}

// dueQueue is due for one job available now.
func (w *Wake) dueQueue(queue string) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.allow(queue, time.Now())
}

// wake returns the dialect's pacing when it can notify at all.
func (e *Executor) wake() *Wake {
	if e.d.Wake == nil || !e.caps().Notify {
		return nil
	}
	return e.d.Wake
}

// notify wakes the listeners of queues; it runs inside the transaction that
// makes their jobs available, so the wake-up is delivered on commit only.
func (e *Executor) notify(ctx context.Context, q Querier, queues []string) error {
	if len(queues) == 0 {
		return nil
	}
	st := e.cat().Get(catalog.JobNotify)
	_, err := e.exec(ctx, q, st.Name, st.SQL, queues)
	return err
}
