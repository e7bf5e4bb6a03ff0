package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep-queue/lockstep"
)

// argsLimit is how much of a job's args the job page shows.
const argsLimit = 64 << 10

// ctx is the context of a read: it ends with the request or after
// Config.ReadTimeout.
func (s *Server) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.cfg.ReadTimeout)
}

// dbError shows a failed read or write: not found is a 404; a database
// that cannot be reached (or did not answer in time) a 503 saying so; the
// rest a 500. Messages are the error with any password removed.
func (s *Server) dbError(w http.ResponseWriter, r *http.Request, what string, err error) {
	if errors.Is(err, lockstep.ErrNotFound) {
		s.renderError(w, r, http.StatusNotFound, what+": not found")
		return
	}
	if s.unavailable(err) {
		s.dbDown(err)
		s.renderUnavailable(w, r, s.unavailableMessage(r, what, err))
		return
	}
	s.logger.Error("dashboard: "+what, "err", redact(err.Error()))
	s.renderError(w, r, http.StatusInternalServerError, what+": "+redact(err.Error()))
}

func pathID(r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	return id, err == nil && id > 0
}

// queryID reads an optional positive id from the query string.
func queryID(r *http.Request, name string) (int64, bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, true
	}
	id, err := strconv.ParseInt(v, 10, 64)
	return id, err == nil && id >= 0
}

func parseStatus(v string) (lockstep.JobStatus, bool) {
	if v == "" {
		return "", true
	}
	for _, st := range allStatuses {
		if string(st) == v {
			return st, true
		}
	}
	return "", false
}

// ---- queues ----

type queueCell struct {
	Queue, Status, Class string
	Count                lockstep.BoundedCount
	// Unknown: the queue's jobs were not read (see withSettings).
	Unknown bool
}

type queueRow struct {
	Queue string
	Cells []queueCell // in allStatuses order
	// Scheduled is the part of PENDING available later; "?" when both
	// counts are capped.
	Scheduled string
	Oldest    string
	Done      lockstep.BoundedCount
	Failed    lockstep.BoundedCount
	Rate      float64
	Capped    bool // the rate is a lower bound
	// Settings are the queue's shared settings; zero when it has none.
	Settings lockstep.QueueSettings
}

type queuesTable struct {
	Rows       []queueRow
	Window     time.Duration
	CountLimit int
	Total      float64
	Capped     bool
	Error      string
	// Unavailable: Error says the database could not be reached.
	Unavailable bool
	Now         time.Time
	// MaxQueues is set when the read stopped at Config.MaxQueues: there
	// may be more queues than the table shows.
	MaxQueues int
	// CSRF is for the rows' forms; Note reports what an action did.
	CSRF, Note string
	// Replica says, when the pages read from a replica, how far behind
	// the primary it is.
	Replica string
	// WorkersLimit is the highest max workers a queue may be given.
	WorkersLimit int
}

type queuesData struct {
	base
	Table   queuesTable
	History historyView
	Message string
}

// replicaLag describes the replica the pages read from, "" when they read
// from the primary.
func (s *Server) replicaLag(ctx context.Context) string {
	if s.cfg.ReplicaLag == nil {
		return ""
	}
	lag, err := s.cfg.ReplicaLag(ctx)
	if err != nil {
		return "These pages read from a replica; its lag could not be read: " + err.Error()
	}
	return "These pages read from a replica, " + fmtDur(lag) + " behind the primary; actions go to the primary."
}

// sample reads every queue's stats (and notes the database is up).
func (s *Server) sample(ctx context.Context) ([]*lockstep.QueueStats, error) {
	if s.client == nil {
		return nil, nil
	}
	stats, err := s.reader.Stats(ctx, &lockstep.StatsParams{CountLimit: s.cfg.CountLimit, Window: s.cfg.Window, MaxQueues: s.cfg.MaxQueues})
	if err != nil {
		return nil, err
	}
	s.dbUp()
	return stats, nil
}

// queueRate is DONE+FAILED per second over the stats' window.
func queueRate(st *lockstep.QueueStats, def time.Duration) (float64, bool) {
	win := st.Window
	if win <= 0 {
		win = def
	}
	d, f := st.Finished[lockstep.StatusDone], st.Finished[lockstep.StatusFailed]
	return float64(d.N+f.N) / win.Seconds(), d.Capped || f.Capped
}

// queuesTable reads the queues table; a failed read sets its Error (the
// rows it would have filled stay empty) and is returned too.
func (s *Server) queuesTable(r *http.Request) (queuesTable, error) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	t := queuesTable{Window: s.cfg.Window, CountLimit: s.cfg.CountLimit, Now: time.Now(),
		CSRF: info(r).csrfToken, WorkersLimit: lockstep.MaxQueueWorkers}
	stats, err := s.sample(ctx)
	t.readFailed(s, r, "reading queue stats", err)
	t.Replica = s.replicaLag(ctx)
	if len(stats) >= s.cfg.MaxQueues {
		t.MaxQueues = s.cfg.MaxQueues
	}
	for _, st := range stats {
		row := queueRow{Queue: st.Queue, Oldest: "—", Done: st.Finished[lockstep.StatusDone], Failed: st.Finished[lockstep.StatusFailed]}
		for _, status := range allStatuses {
			row.Cells = append(row.Cells, queueCell{Queue: st.Queue, Status: strings.ToLower(string(status)), Class: statusClass(status), Count: st.Counts[status]})
		}
		row.Scheduled = scheduledText(st)
		if !st.OldestAvailableAt.IsZero() {
			row.Oldest = fmtDur(max(st.Now.Sub(st.OldestAvailableAt), 0))
			if st.OldestCapped {
				// More jobs are available than were read: one of a later
				// priority may have waited longer.
				row.Oldest = "≥" + row.Oldest
			}
		}
		row.Rate, row.Capped = queueRate(st, s.cfg.Window)
		t.Total += row.Rate
		t.Capped = t.Capped || row.Capped
		t.Rows = append(t.Rows, row)
	}
	if err == nil {
		// Not after failed stats: a database that did not answer them
		// has used up the request's time already.
		err = s.withSettings(ctx, &t)
		t.readFailed(s, r, "reading queue settings", err)
	}
	return t, err
}

// readFailed records a failed read of the table in Error.
func (t *queuesTable) readFailed(s *Server, r *http.Request, what string, err error) {
	switch {
	case err == nil:
	case s.unavailable(err):
		s.dbDown(err)
		t.Error, t.Unavailable = s.unavailableMessage(r, what, err), true
	default:
		s.logger.Error("dashboard: "+what, "err", redact(err.Error()))
		t.Error = what + ": " + redact(err.Error())
	}
}

// handleQueues is the queues page. While the database is unavailable it
// is a 503 whose table says so; the table keeps reloading itself, and
// fills in once the database is back.
func (s *Server) handleQueues(w http.ResponseWriter, r *http.Request) {
	t, _ := s.queuesTable(r)
	status := http.StatusOK
	if t.Unavailable {
		status = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", fmt.Sprint(outageRefresh))
	}
	s.render(w, r, status, "queues.html", "layout", queuesData{base: s.base(r, "Queues", "queues"), Table: t,
		History: s.historyRead(r, "/", "", !t.Unavailable), Message: queueMessages[r.URL.Query().Get("done")]})
}

// handleQueuesTable is the queues table alone, which the page reloads
// every 2 seconds. While the database is unavailable it is a 503 with the
// message (htmx leaves the table as it was, and the page shows the
// message until a reload succeeds).
func (s *Server) handleQueuesTable(w http.ResponseWriter, r *http.Request) {
	t, _ := s.queuesTable(r)
	if t.Unavailable {
		s.renderUnavailable(w, r, t.Error)
		return
	}
	s.render(w, r, http.StatusOK, "partials.html", "queues-table", t)
}

// ---- runs ----

// segment is one status's part of a run's progress bar, in a 0..1000 box.
type segment struct {
	Class, Label string
	X, W         float64
}

type runRow struct {
	*lockstep.RunSummary
	State     string
	Total     string
	Segments  []segment
	Legend    []segment
	CanCancel bool
	// CSRF and Next are for the row's cancel form; Note reports what the
	// last action did.
	CSRF, Next, Note string
}

// barOrder is the order of a progress bar's segments.
var barOrder = []lockstep.JobStatus{
	lockstep.StatusDone, lockstep.StatusFailed, lockstep.StatusCancelled, lockstep.StatusRunning, lockstep.StatusBlocked,
	lockstep.StatusPending, lockstep.StatusWaiting,
}

func newRunRow(rs *lockstep.RunSummary, csrf, next string) runRow {
	row := runRow{RunSummary: rs, CSRF: csrf, Next: next}
	total := 0
	for _, st := range barOrder {
		total += rs.Counts.Counts[st]
	}
	prefix := ""
	if rs.Counts.Capped {
		prefix = "≥"
	}
	row.Total = prefix + fmtInt(int64(total))
	x := 0.0
	for _, st := range barOrder {
		n := rs.Counts.Counts[st]
		label := fmt.Sprintf("%s %s", fmtInt(int64(n)), st)
		seg := segment{Class: statusClass(st), Label: label}
		row.Legend = append(row.Legend, seg)
		if n == 0 || total == 0 {
			continue
		}
		seg.X, seg.W = x, 1000*float64(n)/float64(total)
		x += seg.W
		row.Segments = append(row.Segments, seg)
	}
	row.State = string(rs.State())
	// A finished run cannot be cancelled (CancelRun refuses it): only an
	// ACTIVE one is offered the button.
	row.CanCancel = row.State == string(lockstep.RunStateActive)
	return row
}

type runsData struct {
	base
	// URL reloads the list every few seconds (htmx).
	URL     string
	Rows    []runRow
	NextURL string
	First   bool
	Error   string
}

func (s *Server) handleRuns(w http.ResponseWriter, r *http.Request) {
	before, ok := queryID(r, "before")
	if !ok {
		s.renderError(w, r, http.StatusBadRequest, "before must be a run id")
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	runs, err := s.reader.Runs(ctx, lockstep.RunListParams{BeforeID: before, Limit: s.cfg.PageSize}, s.cfg.CountLimit)
	if err != nil {
		s.dbError(w, r, "list runs", err)
		return
	}
	b := s.base(r, "Runs", "runs")
	data := runsData{base: b, First: before == 0, URL: r.URL.RequestURI()}
	for _, rs := range runs {
		data.Rows = append(data.Rows, newRunRow(rs, b.CSRF, r.URL.RequestURI()))
	}
	if len(runs) == s.cfg.PageSize {
		data.NextURL = "/runs?before=" + strconv.FormatInt(runs[len(runs)-1].ID, 10)
	}
	s.render(w, r, http.StatusOK, "runs.html", "layout", data)
}

// ---- jobs ----

type jobRow struct {
	*lockstep.JobRow
	CanCancel, CanRetry bool
	CSRF, Next, Note    string
	// AvailableIn is "in 59m" for a scheduled job (PENDING, available
	// later), so that it does not look ready; empty otherwise.
	AvailableIn string
	// RunningFor and HeartbeatAge are how long a RUNNING job has run and
	// how old its last heartbeat is (a stale one is a dead worker's, which
	// the reaper will take back); empty for the other statuses.
	RunningFor, HeartbeatAge string
	// Selectable rows have a checkbox for the jobs page's bulk actions.
	Selectable bool
}

func newJobRow(j *lockstep.JobRow, csrf, next string) jobRow {
	row := jobRow{
		JobRow: j, CSRF: csrf, Next: next,
		CanCancel: slices.Contains(liveStatuses, j.Status),
		CanRetry:  j.Status == lockstep.StatusFailed,
	}
	if d := time.Until(j.AvailableAt); j.Status == lockstep.StatusPending && d > 0 {
		row.AvailableIn = "in " + fmtDur(d)
	}
	if j.Status == lockstep.StatusRunning && !j.StartedAt.IsZero() {
		row.RunningFor = "for " + fmtDur(max(time.Since(j.StartedAt), 0))
		row.HeartbeatAge = fmtAgo(j.HeartbeatAt, time.Now())
	}
	return row
}

// scheduledText is the queue's scheduled count (PENDING, available
// later), "?" when the split of a capped PENDING count is unknown.
func scheduledText(st *lockstep.QueueStats) string {
	c, ok := st.Scheduled()
	if !ok {
		return "?"
	}
	return fmtBounded(c)
}

type jobList struct {
	Rows     []jobRow
	NextURL  string
	Examined int
	// Indexed: the search went on through the text index, over every
	// job below the page's window.
	Indexed bool
	// URL reloads the list (htmx, after an action on the page).
	URL string
	// Selectable lists have a checkbox per row (the jobs page's bulk
	// actions on the jobs selected).
	Selectable bool
}

type filterLink struct {
	Label, URL string
	Active     bool
}

type jobsFilter struct {
	Status           lockstep.JobStatus
	Queue, Kind      string
	Before           int64
	StatusesSelected []filterLink
}

// jobPage reads one page and builds its rows and the link to the next.
func (s *Server) jobPage(ctx context.Context, r *http.Request, p lockstep.JobPageParams, base string, q url.Values) (jobList, error) {
	p.Limit = s.cfg.PageSize
	// A filter that matches nothing in a window goes on to the next ones
	// while the page is young (searchBudget), so that a rare match a few
	// windows down is found without the operator paging by hand; each
	// window is a bounded read, and the budget bounds the page.
	start := time.Now()
	examined := 0
	var page *lockstep.JobPage
	for {
		var err error
		if page, err = s.reader.JobPage(ctx, p); err != nil {
			return jobList{}, err
		}
		examined += page.Examined
		if len(page.Jobs) > 0 || page.Next == 0 || time.Since(start) >= searchBudget {
			break
		}
		p.BeforeID = page.Next
	}
	csrf := info(r).csrfToken
	l := jobList{Examined: examined, Indexed: page.Indexed, URL: r.URL.RequestURI()}
	for _, j := range page.Jobs {
		l.Rows = append(l.Rows, newJobRow(j, csrf, r.URL.RequestURI()))
	}
	if page.Next != 0 {
		nq := url.Values{}
		for k, v := range q {
			nq[k] = v
		}
		nq.Set("before", strconv.FormatInt(page.Next, 10))
		l.NextURL = base + "?" + nq.Encode()
	}
	return l, nil
}

// searchBudget is how long a job page may go on through windows of ids
// that hold no match: well inside the 200 ms a page should take.
const searchBudget = 120 * time.Millisecond

// statusLinks are the status filter's choices, each a link.
func statusLinks(base string, q url.Values, current lockstep.JobStatus) []filterLink {
	links := make([]filterLink, 0, len(allStatuses)+1)
	for _, st := range append([]lockstep.JobStatus{""}, allStatuses...) {
		nq := url.Values{}
		for k, v := range q {
			if k != "status" && k != "before" {
				nq[k] = v
			}
		}
		label := "all"
		if st != "" {
			nq.Set("status", string(st))
			label = string(st)
		}
		u := base
		if len(nq) > 0 {
			u += "?" + nq.Encode()
		}
		links = append(links, filterLink{Label: label, URL: u, Active: st == current})
	}
	return links
}

type runData struct {
	base
	Run runRow
	// Graph is the workflow's drawing; nil for a run without dependencies
	// or callbacks, or one too large to draw (GraphTooLarge).
	Graph         *runGraph
	GraphTooLarge bool
	GraphLimit    int
	Jobs          jobList
	Statuses      []filterLink
	Status        lockstep.JobStatus
	Capped        bool
	Limit         int
}

func (s *Server) handleRun(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(r)
	if !ok {
		s.renderError(w, r, http.StatusNotFound, "no such run")
		return
	}
	before, ok1 := queryID(r, "before")
	status, ok2 := parseStatus(r.URL.Query().Get("status"))
	if !ok1 || !ok2 {
		s.renderError(w, r, http.StatusBadRequest, "bad filter")
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	rs, err := s.reader.RunSummary(ctx, id, s.cfg.CountLimit)
	if err != nil {
		s.dbError(w, r, "run "+strconv.FormatInt(id, 10), err)
		return
	}
	b := s.base(r, "Run "+strconv.FormatInt(id, 10), "runs")
	path := "/runs/" + strconv.FormatInt(id, 10)
	q := url.Values{}
	if status != "" {
		q.Set("status", string(status))
	}
	jobs, err := s.jobPage(ctx, r, lockstep.JobPageParams{RunID: id, Status: status, BeforeID: before}, path, q)
	if err != nil {
		s.dbError(w, r, "list jobs", err)
		return
	}
	graph, err := s.reader.RunGraph(ctx, id, graphLimit)
	if err != nil {
		s.dbError(w, r, "run "+strconv.FormatInt(id, 10)+" graph", err)
		return
	}
	d := runData{
		base: b, Run: newRunRow(rs, b.CSRF, r.URL.RequestURI()), Jobs: jobs,
		Statuses: statusLinks(path, q, status), Status: status,
		Capped: rs.Counts.Capped, Limit: s.cfg.CountLimit, GraphLimit: graphLimit,
	}
	if graph.Truncated {
		// Half a graph would show jobs waiting on nothing drawn: say why
		// there is none instead.
		d.GraphTooLarge = graph.IsWorkflow()
	} else {
		d.Graph = layoutGraph(graph)
	}
	s.render(w, r, http.StatusOK, "run.html", "layout", d)
}

type jobsData struct {
	base
	Jobs     jobList
	Statuses []filterLink
	Status   lockstep.JobStatus
	Queue    string
	Kind     string
	View     lockstep.JobView
	Search   string
	// ByID is the job whose id the search is, when there is one; ByRun the
	// run.
	ByID  *lockstep.JobRow
	ByRun *lockstep.RunSummary
	// Queues are the queues with jobs, for the queue filter's choices (the
	// filter's own value first when it is not among them).
	Queues []string
	// Kinds are the kind filter's suggestions.
	Kinds []string
	// Views are the views of PENDING jobs, for the view filter.
	Views []lockstep.JobView
	// Bulk are the bulk actions over the filter.
	Bulk []bulkLink
}

func (s *Server) handleJobs(w http.ResponseWriter, r *http.Request) {
	qs := r.URL.Query()
	before, ok1 := queryID(r, "before")
	status, ok2 := parseStatus(qs.Get("status"))
	queue, kind := qs.Get("queue"), qs.Get("kind")
	search := strings.TrimSpace(qs.Get("q"))
	if ok2 && isFailedView(qs.Get("view")) && status != "" && status != lockstep.StatusFailed {
		s.renderError(w, r, http.StatusBadRequest, "bad filter: the failed view is the FAILED jobs; choose it with the status all or FAILED")
		return
	}
	status, view, ok3 := parseView(qs.Get("view"), status)
	if !ok1 || !ok2 || !ok3 || len(queue) > 128 || len(kind) > 128 || len(search) > lockstep.MaxSearchLen {
		s.renderError(w, r, http.StatusBadRequest, "bad filter")
		return
	}
	q := url.Values{}
	for k, v := range map[string]string{"status": string(status), "queue": queue, "kind": kind, "view": string(view), "q": search} {
		if v != "" {
			q.Set(k, v)
		}
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	// The list's own refresh (htmx, every 5 s) keeps only #jobs: the
	// filter's choices and the job found by id are read for a whole page
	// only.
	full := !isHTMX(r)
	// A search that is a number may be a job's id: one read by primary
	// key, shown above the matches of its text.
	// So may it be a run's: its row by primary key and its bounded counts.
	var byID *lockstep.JobRow
	var byRun *lockstep.RunSummary
	if id, err := strconv.ParseInt(search, 10, 64); full && err == nil && id > 0 {
		j, err := s.reader.Job(ctx, id)
		switch {
		case err == nil:
			byID = j
		case !errors.Is(err, lockstep.ErrNotFound):
			s.dbError(w, r, "get job", err)
			return
		}
		run, err := s.reader.RunSummary(ctx, id, s.cfg.CountLimit)
		switch {
		case err == nil:
			byRun = run
		case !errors.Is(err, lockstep.ErrNotFound):
			s.dbError(w, r, "get run", err)
			return
		}
	}
	jobs, err := s.jobPage(ctx, r, lockstep.JobPageParams{Status: status, Queue: queue, Kind: kind, View: pendingView(view), Search: search, BeforeID: before}, "/jobs", q)
	if err != nil {
		s.dbError(w, r, "list jobs", err)
		return
	}
	jobs.Selectable = true
	for i := range jobs.Rows {
		jobs.Rows[i].Selectable = true
	}
	var queues []string
	if full {
		if queues, err = s.reader.Queues(ctx, s.cfg.MaxQueues); err != nil {
			s.dbError(w, r, "list queues", err)
			return
		}
	}
	// The kind filter's suggestions: the kinds the history rollup saw
	// finish in the last hour (one short key-range read); any other kind
	// can still be typed.
	var kinds []string
	if full {
		recent, err := s.reader.History(ctx, lockstep.HistoryParams{Since: time.Now().Add(-time.Hour)})
		if err != nil {
			s.dbError(w, r, "read history", err)
			return
		}
		for _, h := range recent {
			if !slices.Contains(kinds, h.Kind) {
				kinds = append(kinds, h.Kind)
			}
		}
		slices.Sort(kinds)
	}
	if queue != "" && !slices.Contains(queues, queue) {
		queues = append([]string{queue}, queues...)
	}
	s.render(w, r, http.StatusOK, "jobs.html", "layout", jobsData{
		base: s.base(r, "Jobs", "jobs"), Jobs: jobs, Statuses: statusLinks("/jobs", q, status),
		Status: status, Queue: queue, Kind: kind, View: view, Search: search, ByID: byID, ByRun: byRun, Queues: queues, Kinds: kinds,
		Views: []lockstep.JobView{lockstep.ViewScheduled, lockstep.ViewRetrying, viewFailed},
		Bulk:  bulkLinks(status, q),
	})
}

// viewFailed is the failed view, also called dead: the FAILED jobs, those
// with no attempt left (or failed permanently). It is a status rather than
// one of the views of PENDING jobs (JobPageParams.View): the pages read it
// as the FAILED status filter and keep its name in their links.
const viewFailed lockstep.JobView = "failed"

// isFailedView reports whether a view parameter names the failed view.
func isFailedView(v string) bool { return v == string(viewFailed) || v == "dead" }

// parseView reads a view parameter beside the status filter: a view of
// PENDING jobs, or the failed view (by either name), returned as the
// FAILED status; false for an unknown view, or the failed view beside
// another status.
func parseView(v string, status lockstep.JobStatus) (lockstep.JobStatus, lockstep.JobView, bool) {
	switch {
	case v == "" || v == string(lockstep.ViewScheduled) || v == string(lockstep.ViewRetrying):
		return status, lockstep.JobView(v), true
	case isFailedView(v) && (status == "" || status == lockstep.StatusFailed):
		return lockstep.StatusFailed, viewFailed, true
	}
	return "", "", false
}

// pendingView is the view a job page reads: none for the failed view,
// which is its status filter.
func pendingView(v lockstep.JobView) lockstep.JobView {
	if v == viewFailed {
		return ""
	}
	return v
}

// bulkLink is a bulk action over the jobs page's filter: its preview.
type bulkLink struct {
	Action, Label, URL string
}

// bulkLinks offers each action the status filter allows, over the filter.
func bulkLinks(status lockstep.JobStatus, q url.Values) []bulkLink {
	var out []bulkLink
	for _, a := range []struct {
		action lockstep.BulkAction
		label  string
	}{{lockstep.BulkRetry, "Retry all matching FAILED"}, {lockstep.BulkCancel, "Cancel all matching live"}, {lockstep.BulkDelete, "Delete all matching finished"}} {
		if status != "" && !a.action.Applies(status) {
			continue
		}
		v := url.Values{}
		for k, vs := range q {
			v[k] = vs
		}
		v.Set("action", string(a.action))
		out = append(out, bulkLink{string(a.action), a.label, "/jobs/bulk?" + v.Encode()})
	}
	return out
}

type jobData struct {
	base
	Job       jobRow
	Args      string
	Truncated bool
	// Metadata and Output are shown when the job has them.
	Metadata, Output *jsonBlock
	Errors           []lockstep.AttemptError
	Waited           string // available → started
	Ran              string // started → finished
	Message          string
	// Blocked says why a BLOCKED job is held back.
	Blocked string
}

// actionMessages are the outcomes a redirect after an action reports by
// code, so that no text from the request is reflected into the page.
var actionMessages = map[string]string{
	"cancelled":     "Cancelled.",
	"not-cancelled": "Not cancelled: the job was no longer WAITING, PENDING, BLOCKED or RUNNING.",
	"retried":       "Put back to PENDING: it will be claimed again.",
	"not-retried":   "Not retried: the job was not FAILED.",
	"run-cancelled": "Not retried: its run is cancelled.",
}

func (s *Server) handleJob(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(r)
	if !ok {
		s.renderError(w, r, http.StatusNotFound, "no such job")
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	j, err := s.reader.Job(ctx, id)
	if err != nil {
		s.dbError(w, r, "job "+strconv.FormatInt(id, 10), err)
		return
	}
	b := s.base(r, "Job "+strconv.FormatInt(id, 10), "jobs")
	d := jobData{base: b, Job: newJobRow(j, b.CSRF, "/jobs/"+strconv.FormatInt(id, 10)), Errors: j.Errors,
		Message: actionMessages[r.URL.Query().Get("done")]}
	if j.Status == lockstep.StatusBlocked {
		qs, err := s.settingsOf(ctx, j.Queue)
		if err != nil {
			s.dbError(w, r, "queue "+strconv.Quote(j.Queue)+" settings", err)
			return
		}
		d.Blocked = blockedReason(j.LimitKey, qs.Limits)
	}
	d.Args, d.Truncated = prettyJSON(j.Args, argsLimit)
	d.Metadata, d.Output = newJSONBlock(j.Metadata), newJSONBlock(j.Output)
	if !j.StartedAt.IsZero() && !j.AvailableAt.IsZero() && j.StartedAt.After(j.AvailableAt) {
		d.Waited = fmtDur(j.StartedAt.Sub(j.AvailableAt))
	}
	if !j.StartedAt.IsZero() && !j.FinishedAt.IsZero() && !j.FinishedAt.Before(j.StartedAt) {
		d.Ran = fmtDur(j.FinishedAt.Sub(j.StartedAt))
	}
	s.render(w, r, http.StatusOK, "job.html", "layout", d)
}

// ---- actions ----

func isHTMX(r *http.Request) bool { return r.Header.Get("HX-Request") == "true" }

// changed tells the page (htmx) that data changed, so lists on it reload.
func changed(w http.ResponseWriter) { w.Header().Set("HX-Trigger", "lockstep-changed") }

// actionCtx is the context of a write: not cut short by a client that
// goes away once the request is sent, but bounded.
func (s *Server) actionCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(r.Context()), s.cfg.ReadTimeout)
}

func (s *Server) handleCancelRun(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(r)
	if !ok {
		s.renderError(w, r, http.StatusNotFound, "no such run")
		return
	}
	ctx, cancel := s.actionCtx(r)
	defer cancel()
	res, err := s.client.CancelRun(ctx, id)
	if errors.Is(err, lockstep.ErrRunFinished) {
		// A stale page (the run ended after it was drawn): say so, and
		// change nothing.
		s.renderError(w, r, http.StatusConflict, fmt.Sprintf("run %d has finished: every job has ended, so there is nothing to cancel, and it stays as it is", id))
		return
	}
	if err != nil {
		s.dbError(w, r, "cancel run "+strconv.FormatInt(id, 10), err)
		return
	}
	s.logger.Info("dashboard: cancelled run", "run", id, "jobs", len(res.Cancelled), "remote", r.RemoteAddr)
	next := safeNext(r.PostForm.Get("next"), "/runs/"+strconv.FormatInt(id, 10))
	if !isHTMX(r) {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	rs, err := s.client.RunSummary(ctx, id, s.cfg.CountLimit)
	if err != nil {
		s.dbError(w, r, "run "+strconv.FormatInt(id, 10), err)
		return
	}
	row := newRunRow(rs, info(r).csrfToken, next)
	row.Note = fmt.Sprintf("cancelled %d job(s)", len(res.Cancelled))
	changed(w)
	s.render(w, r, http.StatusOK, "partials.html", "run-row", row)
}

func (s *Server) handleCancelJob(w http.ResponseWriter, r *http.Request) {
	s.jobAction(w, r, "cancel", func(ctx context.Context, id int64) (string, error) {
		ok, err := s.client.CancelJob(ctx, id)
		if err != nil || !ok {
			return "not-cancelled", err
		}
		return "cancelled", nil
	})
}

func (s *Server) handleRetryJob(w http.ResponseWriter, r *http.Request) {
	s.jobAction(w, r, "retry", func(ctx context.Context, id int64) (string, error) {
		ok, err := s.client.RetryJob(ctx, id)
		switch {
		case errors.Is(err, lockstep.ErrRunCancelled):
			return "run-cancelled", nil
		case err != nil || !ok:
			return "not-retried", err
		}
		return "retried", nil
	})
}

// jobAction runs one job action and answers with the job's row (htmx) or
// a redirect back to the page the form was on.
func (s *Server) jobAction(w http.ResponseWriter, r *http.Request, what string, act func(context.Context, int64) (string, error)) {
	id, ok := pathID(r)
	if !ok {
		s.renderError(w, r, http.StatusNotFound, "no such job")
		return
	}
	ctx, cancel := s.actionCtx(r)
	defer cancel()
	outcome, err := act(ctx, id)
	if err != nil {
		s.dbError(w, r, what+" job "+strconv.FormatInt(id, 10), err)
		return
	}
	s.logger.Info("dashboard: job "+what, "job", id, "outcome", outcome, "remote", r.RemoteAddr)
	self := "/jobs/" + strconv.FormatInt(id, 10)
	next := safeNext(r.PostForm.Get("next"), self)
	if !isHTMX(r) {
		if next == self {
			next += "?done=" + outcome
		}
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	j, err := s.client.Job(ctx, id)
	if err != nil {
		s.dbError(w, r, "job "+strconv.FormatInt(id, 10), err)
		return
	}
	row := newJobRow(j, info(r).csrfToken, next)
	row.Note = actionMessages[outcome]
	// The row is swapped in place; the rest of the page (a run's progress
	// and its job list) reloads on this event, as after a run's cancel.
	changed(w)
	s.render(w, r, http.StatusOK, "partials.html", "job-row", row)
}
