package lockstep

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockstep-queue/lockstep/rowtype"
)

// Types shared with drivers.
type (
	// JobRow is a job as stored.
	JobRow = rowtype.JobRow
	// Run is a run as stored.
	Run = rowtype.RunRow
	// RunCounts counts a run's jobs by status.
	RunCounts = rowtype.RunCounts
	// RunStatus is a run's stored status: ACTIVE or CANCELLED.
	RunStatus = rowtype.RunStatus
	// RunState is what a run is for people: ACTIVE, DONE, FAILED or
	// CANCELLED (see RunStateOf).
	RunState = rowtype.RunState
	// JobStatus is a job's state.
	JobStatus = rowtype.JobStatus
	// AttemptError is one entry of a job's error history.
	AttemptError = rowtype.AttemptError
	// ErrorKind classifies a database error by code.
	ErrorKind = rowtype.ErrorKind
	// DBError is a database error with its kind and code.
	DBError = rowtype.DBError
)

// Job statuses.
const (
	StatusWaiting   = rowtype.StatusWaiting
	StatusPending   = rowtype.StatusPending
	StatusBlocked   = rowtype.StatusBlocked
	StatusRunning   = rowtype.StatusRunning
	StatusDone      = rowtype.StatusDone
	StatusFailed    = rowtype.StatusFailed
	StatusCancelled = rowtype.StatusCancelled
)

// Error kinds.
const (
	ErrorOther         = rowtype.ErrorOther
	ErrorDeadlock      = rowtype.ErrorDeadlock
	ErrorSerialization = rowtype.ErrorSerialization
	ErrorLockTimeout   = rowtype.ErrorLockTimeout
	ErrorBusy          = rowtype.ErrorBusy
	ErrorConnection    = rowtype.ErrorConnection
	ErrorDuplicate     = rowtype.ErrorDuplicate
	ErrorUnavailable   = rowtype.ErrorUnavailable
)

var (
	// ErrRunCancelled: jobs cannot be enqueued into a cancelled run.
	ErrRunCancelled = rowtype.ErrRunCancelled
	// ErrRunFinished: CancelRun refuses a run whose jobs have all ended;
	// its status stays what its jobs say (DONE or FAILED).
	ErrRunFinished = rowtype.ErrRunFinished
	// ErrRunClosed: a run created with callbacks takes no more jobs.
	ErrRunClosed = rowtype.ErrRunClosed
	// ErrNotFound: no job or run with that id.
	ErrNotFound = rowtype.ErrNotFound
	// ErrJobLost is the cause of a running job's context when the job was
	// cancelled or reclaimed elsewhere; its result will not be written.
	ErrJobLost = errors.New("job was cancelled or reclaimed; its result will be discarded")
	// ErrClientStopping is the cause of a running job's context when the
	// client is stopping without waiting for it.
	ErrClientStopping = errors.New("client is stopping")
	// ErrNestedRetryTx: RetryTx retries whole transactions it owns and so
	// refuses to run inside another one.
	ErrNestedRetryTx = errors.New("RetryTx called inside a RetryTx transaction: a transaction can only be retried whole, by its owner")
	// ErrSchemaVersion: Start found the schema at a migration other than
	// the one this binary needs.
	ErrSchemaVersion = errors.New("schema version mismatch")
	// ErrUnknownKind: no worker is registered for the job's kind in the
	// process that claimed it. The job is retried with backoff, not
	// failed: during a rolling deploy another process (or this one's next
	// version) may have the worker.
	ErrUnknownKind = errors.New("no worker registered for kind")
)

// ErrorKindOf reports the kind of a classified database error in err.
func ErrorKindOf(err error) ErrorKind { return rowtype.KindOf(err) }

// SnoozeError puts a job back to PENDING for Duration without consuming an
// attempt: a job held back by an external limit (a rate limit, a busy
// partner) waits in available_at instead of being taken and put back.
type SnoozeError struct{ Duration time.Duration }

func (e *SnoozeError) Error() string { return fmt.Sprintf("snoozed for %s", e.Duration) }

// Snooze returns an error that, returned from Work, snoozes the job.
func Snooze(d time.Duration) error { return &SnoozeError{Duration: max(d, 0)} }

// PermanentError fails a job at once, without further attempts.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err so that, returned from Work, the job fails at once.
func Permanent(err error) error { return &PermanentError{Err: err} }

// PanicError is a panic recovered from a worker.
type PanicError struct {
	Value any
	Stack string
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v\n%s", e.Value, e.Stack) }
