package rowtype

import (
	"fmt"
	"time"
)

// BulkAction is what a bulk operation does to each job it selects.
type BulkAction string

// The bulk actions. Each applies to jobs in some statuses only and leaves
// the others as they are (counted as skipped), re-checked as each batch
// is written: a job that moved on since it was selected is not touched.
const (
	// BulkRetry puts FAILED jobs back to PENDING, as RetryJob does.
	BulkRetry BulkAction = "retry"
	// BulkCancel cancels WAITING, PENDING, BLOCKED and RUNNING jobs, as
	// CancelJob does.
	BulkCancel BulkAction = "cancel"
	// BulkDelete deletes DONE, FAILED and CANCELLED jobs (not one
	// cancelled while its worker still runs it), as retention does.
	BulkDelete BulkAction = "delete"
)

// BulkActions are the actions, in the order they are offered.
var BulkActions = []BulkAction{BulkRetry, BulkCancel, BulkDelete}

// ParseBulkAction reads an action's name.
func ParseBulkAction(s string) (BulkAction, error) {
	for _, a := range BulkActions {
		if string(a) == s {
			return a, nil
		}
	}
	return "", fmt.Errorf("unknown bulk action %q: use retry, cancel or delete", s)
}

// Statuses are the statuses a job must be in for the action to apply.
func (a BulkAction) Statuses() []JobStatus {
	switch a {
	case BulkRetry:
		return []JobStatus{StatusFailed}
	case BulkCancel:
		return []JobStatus{StatusWaiting, StatusPending, StatusBlocked, StatusRunning}
	case BulkDelete:
		return []JobStatus{StatusDone, StatusFailed, StatusCancelled}
	}
	return nil
}

// Past is the action's past tense, as results say it: "retried",
// "cancelled", "deleted".
func (a BulkAction) Past() string {
	switch a {
	case BulkRetry:
		return "retried"
	case BulkCancel:
		return "cancelled"
	case BulkDelete:
		return "deleted"
	}
	return string(a)
}

// Applies reports whether the action applies to a job in status s.
func (a BulkAction) Applies(s JobStatus) bool {
	for _, st := range a.Statuses() {
		if st == s {
			return true
		}
	}
	return false
}

// JobFilter selects jobs as the jobs list does, plus a run and a time.
type JobFilter struct {
	RunID  int64
	Status JobStatus
	Queue  string
	Kind   string
	View   JobView
	// Search: as JobPageParams.Search.
	Search string
	// FinishedAfter keeps jobs that finished at or after it (zero: any).
	FinishedAfter time.Time
}

// JobMatchParams reads one window of a bulk scan: the ids in
// (AfterID, AfterID+Window] that match Filter and the action's statuses,
// ascending, at most Limit of them.
type JobMatchParams struct {
	Action  BulkAction
	Filter  JobFilter
	AfterID int64
	Window  int // default 100,000
	Limit   int // default 500
	// ByStatus, for a count: the matches in this one status, read through
	// the status-led index over every id (AfterID and Window unread).
	ByStatus JobStatus
}

// JobMatch is one window of a bulk scan.
type JobMatch struct {
	IDs []int64
	// Next is the AfterID of the next window: the last id returned when
	// the limit cut the window short, else the window's end.
	Next int64
}

// BulkResult is what a bulk operation, or one batch of it, did.
type BulkResult struct {
	// Matched jobs were selected; Changed were retried, cancelled or
	// deleted; Skipped had moved on (or belonged to a cancelled run).
	Matched, Changed, Skipped int
	// Batches is how many batches were written.
	Batches int
}

// Add sums two results.
func (r *BulkResult) Add(o BulkResult) {
	r.Matched += o.Matched
	r.Changed += o.Changed
	r.Skipped += o.Skipped
	r.Batches += o.Batches
}
