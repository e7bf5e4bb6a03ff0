package soak

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is what a soak did and found. Counts of statuses and changes come
// from the database (final rows and the audit), executions from the soak's
// memory.
type Result struct {
	Dialect string `json:"dialect"`
	Server  string `json:"server"`
	// SessionIsolation is the pools' session default as the server reports
	// it; Isolation is what the queue's own transactions were seen to do:
	// READ COMMITTED (a second read sees a row committed since the first),
	// REPEATABLE READ (it does not), or SERIALIZABLE (SQLite).
	SessionIsolation string `json:"session_isolation"`
	Isolation        string `json:"isolation"`
	Seed             uint64 `json:"seed"`
	Pools            int    `json:"pools"`
	Workers          int    `json:"workers_per_queue"`
	Queues           int    `json:"queues"`

	Load  time.Duration `json:"-"`
	Drain time.Duration `json:"-"`

	RunsCreated   int `json:"runs_created"`
	RunsCancelled int `json:"runs_cancelled"`
	// RunCancelsRefused counts cancels refused because the run had
	// finished (every job ended): rolled back, the run left as it was.
	RunCancelsRefused int `json:"run_cancels_refused_finished"`
	// SettingsRemovals counts plain queues' settings rows removed under
	// the load (after a max-workers cap was set on them).
	SettingsRemovals int `json:"settings_removals"`
	// BulkBatches counts bulk actions' batches written under the load
	// (cancels and retries), BulkPreviews the previews counted.
	BulkBatches  int `json:"bulk_batches"`
	BulkPreviews int `json:"bulk_previews"`
	// Searches counts the job searches made under the load (each result
	// checked to hold the text), SearchesIndexed those that went on
	// through the optional text index (Config.TextIndex).
	Searches        int `json:"searches"`
	SearchesIndexed int `json:"searches_indexed"`
	// Processes counts the process ids the pools' clients registered (one
	// per Start); ClaimsNamed the executions whose claimed_by named the
	// executing pool's process.
	Processes   int `json:"processes_registered"`
	ClaimsNamed int `json:"claims_naming_their_process"`
	// ClaimsAfterKey counts the dead worker's claims that started after
	// the last key its previous claim of the queue took (the saturated
	// queue's claim); the pools' producers make them too, uncounted.
	ClaimsAfterKey int `json:"claims_after_a_key"`
	// HistoryDone is the done count of the history rollup after the drain,
	// checked per queue against what the pools reported.
	HistoryDone    int64 `json:"history_done"`
	JobsEnqueued   int   `json:"jobs_enqueued"`
	EnqueueRefused int   `json:"enqueues_refused_run_cancelled"`

	Done      int `json:"done"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`

	Executions          int     `json:"executions"`
	ExecutionsPerSecond float64 `json:"executions_per_second"`
	Claims              int     `json:"claims"`
	Retries             int     `json:"retries"`
	Snoozes             int     `json:"snoozes"`
	Reaps               int     `json:"reaps"`
	ReapsToFailed       int     `json:"reaps_to_failed"`
	// LiveReaps are reaps of attempts a live worker held: its heartbeats
	// stopped reaching the database for ReapAfter. Allowed (the job is run
	// again), but a sign of a stalled pool.
	LiveReaps            int `json:"live_reaps"`
	JobCancelsRequested  int `json:"job_cancels_requested"`
	JobCancelsApplied    int `json:"job_cancels_applied"`
	CancelledRunning     int `json:"cancelled_while_running"`
	DeadClaims           int `json:"dead_worker_claims"`
	StaleFinishes        int `json:"stale_finishes"`
	StaleFinishesRefused int `json:"stale_finishes_refused"`

	// Workflows: runs created with dependencies or callbacks, and their
	// steps (callbacks not counted).
	Workflows             int `json:"workflows"`
	WorkflowJobs          int `json:"workflow_jobs"`
	WorkflowRunsCancelled int `json:"workflow_runs_cancelled"`
	// Promotions: WAITING → PENDING in the audit, callbacks included;
	// PromotionEvents and CallbackEvents: what the clients reported
	// (EventPromoted, EventCallback) for the ends they wrote.
	Promotions      int `json:"promotions"`
	PromotionEvents int `json:"promotion_events"`
	CallbackEvents  int `json:"callback_events"`
	// CallbackJobs: the runs' callbacks; CallbacksFired: those that became
	// PENDING.
	CallbackJobs   int `json:"callback_jobs"`
	CallbacksFired int `json:"callbacks_fired"`
	// CancelledByDependency: steps the soak did not cancel that ended
	// CANCELLED because a dependency failed or was cancelled.
	CancelledByDependency int `json:"cancelled_by_dependency"`
	// WorkflowRetries: RetryJob of a FAILED step applied; Revivals:
	// cancelled jobs such retries brought back; WorkflowRetriesRefused:
	// retries refused because the run was cancelled.
	WorkflowRetries        int `json:"workflow_retries"`
	WorkflowRetriesRefused int `json:"workflow_retries_refused"`
	Revivals               int `json:"revivals"`
	// RunClosedRefusals: jobs added to a run with callbacks, refused.
	RunClosedRefusals int `json:"run_closed_refusals"`

	// Limits: Blocks, Unblocks and BlockedCancelled are the audited
	// PENDING → BLOCKED, BLOCKED → PENDING and BLOCKED → CANCELLED in every
	// queue; LimitBlockedEvents and LimitDeferred what the clients'
	// EventLimited reported (jobs blocked, jobs deferred by a rate limit).
	Blocks             int `json:"blocks"`
	Unblocks           int `json:"unblocks"`
	BlockedCancelled   int `json:"blocked_cancelled"`
	LimitBlockedEvents int `json:"limit_blocked_events"`
	LimitDeferred      int `json:"limit_deferred"`
	// LimitSamples: the sampler's readings of the limited queues' RUNNING
	// jobs (every 100 ms, load and drain); LimitViolations: readings above
	// a limit (each one is a problem too); LimitSampleErrors: readings that
	// failed (retried errors).
	LimitSamples      int `json:"limit_samples"`
	LimitViolations   int `json:"limit_violations"`
	LimitSampleErrors int `json:"limit_sample_errors"`
	// Limited is what each limited queue saw.
	Limited []LimitedQueue `json:"limited_queues"`

	RetriedErrors []RetriedError `json:"retried_errors"`
	// Deadlocks is the server's count during the soak; nil where the
	// database has none (SQLite).
	Deadlocks       *int64 `json:"deadlocks"`
	DeadlockCounter string `json:"deadlock_counter"`

	Lost           int      `json:"lost"`
	DoubleFinished int      `json:"double_finished"`
	AuditRows      int      `json:"audit_rows"`
	Problems       []string `json:"problems"`
	ProblemCount   int      `json:"problem_count"`
	Notes          []string `json:"notes,omitempty"`
}

// RetriedError counts the units of work retried after one database error
// code in one operation.
type RetriedError struct {
	Code  string `json:"code"`
	Kind  string `json:"kind"`
	Op    string `json:"op"`
	Count int    `json:"count"`
}

// MarshalJSON writes the durations in seconds.
func (r *Result) MarshalJSON() ([]byte, error) {
	type plain Result
	return json.Marshal(struct {
		*plain
		LoadSeconds  float64 `json:"load_seconds"`
		DrainSeconds float64 `json:"drain_seconds"`
	}{(*plain)(r), r.Load.Seconds(), r.Drain.Seconds()})
}

// Unexercised names what the soak was meant to exercise and did not: a
// soak that reaped, retried or cancelled nothing proves little.
func (r *Result) Unexercised() []string {
	var out []string
	for _, c := range []struct {
		n    int
		what string
	}{
		{r.Done, "jobs done"}, {r.Retries, "retries"}, {r.Snoozes, "snoozes"}, {r.Reaps, "reaps"},
		{r.RunsCancelled, "run cancels"}, {r.JobCancelsApplied, "job cancels"}, {r.CancelledRunning, "cancels of running jobs"},
		{r.StaleFinishesRefused, "refused stale finishes"}, {r.EnqueueRefused, "enqueues refused by a cancelled run"},
		{r.Promotions, "workflow promotions"}, {r.CallbacksFired, "callbacks fired"}, {r.CancelledByDependency, "cancels by a failed dependency"},
		{r.WorkflowRetries, "retries of failed workflow steps"}, {r.Revivals, "revivals"}, {r.RunClosedRefusals, "jobs refused by a run with callbacks"},
		{r.LimitSamples, "limit samples"}, {r.Blocks, "jobs blocked by a limit"}, {r.Unblocks, "blocked jobs released"},
		{r.LimitDeferred, "starts deferred by a rate limit"},
	} {
		if c.n == 0 {
			out = append(out, c.what)
		}
	}
	return out
}

// Table renders the result for people.
func (r *Result) Table() string {
	var b strings.Builder
	_ = r.WriteTable(&b)
	return b.String()
}

// WriteTable writes the result as an aligned table.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name, format string, args ...any) {
		fmt.Fprintf(tw, "  %s\t"+format+"\n", append([]any{name}, args...)...)
	}
	fmt.Fprintf(tw, "lockstep soak: %s %s, isolation %s (sessions %s), seed %d\n", r.Dialect, r.Server, r.Isolation, r.SessionIsolation, r.Seed)
	row("duration", "%s load + %s drain", r.Load.Round(100*time.Millisecond), r.Drain.Round(100*time.Millisecond))
	row("pools", "%d × %d workers on each of %d queues", r.Pools, r.Workers, r.Queues)
	row("runs", "%d created, %d cancelled (%d more cancels refused: run finished)", r.RunsCreated, r.RunsCancelled, r.RunCancelsRefused)
	row("queue settings", "%d max-workers caps removed (queue.delete)", r.SettingsRemovals)
	row("bulk actions", "%d batches written, %d previews counted", r.BulkBatches, r.BulkPreviews)
	row("searches", "%d, %d of them on through the text index", r.Searches, r.SearchesIndexed)
	row("jobs enqueued", "%d (%d more refused: run cancelled)", r.JobsEnqueued, r.EnqueueRefused)
	row("jobs finished", "%d DONE, %d FAILED, %d CANCELLED", r.Done, r.Failed, r.Cancelled)
	row("history", "%d done in the rollup, as the pools reported per queue", r.HistoryDone)
	row("executions", "%d (%.1f/s), %d claims", r.Executions, r.ExecutionsPerSecond, r.Claims)
	row("processes", "%d registered; %d executions' claimed_by named their process", r.Processes, r.ClaimsNamed)
	row("claims after a key", "%d (the dead worker's)", r.ClaimsAfterKey)
	row("retries", "%d", r.Retries)
	row("snoozes", "%d", r.Snoozes)
	row("reaps", "%d (%d to FAILED, %d of live workers)", r.Reaps, r.ReapsToFailed, r.LiveReaps)
	row("job cancels", "%d requested, %d applied; %d jobs cancelled while running", r.JobCancelsRequested, r.JobCancelsApplied, r.CancelledRunning)
	row("dead worker", "%d claims abandoned; %d stale finishes, %d refused", r.DeadClaims, r.StaleFinishes, r.StaleFinishesRefused)
	row("workflows", "%d runs (%d cancelled), %d steps, %d callbacks (%d fired)", r.Workflows, r.WorkflowRunsCancelled, r.WorkflowJobs, r.CallbackJobs, r.CallbacksFired)
	row("promotions", "%d (events: %d promoted, %d callbacks)", r.Promotions, r.PromotionEvents, r.CallbackEvents)
	row("workflow failures", "%d steps cancelled by a dependency; %d retries (%d refused: run cancelled), %d revivals", r.CancelledByDependency, r.WorkflowRetries, r.WorkflowRetriesRefused, r.Revivals)
	row("closed runs", "%d jobs added to a run with callbacks, refused", r.RunClosedRefusals)
	row("limits", "%d blocked, %d released, %d cancelled while blocked; %d deferred by a rate (events: %d blocked)",
		r.Blocks, r.Unblocks, r.BlockedCancelled, r.LimitDeferred, r.LimitBlockedEvents)
	row("limit samples", "%d (%d above a limit, %d failed)", r.LimitSamples, r.LimitViolations, r.LimitSampleErrors)
	for _, q := range r.Limited {
		seen := fmt.Sprintf("most RUNNING %d", q.MaxRunning)
		if q.MaxKeyRunning > 0 {
			seen += fmt.Sprintf(", with one key %d", q.MaxKeyRunning)
		}
		if q.MaxOverlap > 0 {
			seen += fmt.Sprintf("; most executions at once %d", q.MaxOverlap)
			if q.MaxKeyRunning > 0 {
				seen += " (one key's)"
			}
		}
		if q.SamplesAtLimit > 0 {
			seen += fmt.Sprintf("; %d samples at the limit", q.SamplesAtLimit)
		}
		if q.MaxStartsPerPeriod > 0 {
			seen += fmt.Sprintf("; most starts of a key in a period %d", q.MaxStartsPerPeriod)
		}
		row("  "+q.Queue, "%s: %d jobs (%d DONE, %d FAILED, %d CANCELLED), %d executions, %d blocks, %d releases, %d reaps, %d cancelled running; %s",
			q.Limits, q.Jobs, q.Done, q.Failed, q.Cancelled, q.Executions, q.Blocks, q.Unblocks, q.Reaps, q.CancelledRunning, seen)
	}
	row("retried db errors", "%s", retriedText(r.RetriedErrors))
	if r.Deadlocks != nil {
		row("server deadlocks", "%d (%s)", *r.Deadlocks, r.DeadlockCounter)
	} else {
		row("server deadlocks", "%s", r.DeadlockCounter)
	}
	row("lost", "%d", r.Lost)
	row("double-finished", "%d", r.DoubleFinished)
	row("audit", "%d status changes", r.AuditRows)
	if r.ProblemCount == 0 {
		row("problems", "none")
	} else {
		row("problems", "%d", r.ProblemCount)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range r.Problems {
		if _, err := fmt.Fprintf(w, "  ! %s\n", p); err != nil {
			return err
		}
	}
	if n := r.ProblemCount - len(r.Problems); n > 0 {
		fmt.Fprintf(w, "  ! … and %d more\n", n)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	return nil
}

func retriedText(errs []RetriedError) string {
	if len(errs) == 0 {
		return "none"
	}
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = fmt.Sprintf("%s %s ×%d (%s)", e.Code, e.Kind, e.Count, e.Op)
	}
	return strings.Join(parts, ", ")
}
