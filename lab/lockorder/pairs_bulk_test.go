package lockorder_test

import (
	"context"
	"fmt"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// The bulk actions' batches, as the client writes them: a retry of run
// 1's FAILED job 2 and of 2995 (which its dependent waits on: the
// single-job path); a cancel of a PENDING job of run 1 and the RUNNING job
// of run 6; a delete of job 2 and of job 3 (DONE); a cancel of the limited
// queue's PENDING jobs of keys a and d, which releases them after its
// commit (a pool op: two transactions).
func bulkOp(action rowtype.BulkAction, ids ...int64) op {
	return op{name: fmt.Sprintf("bulk %s %v", action, ids), run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobBulk(ctx, action, ids)
		return err
	}}
}

const doneInRun = int64(3) // DONE, in run 1

var (
	bulkRetry       = bulkOp(rowtype.BulkRetry, failedInRun, flowFailed)
	bulkCancel      = bulkOp(rowtype.BulkCancel, pendingA, running)
	bulkDelete      = bulkOp(rowtype.BulkDelete, failedInRun, doneInRun)
	bulkCancelKeyed = op{name: "bulk cancel 7102 7109 (keys a, d) + release", run: func(ctx context.Context, ex driver.Executor) error {
		_, err := ex.JobBulk(ctx, rowtype.BulkCancel, []int64{limPendingA, limBlockedD + 1}) // 7109: PENDING, key d
		return err
	}, pool: true}
)

// bulkPairs: each batch against every writer of the rows it touches, in
// both orders. A retry takes run rows (shared, ascending) before jobs, as
// the single retry does; a cancel takes jobs by primary key ascending, as
// a run's cancel does after its run row; a delete is retention's.
func bulkPairs() []pair {
	out := []pair{
		// Retry: against the run's cancel, the single retry, retention,
		// a bulk delete of the same job, a finish of the dependency's
		// run, and itself.
		{a: bulkRetry, b: cancelRunOfPending, bWaits: true, checkEnd: finalIs(failedInRun, rowtype.StatusCancelled)},
		{a: cancelRunOfPending, b: bulkRetry, bWaits: true, checkEnd: finalIs(failedInRun, rowtype.StatusFailed)},
		{a: bulkRetry, b: retryFailed, bWaits: true, checkEnd: finalIs(failedInRun, rowtype.StatusPending)},
		{a: retryFailed, b: bulkRetry, bWaits: true, checkEnd: finalIs(failedInRun, rowtype.StatusPending)},
		{a: bulkRetry, b: pruneFailed, bWaits: true, checkEnd: finalIs(failedInRun, rowtype.StatusPending)},
		{a: pruneFailed, b: bulkRetry, bWaits: true, checkEnd: deleted(failedInRun)},
		{a: bulkRetry, b: bulkDelete, bWaits: true, checkEnd: finalIs(failedInRun, rowtype.StatusPending)},
		{a: bulkDelete, b: bulkRetry, bWaits: true, checkEnd: deleted(failedInRun)},
		{a: bulkRetry, b: bulkRetry, bWaits: true, checkEnd: finalIs(flowBlocked, rowtype.StatusWaiting)},
		{a: bulkRetry, b: cancelRunOfFlow, bWaits: true, checkEnd: runSettled(runOfFlow)},
		{a: cancelRunOfFlow, b: bulkRetry, bWaits: true, checkEnd: finalIs(flowFailed, rowtype.StatusFailed)},
		{a: bulkRetry, b: finishFlow(flowRunA, rowtype.StatusDone), bWaits: true},
		{a: finishFlow(flowRunA, rowtype.StatusDone), b: bulkRetry, bWaits: true, checkEnd: finalIs(flowBlocked, rowtype.StatusWaiting)},
		{a: bulkRetry, b: claim, bWaits: false},
		// Cancel: against the claim, the run's cancel, the single cancel,
		// the running job's finish, heartbeat and reap, and itself.
		{a: bulkCancel, b: claim, bWaits: false, checkEnd: finalIs(pendingA, rowtype.StatusCancelled)},
		{a: claim, b: bulkCancel, bWaits: true, checkEnd: finalIs(pendingA, rowtype.StatusCancelled)},
		{a: bulkCancel, b: cancelRunOfPending, bWaits: true, checkEnd: runSettled(runOfPending)},
		{a: cancelRunOfPending, b: bulkCancel, bWaits: true, checkEnd: finalIs(running, rowtype.StatusCancelled)},
		{a: bulkCancel, b: cancelRunOfRunning, bWaits: true, checkEnd: runSettled(runOfRunning)},
		{a: cancelRunOfRunning, b: bulkCancel, bWaits: true, checkEnd: finalIs(pendingA, rowtype.StatusCancelled)},
		{a: bulkCancel, b: cancelJobPending, bWaits: true, checkEnd: finalIs(pendingA, rowtype.StatusCancelled)},
		{a: cancelJobRunning, b: bulkCancel, bWaits: true, checkEnd: finalIs(running, rowtype.StatusCancelled)},
		{a: bulkCancel, b: finish(rowtype.StatusDone, false), bWaits: true, checkEnd: finalIs(running, rowtype.StatusCancelled)},
		{a: finish(rowtype.StatusDone, false), b: bulkCancel, bWaits: true, checkEnd: finalIs(running, rowtype.StatusDone)},
		{a: bulkCancel, b: completeMany, bWaits: true, checkEnd: finalIs(running, rowtype.StatusCancelled)},
		{a: completeMany, b: bulkCancel, bWaits: true, checkEnd: finalIs(running, rowtype.StatusDone)},
		{a: bulkCancel, b: heartbeat, bWaits: true},
		{a: heartbeat, b: bulkCancel, bWaits: true, checkEnd: finalIs(running, rowtype.StatusCancelled)},
		{a: bulkCancel, b: reap, bWaits: true, checkEnd: finalIs(running, rowtype.StatusCancelled)},
		{a: reap, b: bulkCancel, bWaits: true, checkEnd: finalIs(running, rowtype.StatusCancelled)},
		{a: bulkCancel, b: bulkCancel, bWaits: true, checkEnd: finalIs(pendingA, rowtype.StatusCancelled)},
		// Delete: against the single retry, retention and itself.
		{a: bulkDelete, b: retryFailed, bWaits: true, checkEnd: deleted(failedInRun)},
		{a: retryFailed, b: bulkDelete, bWaits: true, checkEnd: finalIs(failedInRun, rowtype.StatusPending)},
		{a: bulkDelete, b: pruneFailed, bWaits: true, checkEnd: deleted(failedInRun)},
		{a: pruneFailed, b: bulkDelete, bWaits: true, checkEnd: deleted(doneInRun)},
		{a: bulkDelete, b: bulkDelete, bWaits: true, checkEnd: deleted(doneInRun)},
		{a: bulkDelete, b: cancelRunOfPending, bWaits: false, checkEnd: deleted(failedInRun)},
		// A keyed cancel and its release against the limited claim.
		{a: limitedClaim, b: bulkCancelKeyed, bWaits: true, always: limitsHold, checkEnd: finalIs(limPendingA, rowtype.StatusCancelled)},
		{a: bulkCancelKeyed, b: limitedClaim, bWaits: false, always: limitsHold, checkEnd: finalIs(limPendingA, rowtype.StatusCancelled)},
	}
	return out
}
