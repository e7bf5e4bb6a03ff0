package dashboard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep-queue/lockstep"
)

// The queue page (/queue/{name}): a queue's counts, its settings, its
// limits with their usage and what they hold back (BLOCKED), and the form
// that sets them. Its path is /queue/, not /queues/, so that no queue name
// (a queue called "table", say) can collide with the queues table's own
// paths.

// maxLimit bounds a count limit: the databases store each in a 32-bit
// integer column.
const maxLimit = math.MaxInt32

// queueURL is the path of a queue's page; the name is one path segment,
// escaped (a queue name may hold '/', '?' or '#').
func queueURL(name string) string {
	return "/queue/" + url.PathEscape(name)
}

// limitsText is a queue's limits in a few words: "none", or e.g.
// "concurrency 5, per key 1, sequence hold, rate 100/1s per key".
func limitsText(l lockstep.QueueLimits) string {
	var parts []string
	if l.Concurrency > 0 {
		parts = append(parts, fmt.Sprintf("concurrency %d", l.Concurrency))
	}
	if l.KeyConcurrency > 0 {
		parts = append(parts, fmt.Sprintf("per key %d", l.KeyConcurrency))
	}
	if l.Sequence != lockstep.SequenceNone {
		parts = append(parts, "sequence "+l.Sequence.String())
	}
	if l.Rate > 0 {
		r := fmt.Sprintf("rate %d/%s", l.Rate, l.RatePeriod)
		if l.RateByKey {
			r += " per key"
		}
		parts = append(parts, r)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// blockedReason says why a BLOCKED job is held back, by its queue's
// limits as they are now.
func blockedReason(key string, l lockstep.QueueLimits) string {
	k := "key " + key
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

// settingsOf is one queue's settings; zero when it has none.
func (s *Server) settingsOf(ctx context.Context, queue string) (lockstep.QueueSettings, error) {
	all, err := s.client.ListQueueSettings(ctx)
	if err != nil {
		return lockstep.QueueSettings{}, err
	}
	for _, qs := range all {
		if qs.Queue == queue {
			return qs, nil
		}
	}
	return lockstep.QueueSettings{Queue: queue}, nil
}

// limitsForm is the limits form's fields as the page fills them in.
type limitsForm struct {
	Queue, CSRF string
	// Concurrency, KeyConcurrency and Rate are "" for no limit.
	Concurrency, KeyConcurrency, Rate, Per string
	Sequence                               string
	RateByKey                              bool
	Max                                    int
	Text                                   string
	Any                                    bool
	// Note reports what the last change did.
	Note string
}

func newLimitsForm(queue, csrf string, l lockstep.QueueLimits) limitsForm {
	f := limitsForm{Queue: queue, CSRF: csrf, Sequence: l.Sequence.String(), RateByKey: l.RateByKey, Max: maxLimit,
		Text: limitsText(l), Any: l.Any()}
	if l.Concurrency > 0 {
		f.Concurrency = strconv.Itoa(l.Concurrency)
	}
	if l.KeyConcurrency > 0 {
		f.KeyConcurrency = strconv.Itoa(l.KeyConcurrency)
	}
	if l.Rate > 0 {
		f.Rate = strconv.Itoa(l.Rate)
		f.Per = l.RatePeriod.String()
	}
	return f
}

// statusLink is one status's count on the queue page, linked to its jobs.
type statusLink struct {
	Status lockstep.JobStatus
	Class  string
	Count  lockstep.BoundedCount
	URL    string
}

type queueData struct {
	base
	Queue string
	// History is the queue's history charts.
	History historyView
	// URL reloads the page, whose stats section refreshes itself.
	URL      string
	Settings lockstep.QueueSettings
	Counts   []statusLink
	Oldest   string
	// Scheduled is the part of PENDING available later.
	Scheduled string
	// Running and Blocked are the RUNNING and BLOCKED counts; Concurrency
	// the queue's limit (0: none), which Running is shown against.
	Running, Blocked lockstep.BoundedCount
	Concurrency      int
	LimitsText       string
	BlockedURL       string
	Limits           limitsForm
	Message          string
	CountLimit       int
}

// queueMessages' outcomes of a limits change.
const (
	limitsSet     = "limits-set"
	limitsCleared = "limits-cleared"
)

func (s *Server) handleQueue(w http.ResponseWriter, r *http.Request) {
	queue := r.PathValue("name")
	if queue == "" || len(queue) > 128 {
		s.renderError(w, r, http.StatusNotFound, "no such queue")
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	st, err := s.reader.QueueStats(ctx, queue, &lockstep.StatsParams{CountLimit: s.cfg.CountLimit, Window: s.cfg.Window})
	if err != nil {
		s.dbError(w, r, "queue "+strconv.Quote(queue)+" stats", err)
		return
	}
	qs, err := s.settingsOf(ctx, queue)
	if err != nil {
		s.dbError(w, r, "queue "+strconv.Quote(queue)+" settings", err)
		return
	}
	s.dbUp()
	b := s.base(r, "Queue "+queue, "queues")
	jobsURL := func(status lockstep.JobStatus) string {
		q := url.Values{"queue": {queue}}
		if status != "" {
			q.Set("status", string(status))
		}
		return "/jobs?" + q.Encode()
	}
	d := queueData{
		base: b, Queue: queue, URL: queueURL(queue), Settings: qs, Oldest: "—",
		Running: st.Counts[lockstep.StatusRunning], Blocked: st.Counts[lockstep.StatusBlocked],
		Concurrency: qs.Limits.Concurrency, LimitsText: limitsText(qs.Limits),
		BlockedURL: jobsURL(lockstep.StatusBlocked),
		Limits:     newLimitsForm(queue, b.CSRF, qs.Limits),
		Message:    queueMessages[r.URL.Query().Get("done")], CountLimit: s.cfg.CountLimit,
		Scheduled: scheduledText(st),
		History:   s.history(r, queueURL(queue), queue),
	}
	for _, status := range allStatuses {
		d.Counts = append(d.Counts, statusLink{Status: status, Class: statusClass(status), Count: st.Counts[status], URL: jobsURL(status)})
	}
	if !st.OldestAvailableAt.IsZero() {
		d.Oldest = fmtDur(max(st.Now.Sub(st.OldestAvailableAt), 0))
		if st.OldestCapped {
			d.Oldest = "≥" + d.Oldest
		}
	}
	s.render(w, r, http.StatusOK, "queue.html", "layout", d)
}

// parseLimitsForm reads the limits form: every field is the queue's new
// value, an empty one no limit. A rate period or per-key rate without a
// rate is ignored (the rate's field was emptied to remove it). Errors are
// in the form's words.
func parseLimitsForm(f url.Values) (lockstep.QueueLimits, error) {
	if f.Get("clear") != "" {
		return lockstep.QueueLimits{}, nil
	}
	var l lockstep.QueueLimits
	for _, v := range []struct {
		field, name string
		n           *int
	}{
		{"concurrency", "concurrency", &l.Concurrency},
		{"key_concurrency", "per-key concurrency", &l.KeyConcurrency},
		{"rate", "rate", &l.Rate},
	} {
		raw := strings.TrimSpace(f.Get(v.field))
		if raw == "" {
			continue
		}
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 || n > maxLimit {
			return l, fmt.Errorf("%s must be a whole number from 0 (no limit) to %d", v.name, maxLimit)
		}
		*v.n = n
	}
	switch seq := strings.TrimSpace(f.Get("sequence")); seq {
	case "", lockstep.SequenceNone.String():
	case lockstep.SequenceRelease.String():
		l.Sequence = lockstep.SequenceRelease
	case lockstep.SequenceHold.String():
		l.Sequence = lockstep.SequenceHold
	default:
		return l, errors.New("sequence must be none, release or hold")
	}
	if l.Rate == 0 {
		return l, nil
	}
	per := strings.TrimSpace(f.Get("per"))
	if per == "" {
		return l, errors.New("a rate limit needs a period (per), such as 1s or 1m")
	}
	d, err := time.ParseDuration(per)
	if err != nil || d < lockstep.MinRatePeriod || d > lockstep.MaxRatePeriod {
		return l, fmt.Errorf("per must be a duration such as 1s or 1m, from %s to %s", lockstep.MinRatePeriod, lockstep.MaxRatePeriod)
	}
	l.RatePeriod = d
	l.RateByKey = f.Get("rate_by_key") != ""
	return l, nil
}

// handleQueueLimits sets a queue's limits from the form (clear=1 removes
// them), and answers with the limits section (htmx) or a redirect to the
// queue's page.
func (s *Server) handleQueueLimits(w http.ResponseWriter, r *http.Request) {
	queue := r.PostForm.Get("queue")
	if queue == "" {
		s.renderError(w, r, http.StatusBadRequest, "no queue given")
		return
	}
	l, err := parseLimitsForm(r.PostForm)
	if err != nil {
		s.renderError(w, r, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := s.actionCtx(r)
	defer cancel()
	switch err := s.client.SetQueueLimits(ctx, queue, l); {
	case errors.Is(err, lockstep.ErrInvalidQueueSetting):
		s.renderError(w, r, http.StatusBadRequest, redact(err.Error()))
		return
	case err != nil:
		s.dbError(w, r, "set limits of queue "+strconv.Quote(queue), err)
		return
	}
	outcome := limitsSet
	if !l.Any() {
		outcome = limitsCleared
	}
	s.logger.Info("dashboard: queue set limits", "queue", queue, "limits", limitsText(l), "remote", r.RemoteAddr)
	if !isHTMX(r) {
		http.Redirect(w, r, queueURL(queue)+"?done="+outcome, http.StatusSeeOther)
		return
	}
	f := newLimitsForm(queue, info(r).csrfToken, l)
	f.Note = queueMessages[outcome]
	// The page's stats section reloads on this event, showing the new
	// limits against the usage.
	changed(w)
	s.render(w, r, http.StatusOK, "partials.html", "queue-limits", f)
}
