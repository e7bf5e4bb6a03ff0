package dashboard

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// Bulk actions: a preview page (GET /jobs/bulk, the count of what the
// action would select), the action started by a form with the CSRF token
// (POST /jobs/bulk), and its progress (GET /jobs/bulk/{id}), polled by
// htmx while the batches run. The action runs in the serve process, not
// in the request: a large one outlives any request timeout.

// bulkTimeout bounds one bulk action's run.
const bulkTimeout = 30 * time.Minute

// maxBulkOps is how many bulk actions the progress pages remember.
const maxBulkOps = 50

// maxSelected bounds the ids one form may carry.
const maxSelected = 1000

// bulkSince are the finish-time choices of a bulk action over a filter.
var bulkSince = []sinceOption{{"", "any time", 0}, {"1h", "the last hour", time.Hour}, {"6h", "the last 6 hours", 6 * time.Hour},
	{"24h", "the last 24 hours", 24 * time.Hour}, {"7d", "the last 7 days", 7 * 24 * time.Hour}}

// sinceOption is a finish-time choice: its form value, its words, how far
// back.
type sinceOption struct {
	Value, Label string
	D            time.Duration
}

// bulkOps remembers the bulk actions this process ran.
type bulkOps struct {
	mu    sync.Mutex
	seq   int
	ops   map[int]*bulkOp
	order []int
}

// bulkOp is one bulk action and how far it got.
type bulkOp struct {
	ID       int
	Action   lockstep.BulkAction
	What     string // the selection, in words
	Selected int64  // the preview's count, or the ids given
	ByID     bool   // Selected is the ids given, not a preview's count
	Started  time.Time

	mu       sync.Mutex
	progress lockstep.BulkProgress
	finished time.Time
	err      string
}

func (o *bulkOps) start(action lockstep.BulkAction, what string, selected int64, byID bool) *bulkOp {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ops == nil {
		o.ops = map[int]*bulkOp{}
	}
	o.seq++
	op := &bulkOp{ID: o.seq, Action: action, What: what, Selected: selected, ByID: byID, Started: time.Now()}
	o.ops[op.ID] = op
	o.order = append(o.order, op.ID)
	if len(o.order) > maxBulkOps {
		delete(o.ops, o.order[0])
		o.order = o.order[1:]
	}
	return op
}

func (o *bulkOps) get(id int) *bulkOp {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ops[id]
}

// bulkView is what the progress page shows of an op.
type bulkView struct {
	ID               int
	Action           string
	Past             string
	PastTitle        string
	What             string
	Selected         int64
	ByID             bool
	Matched, Changed int
	Skipped, Batches int
	Percent          int
	Done             bool
	Error            string
	Took             string
	Statuses         string
}

func (op *bulkOp) view() bulkView {
	op.mu.Lock()
	defer op.mu.Unlock()
	v := bulkView{ID: op.ID, Action: capitalized(string(op.Action)), Past: op.Action.Past(), PastTitle: capitalized(op.Action.Past()), What: op.What, Selected: op.Selected, ByID: op.ByID,
		Matched: op.progress.Matched, Changed: op.progress.Changed, Skipped: op.progress.Skipped, Batches: op.progress.Batches,
		Done: !op.finished.IsZero(), Error: op.err, Statuses: statusWords(op.Action.Statuses())}
	switch {
	case v.Done && v.Error == "":
		v.Percent = 100
	case op.Selected > 0:
		v.Percent = min(99, int(int64(v.Matched)*100/op.Selected))
	case op.progress.Last > 0:
		// Not counted (the preview stopped at its budget): how far the
		// scan has gone through the ids.
		v.Percent = min(99, int(op.progress.Through*100/op.progress.Last))
	}
	end := op.finished
	if end.IsZero() {
		end = time.Now()
	}
	v.Took = fmtDur(end.Sub(op.Started).Round(10 * time.Millisecond))
	return v
}

func capitalized(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func statusWords(sts []lockstep.JobStatus) string {
	words := make([]string, len(sts))
	for i, s := range sts {
		words[i] = string(s)
	}
	return strings.Join(words, ", ")
}

// bulkRequest is a bulk action as a form or a query string gives it.
type bulkRequest struct {
	Action lockstep.BulkAction
	IDs    []int64
	Filter lockstep.JobFilter
	Since  string
}

// parseBulk reads a bulk action's fields; false for anything malformed.
func parseBulk(v url.Values, now time.Time) (bulkRequest, bool) {
	var b bulkRequest
	action, err := rowtype.ParseBulkAction(v.Get("action"))
	if err != nil {
		return b, false
	}
	b.Action = action
	ids := v["id"]
	if len(ids) > maxSelected {
		return b, false
	}
	for _, s := range ids {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id <= 0 {
			return b, false
		}
		b.IDs = append(b.IDs, id)
	}
	status, ok := parseStatus(v.Get("status"))
	if !ok {
		return b, false
	}
	// The failed view is the FAILED status.
	status, view, ok := parseView(v.Get("view"), status)
	if !ok || status != "" && !action.Applies(status) {
		return b, false
	}
	view = pendingView(view)
	run, err := strconv.ParseInt(orZero(v.Get("run")), 10, 64)
	if err != nil || run < 0 {
		return b, false
	}
	b.Filter = lockstep.JobFilter{Status: status, Queue: v.Get("queue"), Kind: v.Get("kind"), View: view,
		Search: strings.TrimSpace(v.Get("q")), RunID: run}
	if len(b.Filter.Queue) > 128 || len(b.Filter.Kind) > 128 || len(b.Filter.Search) > lockstep.MaxSearchLen {
		return b, false
	}
	b.Since = v.Get("since")
	i := slices.IndexFunc(bulkSince, func(s sinceOption) bool { return s.Value == b.Since })
	if i < 0 {
		return b, false
	}
	if d := bulkSince[i].D; d > 0 {
		if action == lockstep.BulkCancel {
			return b, false // live jobs have not finished
		}
		b.Filter.FinishedAfter = now.Add(-d)
	}
	return b, true
}

func orZero(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

// describe says in words which jobs a bulk action selects.
func (b bulkRequest) describe() string {
	if len(b.IDs) > 0 {
		return fmt.Sprintf("%d selected jobs", len(b.IDs))
	}
	var parts []string
	f := b.Filter
	if f.Status != "" {
		parts = append(parts, "status "+string(f.Status))
	} else {
		parts = append(parts, "status "+statusWords(b.Action.Statuses()))
	}
	for _, p := range []struct{ k, v string }{{"queue", f.Queue}, {"kind", f.Kind}, {"view", string(f.View)}, {"containing", f.Search}} {
		if p.v != "" {
			parts = append(parts, fmt.Sprintf("%s %q", p.k, p.v))
		}
	}
	if f.RunID != 0 {
		parts = append(parts, fmt.Sprintf("run %d", f.RunID))
	}
	for _, s := range bulkSince {
		if s.Value == b.Since && s.D > 0 {
			parts = append(parts, "finished in "+s.Label)
		}
	}
	return "every job with " + strings.Join(parts, ", ")
}

// values are the request's fields, for the confirm form and links.
func (b bulkRequest) values() url.Values {
	v := url.Values{"action": {string(b.Action)}}
	for _, id := range b.IDs {
		v.Add("id", strconv.FormatInt(id, 10))
	}
	f := b.Filter
	for k, s := range map[string]string{"status": string(f.Status), "queue": f.Queue, "kind": f.Kind, "view": string(f.View), "q": f.Search, "since": b.Since} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if f.RunID != 0 {
		v.Set("run", strconv.FormatInt(f.RunID, 10))
	}
	return v
}

type bulkPreviewData struct {
	base
	Action string
	Verb   string // the action's name as a button says it
	Past   string
	What   string
	Count  int64
	// Exact: Count is every match; else at least Count, the newest
	// Share of the table's ids read within the budget.
	Exact    bool
	Share    string
	CountAll string // the link that counts every match
	Statuses string
	Fields   []field
	Since    string
	Choices  []sinceChoice
	Back     string
	Query    url.Values
}

type field struct{ Name, Value string }

type sinceChoice struct {
	Value, Label string
	Selected     bool
}

// handleBulkPreview counts what a bulk action would select and offers to
// run it.
func (s *Server) handleBulkPreview(w http.ResponseWriter, r *http.Request) {
	b, ok := parseBulk(r.URL.Query(), time.Now())
	if !ok {
		s.renderError(w, r, http.StatusBadRequest, "bad bulk action")
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	count, exact, share := int64(len(b.IDs)), true, ""
	if len(b.IDs) == 0 {
		// Within the budget unless the operator asked for every match
		// (all=1): on a big table that count takes seconds.
		p := lockstep.BulkPreviewParams{Action: b.Action, Filter: b.Filter, Budget: s.cfg.PreviewBudget}
		if r.URL.Query().Get("all") == "1" {
			p.Budget = 0
		}
		res, err := s.client.BulkPreview(ctx, p)
		if err != nil {
			s.dbError(w, r, "count jobs", err)
			return
		}
		count, exact = res.Jobs, res.Exact
		if !exact {
			share = fmt.Sprintf("%d %%", max(1, res.IDsRead*100/max(res.IDsTotal, 1)))
		}
	}
	d := bulkPreviewData{
		base: s.base(r, "Bulk "+string(b.Action), "jobs"), Action: string(b.Action), Verb: capitalized(string(b.Action)), Past: b.Action.Past(),
		What: b.describe(), Count: count, Exact: exact, Share: share, Statuses: statusWords(b.Action.Statuses()), Since: b.Since,
	}
	vals := b.values()
	if !exact {
		all := maps.Clone(vals)
		all.Set("all", "1")
		d.CountAll = "/jobs/bulk?" + all.Encode()
	}
	for _, k := range []string{"action", "status", "queue", "kind", "view", "q", "run", "since"} {
		if v := vals.Get(k); v != "" {
			d.Fields = append(d.Fields, field{k, v})
		}
	}
	for _, id := range b.IDs {
		d.Fields = append(d.Fields, field{"id", strconv.FormatInt(id, 10)})
	}
	if len(b.IDs) == 0 && b.Action != lockstep.BulkCancel {
		for _, c := range bulkSince {
			d.Choices = append(d.Choices, sinceChoice{c.Value, c.Label, c.Value == b.Since})
		}
	}
	back := url.Values{}
	for _, k := range []string{"status", "queue", "kind", "view", "q"} {
		if v := vals.Get(k); v != "" {
			back.Set(k, v)
		}
	}
	d.Back = "/jobs"
	if len(back) > 0 {
		d.Back += "?" + back.Encode()
	}
	d.Query = vals
	s.render(w, r, http.StatusOK, "bulk.html", "layout", d)
}

// handleBulkStart starts a bulk action (the form carries the CSRF token,
// checked before any handler runs) and sends the browser to its progress.
func (s *Server) handleBulkStart(w http.ResponseWriter, r *http.Request) {
	b, ok := parseBulk(r.PostForm, time.Now())
	if !ok {
		s.renderError(w, r, http.StatusBadRequest, "bad bulk action")
		return
	}
	selected := int64(len(b.IDs))
	if n, err := strconv.ParseInt(r.PostForm.Get("count"), 10, 64); err == nil && n >= 0 && selected == 0 {
		selected = n // the preview's count: the progress bar's scale
	}
	op := s.bulk.start(b.Action, b.describe(), selected, len(b.IDs) > 0)
	s.logger.Info("dashboard: bulk "+string(b.Action), "op", op.ID, "what", op.What, "remote", r.RemoteAddr)
	go s.runBulk(op, b)
	http.Redirect(w, r, "/jobs/bulk/"+strconv.Itoa(op.ID), http.StatusSeeOther)
}

// runBulk runs op to its end, recording its progress after each batch.
func (s *Server) runBulk(op *bulkOp, b bulkRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), bulkTimeout)
	defer cancel()
	res, err := s.client.Bulk(ctx, lockstep.BulkParams{Action: b.Action, IDs: b.IDs, Filter: b.Filter,
		Progress: func(p lockstep.BulkProgress) {
			op.mu.Lock()
			op.progress = p
			op.mu.Unlock()
		}})
	op.mu.Lock()
	defer op.mu.Unlock()
	op.progress.BulkResult = res
	op.finished = time.Now()
	if err != nil {
		op.err = redact(err.Error())
		s.logger.Warn("dashboard: bulk "+string(b.Action)+" stopped", "op", op.ID, "err", op.err)
		return
	}
	s.logger.Info("dashboard: bulk "+string(b.Action)+" done", "op", op.ID, "changed", res.Changed, "skipped", res.Skipped, "batches", res.Batches)
}

type bulkStatusData struct {
	base
	Op bulkView
}

// handleBulkStatus shows a bulk action's progress; htmx polls it (the
// #bulk fragment) until the action is done.
func (s *Server) handleBulkStatus(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.Atoi(r.PathValue("id"))
	op := s.bulk.get(id)
	if err != nil || op == nil {
		s.renderError(w, r, http.StatusNotFound, "no such bulk action (this process remembers its last 50)")
		return
	}
	s.render(w, r, http.StatusOK, "bulkop.html", "layout", bulkStatusData{base: s.base(r, "Bulk "+string(op.Action), "jobs"), Op: op.view()})
}
