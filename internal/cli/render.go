package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
)

// The table and JSON forms of jobs and runs, shared by the commands that
// read and change them (enqueue, runs, jobs, cancel, retry, stats), and
// the text from the database made safe to print on a terminal.

// outTime formats a time for tables: UTC, to the second; "-" when unset.
func outTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// outTimePtr is a time for JSON: null when unset.
func outTimePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// outAge formats a duration for humans, to the second (to the
// millisecond under one second).
func outAge(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

// outSafe makes text from the database (a job's errors, which hold a
// command's stderr; its args, queue and kind; a run's name) safe to print
// on a terminal: C0 and C1 control characters, DEL and bytes that are not
// UTF-8 are shown as Go escapes (ESC as \x1b, CSI as \u009b), so no
// escape sequence reaches the terminal. With multiline, newlines and tabs
// are kept. JSON output needs none of this: encoding/json escapes C0 and
// the reader decodes it.
func outSafe(s string, multiline bool) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case multiline && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// outCell makes text fit a table cell: its lines joined, white space
// collapsed, control characters escaped (outSafe), at most max runes,
// with an ellipsis when cut.
func outCell(s string, max int) string {
	s = outSafe(strings.Join(strings.Fields(s), " "), false)
	if s == "" {
		return "-"
	}
	if utf8.RuneCountInString(s) > max {
		s = string([]rune(s)[:max]) + "…"
	}
	return s
}

// outCount shows a bounded count: "≥N" when capped.
func outCount(n int64, capped bool) string {
	if capped {
		return "≥" + strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(n, 10)
}

// countOut is a bounded count in JSON.
type countOut struct {
	N      int64 `json:"n"`
	Capped bool  `json:"capped"`
}

// jobOut is a job in JSON.
type jobOut struct {
	ID          int64                   `json:"id"`
	RunID       int64                   `json:"run_id,omitempty"`
	Queue       string                  `json:"queue"`
	Kind        string                  `json:"kind"`
	Status      lockstep.JobStatus      `json:"status"`
	Args        json.RawMessage         `json:"args"`
	Priority    int                     `json:"priority"`
	Attempts    int                     `json:"attempts"`
	MaxAttempts int                     `json:"max_attempts"`
	AvailableAt *time.Time              `json:"available_at"`
	CreatedAt   *time.Time              `json:"created_at"`
	StartedAt   *time.Time              `json:"started_at"`
	HeartbeatAt *time.Time              `json:"heartbeat_at"`
	FinishedAt  *time.Time              `json:"finished_at"`
	LastError   string                  `json:"last_error,omitempty"`
	Errors      []lockstep.AttemptError `json:"errors"`
	UniqueKey   string                  `json:"unique_key,omitempty"`
	// LimitKey is the key its queue's per-key limits count it under.
	LimitKey string          `json:"limit_key,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	Output   json.RawMessage `json:"output,omitempty"`
	// The job's place in a workflow: the dependencies it still waits for,
	// the jobs that depend on it, the condition it fires on if it is a
	// run's callback.
	WaitingOn  int    `json:"waiting_on,omitempty"`
	Dependents int    `json:"dependents,omitempty"`
	Callback   string `json:"callback,omitempty"`
	// ClaimedBy is the process that claimed the current attempt.
	ClaimedBy string `json:"claimed_by,omitempty"`
}

// rawJSONOut makes stored JSON safe to embed in JSON output: nil stays
// nil (omitted), and text that is not JSON (never expected) becomes a
// string rather than failing the whole listing.
func rawJSONOut(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || json.Valid(raw) {
		return raw
	}
	b, _ := json.Marshal(string(raw))
	return b
}

func toJobOut(j *lockstep.JobRow) jobOut {
	args := rawJSONOut(j.Args)
	if len(args) == 0 {
		args = json.RawMessage("null")
	}
	errs := j.Errors
	if errs == nil {
		errs = []lockstep.AttemptError{}
	}
	return jobOut{
		ID: j.ID, RunID: j.RunID, Queue: j.Queue, Kind: j.Kind, Status: j.Status, Args: args,
		Priority: j.Priority, Attempts: j.Attempts, MaxAttempts: j.MaxAttempts,
		AvailableAt: outTimePtr(j.AvailableAt), CreatedAt: outTimePtr(j.CreatedAt),
		StartedAt: outTimePtr(j.StartedAt), HeartbeatAt: outTimePtr(j.HeartbeatAt),
		FinishedAt: outTimePtr(j.FinishedAt), LastError: j.LastError, Errors: errs,
		UniqueKey: j.UniqueKey, LimitKey: j.LimitKey, Metadata: rawJSONOut(j.Metadata), Output: rawJSONOut(j.Output),
		WaitingOn: waitingOn(j), Dependents: j.Dependents, Callback: j.Callback, ClaimedBy: j.ClaimedBy,
	}
}

func toJobsOut(jobs []*lockstep.JobRow) []jobOut {
	out := make([]jobOut, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, toJobOut(j))
	}
	return out
}

// jobPageOut is a page of a newest-first job listing in JSON. Next is the
// --before of the next page; 0 when there is none.
type jobPageOut struct {
	Jobs     []jobOut `json:"jobs"`
	Next     int64    `json:"next"`
	Examined int      `json:"examined"`
	// Indexed: the search went on through the text index, over every
	// job below the page's window.
	Indexed bool `json:"indexed"`
}

func toJobPageOut(p *lockstep.JobPage) jobPageOut {
	return jobPageOut{Jobs: toJobsOut(p.Jobs), Next: p.Next, Examined: p.Examined, Indexed: p.Indexed}
}

// writeJobsTable writes jobs as a table, newest first as given. When a
// job of the page has a limit key, a LIMIT_KEY column shows each one's
// (a BLOCKED job is held back by its key); when a job is scheduled
// (PENDING, available later), an AVAILABLE column says when each PENDING
// job may run ("now", "in 59m"). Most pages have neither, and their
// tables stay as narrow as before.
func writeJobsTable(w io.Writer, jobs []*lockstep.JobRow) error {
	now := time.Now()
	keyed := slices.ContainsFunc(jobs, func(j *lockstep.JobRow) bool { return j.LimitKey != "" })
	scheduled := slices.ContainsFunc(jobs, func(j *lockstep.JobRow) bool { return isScheduled(j, now) })
	head := "ID\tRUN\tQUEUE\tKIND\tSTATUS"
	if scheduled {
		head += "\tAVAILABLE"
	}
	if keyed {
		head += "\tLIMIT_KEY"
	}
	tw := clienv.Table(w)
	fmt.Fprintln(tw, head+"\tATTEMPTS\tCREATED\tLAST_ERROR")
	for _, j := range jobs {
		run := "-"
		if j.RunID != 0 {
			run = strconv.FormatInt(j.RunID, 10)
		}
		status := string(j.Status)
		if scheduled {
			status += "\t" + availableIn(j, now)
		}
		if keyed {
			status += "\t" + outCell(j.LimitKey, 30)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\n", j.ID, run, outCell(j.Queue, 30), outCell(j.Kind, 30),
			status, j.Attempts, j.MaxAttempts, outTime(j.CreatedAt), outCell(j.LastError, 60))
	}
	return tw.Flush()
}

// isScheduled: a PENDING job no worker may claim before its available_at
// (a delayed insert, a retry's backoff, a snooze, a rate limit's wait).
func isScheduled(j *lockstep.JobRow, now time.Time) bool {
	return j.Status == lockstep.StatusPending && j.AvailableAt.After(now)
}

// scheduledNote marks a scheduled job's available time in `jobs show`.
func scheduledNote(j *lockstep.JobRow) string {
	if now := time.Now(); isScheduled(j, now) {
		return " (scheduled: in " + outAge(j.AvailableAt.Sub(now)) + ")"
	}
	return ""
}

// availableIn says when a PENDING job may run: "now", or "in 59m" (by this
// machine's clock); "-" for the other statuses.
func availableIn(j *lockstep.JobRow, now time.Time) string {
	switch {
	case j.Status != lockstep.StatusPending:
		return "-"
	case !isScheduled(j, now):
		return "now"
	}
	return "in " + outAge(j.AvailableAt.Sub(now))
}

// writeNextHint tells how to read the next page of a listing; indexed
// says a search went through the text index over every older job.
func writeNextHint(w io.Writer, shown int, next int64, examined int, indexed bool) {
	switch {
	case next == 0 && indexed && shown == 0:
		fmt.Fprintln(w, "no match: the search went through every job by the text index")
	case next == 0:
	case shown == 0:
		fmt.Fprintf(w, "no match among the %d job ids examined; next page: --before %d\n", examined, next)
	default:
		fmt.Fprintf(w, "next page: --before %d\n", next)
	}
}

// blockedReason says why a BLOCKED job is held back, by its queue's
// limits as they are now: its key at its limit, or its sequence busy.
func blockedReason(key string, l lockstep.QueueLimits) string {
	k := "key " + outSafe(key, false)
	switch {
	case l.Sequence == lockstep.SequenceHold:
		return k + " at its limit (a sequence: one job at a time in insert order, and a FAILED job holds the rest until it is retried)"
	case l.Sequence == lockstep.SequenceRelease:
		return k + " at its limit (a sequence: one job at a time in insert order)"
	case l.KeyConcurrency > 0:
		return fmt.Sprintf("%s at its limit (at most %d RUNNING per key)", k, l.KeyConcurrency)
	}
	return k + " was at its limit when a claim met the job; the queue has no per-key limit now"
}

// writeJobDetail writes every field of a job, its args indented and its
// error history. limits are its queue's, read for a BLOCKED job only.
func writeJobDetail(w io.Writer, j *lockstep.JobRow, limits lockstep.QueueLimits) error {
	tw := clienv.Table(w)
	run := "-"
	if j.RunID != 0 {
		run = strconv.FormatInt(j.RunID, 10)
	}
	rows := [][2]string{
		{"id", strconv.FormatInt(j.ID, 10)},
		{"run", run},
		{"queue", outSafe(j.Queue, false)},
		{"kind", outSafe(j.Kind, false)},
		{"status", string(j.Status)},
		{"priority", strconv.Itoa(j.Priority)},
		{"attempts", fmt.Sprintf("%d of %d", j.Attempts, j.MaxAttempts)},
		{"created", outTime(j.CreatedAt)},
		{"available", outTime(j.AvailableAt) + scheduledNote(j)},
		{"started", outTime(j.StartedAt)},
		{"heartbeat", outTime(j.HeartbeatAt)},
		{"finished", outTime(j.FinishedAt)},
		{"last error", outCell(j.LastError, 100)},
	}
	if j.ClaimedBy != "" {
		rows = append(rows, [2]string{"claimed by", outSafe(j.ClaimedBy, false)})
	}
	if j.UniqueKey != "" {
		rows = append(rows, [2]string{"unique key", outSafe(j.UniqueKey, false)})
	}
	if j.LimitKey != "" {
		rows = append(rows, [2]string{"limit key", outSafe(j.LimitKey, false)})
	}
	if j.Status == lockstep.StatusBlocked {
		rows = append(rows, [2]string{"blocked by limit", blockedReason(j.LimitKey, limits)})
	}
	if j.Status == lockstep.StatusWaiting {
		rows = append(rows, [2]string{"waiting on", fmt.Sprintf("%d unfinished dependencies", j.WaitingOn)})
	}
	if j.Dependents > 0 {
		rows = append(rows, [2]string{"dependents", strconv.Itoa(j.Dependents)})
	}
	if j.Callback != "" {
		rows = append(rows, [2]string{"callback", j.Callback + ": fires " + callbackWhen(j.Callback)})
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s:\t%s\n", r[0], r[1])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeJSONBlock(w, "args", j.Args)
	// Nil is absent and left out; a recorded JSON null still shows.
	if j.Metadata != nil {
		writeJSONBlock(w, "metadata", j.Metadata)
	}
	if j.Output != nil {
		writeJSONBlock(w, "output", j.Output)
	}
	if len(j.Errors) == 0 {
		fmt.Fprintln(w, "errors: none")
		return nil
	}
	fmt.Fprintf(w, "errors (%d):\n", len(j.Errors))
	for _, e := range j.Errors {
		fmt.Fprintf(w, "  attempt %d at %s:\n", e.Attempt, outTime(e.At))
		for _, line := range strings.Split(strings.TrimRight(e.Error, "\n"), "\n") {
			fmt.Fprintf(w, "    %s\n", outSafe(strings.TrimRight(line, "\r"), true))
		}
	}
	return nil
}

// writeJSONBlock writes "label:" and the JSON indented under it, made
// safe for a terminal; text that is not JSON is shown as it is.
func writeJSONBlock(w io.Writer, label string, raw []byte) {
	fmt.Fprintf(w, "%s:\n", label)
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, raw, "  ", "  "); err != nil {
		pretty.Reset()
		pretty.Write(raw)
	}
	fmt.Fprintf(w, "  %s\n", outSafe(pretty.String(), true))
}

// runRowOut is a run in JSON, without its counts.
type runRowOut struct {
	ID          int64           `json:"id"`
	Name        string          `json:"name"`
	Status      string          `json:"status"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	CreatedAt   *time.Time      `json:"created_at"`
	CancelledAt *time.Time      `json:"cancelled_at"`
}

func toRunRowOut(r *lockstep.Run) runRowOut {
	var meta json.RawMessage
	if len(r.Metadata) > 0 && json.Valid(r.Metadata) {
		meta = r.Metadata
	}
	return runRowOut{
		ID: r.ID, Name: r.Name, Status: string(r.Status), Metadata: meta,
		CreatedAt: outTimePtr(r.CreatedAt), CancelledAt: outTimePtr(r.CancelledAt),
	}
}

// runOut is a run with its job counts in JSON. Counts has every status;
// when CountsCapped the run has more jobs than were counted, and every
// count (Jobs included) is a lower bound. Complete means every job is
// final (none WAITING, PENDING, BLOCKED or RUNNING).
type runOut struct {
	runRowOut
	// State is the run's one word for people: ACTIVE, DONE, FAILED or
	// CANCELLED (lockstep.RunStateOf); Status is what is stored.
	State        lockstep.RunState          `json:"state"`
	Jobs         int                        `json:"jobs"`
	Counts       map[lockstep.JobStatus]int `json:"counts"`
	CountsCapped bool                       `json:"counts_capped"`
	Complete     bool                       `json:"complete"`
}

func toRunOut(s *lockstep.RunSummary) runOut {
	out := runOut{runRowOut: toRunRowOut(s.Run), Counts: map[lockstep.JobStatus]int{}, CountsCapped: s.Counts.Capped, State: s.State()}
	for _, st := range allStatuses() {
		n := s.Counts.Counts[st]
		out.Counts[st] = n
		out.Jobs += n
	}
	open := 0
	for _, st := range liveStatuses() {
		open += out.Counts[st]
	}
	out.Complete = out.Jobs > 0 && open == 0 && !out.CountsCapped
	return out
}

// state is the run's one word for people.
func (r runOut) state() string { return string(r.State) }

// progress is "final/total", every number a lower bound ("≥") when the
// counts are capped.
func (r runOut) progress() string {
	final := r.Counts[lockstep.StatusDone] + r.Counts[lockstep.StatusFailed] + r.Counts[lockstep.StatusCancelled]
	return outCount(int64(final), r.CountsCapped) + "/" + outCount(int64(r.Jobs), r.CountsCapped)
}

func writeRunsTable(w io.Writer, runs []runOut) error {
	tw := clienv.Table(w)
	fmt.Fprintf(tw, "ID\tNAME\tSTATUS\tPROGRESS\t%s\tCREATED\n", statusHeader())
	for _, r := range runs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s", r.ID, outCell(r.Name, 40), r.state(), r.progress())
		for _, st := range allStatuses() {
			fmt.Fprintf(tw, "\t%s", outCount(int64(r.Counts[st]), r.CountsCapped))
		}
		created := "-"
		if r.CreatedAt != nil {
			created = outTime(*r.CreatedAt)
		}
		fmt.Fprintf(tw, "\t%s\n", created)
	}
	return tw.Flush()
}
