package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
)

// demoReport is the demo's summary, built from the database after every
// job is final.
type demoReport struct {
	Database string `json:"database"`
	Kept     bool   `json:"kept"`
	Elapsed  string `json:"elapsed"`
	// CancelAt is the export run's counts just before it was cancelled.
	CancelAt *countsJSON  `json:"cancel_at"`
	Runs     []runReport  `json:"runs"`
	Kinds    []kindReport `json:"kinds"`
	Totals   countsJSON   `json:"totals"`
	Story    []string     `json:"story"`
}

type countsJSON struct {
	Jobs      int `json:"jobs"`
	Done      int `json:"done"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	Pending   int `json:"pending"`
	Running   int `json:"running"`
}

func countsOf(c lockstep.RunCounts) countsJSON {
	out := countsJSON{
		Done: c[lockstep.StatusDone], Failed: c[lockstep.StatusFailed], Cancelled: c[lockstep.StatusCancelled],
		Pending: c[lockstep.StatusPending], Running: c[lockstep.StatusRunning],
	}
	for _, n := range c {
		out.Jobs += n
	}
	return out
}

func (c countsJSON) String() string {
	return fmt.Sprintf("%d done, %d failed, %d cancelled, %d pending, %d running", c.Done, c.Failed, c.Cancelled, c.Pending, c.Running)
}

type runReport struct {
	ID     int64  `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
	countsJSON
}

// kindReport counts one kind's jobs. The database's attempts column counts
// claims; a snooze gives its attempt back by raising max_attempts, so
// Attempts = Claims - Snoozes.
type kindReport struct {
	Kind      string `json:"kind"`
	Jobs      int    `json:"jobs"`
	Claims    int    `json:"claims"`
	Snoozes   int    `json:"snoozes"`
	Attempts  int    `json:"attempts"`
	Errors    int    `json:"errors"` // entries in the error histories
	Done      int    `json:"done"`
	Failed    int    `json:"failed"`
	Cancelled int    `json:"cancelled"`
	Open      int    `json:"open"` // PENDING or RUNNING
}

// demoKindOrder is the order the report lists the demo's kinds in: the
// order the demo introduces them.
func demoKindOrder() []string { return []string{"resize", "flaky", "rate_limited", "slow"} }

// buildReport reads the runs and their jobs and tells what happened.
// interrupted holds the export jobs whose worker saw its context cancelled.
func buildReport(ctx context.Context, client *lockstep.Client, runs []*demoRun, export *demoRun, interrupted map[int64]string) (*demoReport, error) {
	rep := &demoReport{}
	kinds := map[string]*kindReport{}
	byRun := map[int64][]*lockstep.JobRow{}
	snoozes := map[int64]int{}
	for _, r := range runs {
		run, counts, err := client.Run(ctx, r.id)
		if err != nil {
			return nil, fmt.Errorf("read run %d: %w", r.id, err)
		}
		rep.Runs = append(rep.Runs, runReport{ID: run.ID, Name: run.Name, Status: string(lockstep.RunStateOf(run.Status, counts, false)), countsJSON: countsOf(counts)})
		jobs, err := listRunJobs(ctx, client, r.id)
		if err != nil {
			return nil, fmt.Errorf("list jobs of run %d: %w", r.id, err)
		}
		byRun[r.id] = jobs
		for _, j := range jobs {
			k := kinds[j.Kind]
			if k == nil {
				k = &kindReport{Kind: j.Kind}
				kinds[j.Kind] = k
			}
			snoozes[j.ID] = max(j.MaxAttempts-r.maxAttempts[j.ID], 0)
			k.Jobs++
			k.Claims += j.Attempts
			k.Snoozes += snoozes[j.ID]
			k.Errors += len(j.Errors)
			switch j.Status {
			case lockstep.StatusDone:
				k.Done++
				rep.Totals.Done++
			case lockstep.StatusFailed:
				k.Failed++
				rep.Totals.Failed++
			case lockstep.StatusCancelled:
				k.Cancelled++
				rep.Totals.Cancelled++
			case lockstep.StatusPending:
				k.Open++
				rep.Totals.Pending++
			case lockstep.StatusRunning:
				k.Open++
				rep.Totals.Running++
			}
			rep.Totals.Jobs++
		}
	}
	for _, k := range kinds {
		k.Attempts = k.Claims - k.Snoozes
	}
	for _, name := range demoKindOrder() {
		if k := kinds[name]; k != nil {
			rep.Kinds = append(rep.Kinds, *k)
			delete(kinds, name)
		}
	}
	for _, k := range kinds { // a kind the plan does not know: show it anyway
		rep.Kinds = append(rep.Kinds, *k)
	}

	var all []*lockstep.JobRow
	for _, r := range runs {
		all = append(all, byRun[r.id]...)
	}
	rep.Story = append(rep.Story, storyRetries(all)...)
	rep.Story = append(rep.Story, storySnoozes(all, snoozes)...)
	rep.Story = append(rep.Story, storyCancel(export, byRun[export.id], interrupted)...)
	open := rep.Totals.Pending + rep.Totals.Running
	if open == 0 {
		rep.Story = append(rep.Story, fmt.Sprintf("all %d jobs are final: %d DONE, %d FAILED, %d CANCELLED; none is left PENDING or RUNNING",
			rep.Totals.Jobs, rep.Totals.Done, rep.Totals.Failed, rep.Totals.Cancelled))
	} else {
		rep.Story = append(rep.Story, fmt.Sprintf("%d of %d jobs are still PENDING or RUNNING", open, rep.Totals.Jobs))
	}
	return rep, nil
}

// storyRetries tells one job retried once, one retried twice, and one
// that used up its attempts, from their error histories.
func storyRetries(jobs []*lockstep.JobRow) []string {
	var out []string
	told := map[int]bool{}
	for _, j := range jobs {
		n := len(j.Errors)
		if n == 0 || j.Status != lockstep.StatusDone || told[n] {
			continue
		}
		told[n] = true
		last := j.Errors[n-1]
		nums := make([]string, n)
		for i, e := range j.Errors {
			nums[i] = fmt.Sprint(e.Attempt)
		}
		word := "attempt"
		if n > 1 {
			word = "attempts"
		}
		out = append(out, fmt.Sprintf("job %d (%s) failed %s %s (%q), was retried %s after its last failure and is DONE on attempt %d",
			j.ID, j.Kind, word, joinAnd(nums), last.Error, ms(j.StartedAt.Sub(last.At)), j.Attempts))
		if len(told) == 2 {
			break
		}
	}
	for _, j := range jobs {
		if j.Status == lockstep.StatusFailed && len(j.Errors) > 0 {
			out = append(out, fmt.Sprintf("job %d (%s) failed all %d of its %d attempts and is FAILED; its error history holds %d entries, the last: %q",
				j.ID, j.Kind, j.Attempts, j.MaxAttempts, len(j.Errors), j.Errors[len(j.Errors)-1].Error))
			break
		}
	}
	return out
}

// storySnoozes tells one snoozed job and how many were snoozed.
func storySnoozes(jobs []*lockstep.JobRow, snoozes map[int64]int) []string {
	var out []string
	total, withErrors := 0, 0
	for _, j := range jobs {
		if snoozes[j.ID] == 0 {
			continue
		}
		total++
		if len(j.Errors) > 0 {
			withErrors++
		}
		if len(out) > 0 {
			continue
		}
		s := snoozes[j.ID]
		times := "once"
		if s > 1 {
			times = fmt.Sprintf("%d times", s)
		}
		errs := "no error recorded"
		if n := len(j.Errors); n > 0 {
			errs = fmt.Sprintf("%d errors recorded", n)
		}
		out = append(out, fmt.Sprintf("job %d (%s) was snoozed %s (its worker returned lockstep.Snooze(%s)) without consuming an attempt: claimed %d times, max_attempts %d → %d, %s; its last claim began %s after it was enqueued and it is %s",
			j.ID, j.Kind, times, demoSnoozeDelay, j.Attempts, j.MaxAttempts-s, j.MaxAttempts, errs, ms(j.StartedAt.Sub(j.CreatedAt)), j.Status))
	}
	if total > 1 {
		out = append(out, fmt.Sprintf("%d jobs were snoozed in all; %d of them recorded an error", total, withErrors))
	}
	return out
}

// storyCancel tells how the export run was cancelled half-way.
func storyCancel(export *demoRun, jobs []*lockstep.JobRow, interrupted map[int64]string) []string {
	var done, cancelled, wasRunning, neverClaimed int
	for _, j := range jobs {
		switch j.Status {
		case lockstep.StatusDone:
			done++
		case lockstep.StatusCancelled:
			cancelled++
			if j.Attempts > 0 {
				wasRunning++
			} else {
				neverClaimed++
			}
		}
	}
	if cancelled == 0 {
		return []string{fmt.Sprintf("run %q ended with no job cancelled: %d done", export.name, done)}
	}
	out := []string{fmt.Sprintf("run %q was cancelled half-way: %d done, %d cancelled — %d of them RUNNING at the time (claimed, no result written) and %d still PENDING (never claimed)",
		export.name, done, cancelled, wasRunning, neverClaimed)}
	if len(interrupted) > 0 {
		ids := make([]int64, 0, len(interrupted))
		for id := range interrupted {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		status := map[int64]lockstep.JobStatus{}
		for _, j := range jobs {
			status[j.ID] = j.Status
		}
		still := 0
		var names []string
		for _, id := range ids {
			if status[id] == lockstep.StatusCancelled {
				still++
			}
			names = append(names, fmt.Sprint(id))
		}
		word := "job"
		if len(ids) > 1 {
			word = "jobs"
		}
		out = append(out, fmt.Sprintf("the workers of %s %s saw their context cancelled (%q); %d of %d are CANCELLED in the database: their late results changed nothing",
			word, joinAnd(names), interrupted[ids[0]], still, len(ids)))
	}
	return out
}

func joinAnd(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

// writeText prints the report for people.
func (r *demoReport) writeText(w io.Writer) error {
	fmt.Fprintf(w, "\nRuns\n")
	tw := clienv.Table(w)
	fmt.Fprintln(tw, "  RUN\tNAME\tSTATUS\tJOBS\tDONE\tFAILED\tCANCELLED\tPENDING\tRUNNING")
	for _, x := range r.Runs {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", x.ID, x.Name, x.Status, x.Jobs, x.Done, x.Failed, x.Cancelled, x.Pending, x.Running)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "  (a run is ACTIVE while a job has not ended, then DONE, or FAILED if a job failed; CANCELLED if it was cancelled)")
	fmt.Fprintf(w, "\nKinds\n")
	tw = clienv.Table(w)
	fmt.Fprintln(tw, "  KIND\tJOBS\tATTEMPTS\tSNOOZES\tERRORS\tDONE\tFAILED\tCANCELLED")
	for _, k := range r.Kinds {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", k.Kind, k.Jobs, k.Attempts, k.Snoozes, k.Errors, k.Done, k.Failed, k.Cancelled)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "  (a snooze does not use up an attempt: ATTEMPTS excludes snoozed claims; ERRORS counts error-history entries)")
	fmt.Fprintf(w, "\nWhat happened (read back from the database)\n")
	for _, s := range r.Story {
		fmt.Fprintf(w, "  - %s\n", s)
	}
	where := "removed"
	if r.Kept {
		where = "kept at " + r.Database
	}
	_, err := fmt.Fprintf(w, "\nDemo finished in %s; the database was %s.\n", r.Elapsed, where)
	return err
}
