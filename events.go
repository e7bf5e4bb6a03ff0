package lockstep

import (
	"errors"
	"time"

	"github.com/lockstep-queue/lockstep/rowtype"
)

// EventKind names what happened in a client.
type EventKind string

// The events a client reports to Config.OnEvent.
const (
	// EventEnqueued: one job inserted (Queue, JobKind).
	EventEnqueued EventKind = "enqueued"
	// EventClaimed: one claim statement took Count jobs of Queue in Took
	// (Count may be 0).
	EventClaimed EventKind = "claimed"
	// EventJobStarted: a claimed job starts (Queue, JobKind); Wait is how
	// long it was available before its claim, by the database's clock.
	EventJobStarted EventKind = "job_started"
	// EventJobFinished: a job's result was written or discarded (Queue,
	// JobKind, Status: DONE, FAILED, or PENDING with Retry or Snoozed set).
	// Took is the finish statement's latency, Ran the worker's run time;
	// Discarded is true when the fence found the job cancelled or reclaimed.
	EventJobFinished EventKind = "job_finished"
	// EventReaped: the reaper returned one job (Status PENDING or FAILED).
	EventReaped EventKind = "reaped"
	// EventCancelled: Count jobs were cancelled by a CancelRun or CancelJob.
	EventCancelled EventKind = "cancelled"
	// EventDBRetry: a unit of work (Op) is retried after a retryable
	// database error with code Code.
	EventDBRetry EventKind = "db_retry"
	// EventQueuePaused and EventQueueResumed: this client saw a queue it
	// serves paused or resumed (by any process).
	EventQueuePaused  EventKind = "queue_paused"
	EventQueueResumed EventKind = "queue_resumed"
	// EventQueueMaxWorkers: a served queue's worker limit in this process
	// changed to Count.
	EventQueueMaxWorkers EventKind = "queue_max_workers"
	// EventPromoted: a job's end made Count of its dependents PENDING
	// (callbacks included).
	EventPromoted EventKind = "promoted"
	// EventCallback: a job's end fired Count of its run's callbacks
	// (Queue and JobKind are the ending job's).
	EventCallback EventKind = "callback"
	// EventPeriodicDuplicate: a periodic job's tick was already enqueued
	// (by another process, or before a restart); nothing was inserted.
	EventPeriodicDuplicate EventKind = "periodic_duplicate"
	// EventLimited: a claim of a limited Queue made Count jobs BLOCKED
	// (their key at its limit, or their sequence busy), and moved the
	// available_at of Deferred other jobs (their key's rate window full).
	EventLimited EventKind = "limited"
)

// Event is one thing a client did, for metrics and tracing. Fields that do
// not apply to a kind are zero.
type Event struct {
	Kind      EventKind
	Queue     string
	JobKind   string
	Status    JobStatus
	Count     int
	Took      time.Duration
	Wait      time.Duration
	Ran       time.Duration
	Retry     bool
	Snoozed   bool
	Discarded bool
	Deferred  int
	Op        string
	Code      string
	ErrorKind ErrorKind
}

// emit reports an event when OnEvent is set.
func (c *Client) emit(e Event) {
	if c.cfg.OnEvent != nil {
		c.cfg.OnEvent(e)
	}
}

// dbRetryEvent describes a retried database error by its code.
func dbRetryEvent(op string, err error) Event {
	e := Event{Kind: EventDBRetry, Op: op, ErrorKind: rowtype.KindOf(err)}
	var dbe *DBError
	if errors.As(err, &dbe) {
		e.Code = dbe.Code
	}
	return e
}
