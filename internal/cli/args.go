package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lockstep-queue/lockstep"
)

// The command-line values more than one command parses: job and run ids,
// job statuses, and the paging flags of listings. A command's own flags
// are checked in its file.

// allStatuses lists the job statuses in the order tables show them: a
// job's life from left to right, WAITING (for its dependencies) first,
// BLOCKED (held back by its queue's limits) between PENDING and RUNNING. A
// function, not a variable, so that no caller can reorder it for another.
func allStatuses() []lockstep.JobStatus {
	return []lockstep.JobStatus{
		lockstep.StatusWaiting, lockstep.StatusPending, lockstep.StatusBlocked, lockstep.StatusRunning,
		lockstep.StatusDone, lockstep.StatusFailed, lockstep.StatusCancelled,
	}
}

// statusNames is the statuses as help and error texts list them.
const statusNames = "WAITING, PENDING, BLOCKED, RUNNING, DONE, FAILED or CANCELLED"

// liveStatuses are the statuses of a job that has not ended: the ones a
// cancel moves to CANCELLED, and what keeps a run from being complete.
func liveStatuses() []lockstep.JobStatus {
	return []lockstep.JobStatus{lockstep.StatusWaiting, lockstep.StatusPending, lockstep.StatusBlocked, lockstep.StatusRunning}
}

// statusHeader is the statuses as the tab-separated headers of a table's
// count columns, in allStatuses order.
func statusHeader() string {
	names := make([]string, 0, len(allStatuses()))
	for _, st := range allStatuses() {
		names = append(names, string(st))
	}
	return strings.Join(names, "\t")
}

// parseIDArg parses a job or run id given on the command line.
func parseIDArg(what, s string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || id < 1 {
		return 0, fmt.Errorf("invalid %s id %q: want a positive integer", what, s)
	}
	return id, nil
}

// parseStatusFlag parses a job status, case-insensitively.
func parseStatusFlag(s string) (lockstep.JobStatus, error) {
	for _, st := range allStatuses() {
		if strings.EqualFold(s, string(st)) {
			return st, nil
		}
	}
	return "", fmt.Errorf("unknown job status %q: use %s", s, statusNames)
}

// The failed view, also called dead: the FAILED jobs, those with no
// attempt left (or failed permanently), which only a retry brings back. It
// is a status rather than a view of PENDING jobs, so it is read as
// --status FAILED.
const (
	viewFailed = "failed"
	viewDead   = "dead"
)

// viewNames is the views as help and error texts list them.
const viewNames = "scheduled, retrying or failed (also dead)"

// parseViewFlag reads --view with the status already given: a view of
// PENDING jobs (scheduled, retrying), or the failed view, returned as the
// FAILED status (refused beside another --status).
func parseViewFlag(view string, status lockstep.JobStatus) (lockstep.JobStatus, lockstep.JobView, error) {
	switch v := strings.ToLower(strings.TrimSpace(view)); v {
	case "", string(lockstep.ViewScheduled), string(lockstep.ViewRetrying):
		return status, lockstep.JobView(v), nil
	case viewFailed, viewDead:
		if status != "" && status != lockstep.StatusFailed {
			return "", "", fmt.Errorf("--view %s is the FAILED jobs (no attempt left); it cannot be combined with --status %s", v, status)
		}
		return lockstep.StatusFailed, "", nil
	default:
		return "", "", fmt.Errorf("unknown --view %q: use %s", view, viewNames)
	}
}

// checkListFlags checks a listing's paging flags before the database is
// opened.
func checkListFlags(before int64, limit, countLimit int) error {
	switch {
	case before < 0:
		return fmt.Errorf("--before must be a positive id, got %d", before)
	case limit < 1:
		return fmt.Errorf("--limit must be at least 1, got %d", limit)
	case countLimit < 1:
		return fmt.Errorf("--count-limit must be at least 1, got %d", countLimit)
	}
	return nil
}
