package driver

import "context"

// Notifier is implemented by drivers whose database can wake other
// processes when jobs become available: PostgreSQL's LISTEN/NOTIFY. It is
// optional; a client whose driver implements it listens (unless
// Config.DisableNotify is set) and wakes the producer of the queue named by
// each wake-up, so that a job enqueued by another process starts at once
// instead of at that queue's next poll.
//
// The sending side is the driver's Executor: on such a driver, every
// statement that makes jobs available now (an insert, an insert into a run,
// a retry of a FAILED job) also issues the catalogue's "job.notify" for the
// jobs' distinct queues, in the same transaction — the executor's own short
// one on a pool, the caller's inside InsertTx — so that a wake-up is
// delivered if and only if the jobs are committed.
//
// Wake-ups only shorten the wait: a client never depends on them. Polling
// goes on while the listener is connected, and while it is not.
type Notifier interface {
	// Listen opens a connection of its own, outside the pool, subscribed to
	// the driver's wake-up channel. ctx bounds connecting only.
	Listen(ctx context.Context) (Listener, error)
}

// Listener is one subscription made by Notifier.Listen. It is used by one
// goroutine at a time.
type Listener interface {
	// Wait blocks until a wake-up arrives and returns the queue it names.
	// It returns ctx's error when ctx ends; any other error means the
	// connection is lost (or unusable): Close it and Listen again.
	Wait(ctx context.Context) (queue string, err error)
	// Close ends the subscription and closes its connection.
	Close(ctx context.Context) error
}
