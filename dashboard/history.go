package dashboard

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// historyRange is a choice of the history charts: how far back, in steps
// of what (the rollup's minutes summed in Go), and how ticks are labelled.
type historyRange struct {
	Key, Label string
	Span, Step time.Duration
	Tick       time.Duration
	TickFormat string
}

var historyRanges = []historyRange{
	{"1h", "last hour", time.Hour, time.Minute, 10 * time.Minute, "15:04"},
	{"6h", "last 6 hours", 6 * time.Hour, 5 * time.Minute, time.Hour, "15:04"},
	{"24h", "last 24 hours", 24 * time.Hour, 15 * time.Minute, 4 * time.Hour, "15:04"},
	{"7d", "last 7 days", 7 * 24 * time.Hour, 2 * time.Hour, 24 * time.Hour, "Jan 2"},
}

func findRange(key string) historyRange {
	for _, r := range historyRanges {
		if r.Key == key {
			return r
		}
	}
	return historyRanges[0]
}

type option struct {
	Value, Label string
	Selected     bool
}

// historyView is the history section: the chosen range, queue and kind,
// and the two charts.
type historyView struct {
	// Action is where the choices go without htmx (the page itself);
	// FixedQueue is set on a queue's page, which charts that queue only.
	Action     string
	FixedQueue string
	Range      historyRange
	Ranges     []option
	Queues     []option
	Kinds      []option
	Queue      string
	Kind       string
	Rate       svgChart
	Failure    svgChart
	Done       int64
	Failed     int64
	Retried    int64
	Cancelled  int64
	Error      string
}

// svgChart is a line chart drawn on the server: a plot area with labelled
// axes, tick labels and one polyline per series.
type svgChart struct {
	ID             string
	Title          string
	YLabel, XLabel string
	Width, Height  float64
	Left, Top      float64 // the plot area's origin
	PlotW, PlotH   float64
	YTicks, XTicks []tick
	Series         []series
	Hovers         []hover
}

type tick struct {
	X, Y  float64
	Label string
}

type series struct {
	Name, Class string
	Points      string
	LegendX     float64
}

type hover struct {
	X, W  float64
	Title string
}

const (
	chartW, chartH = 760.0, 240.0
	chartLeft      = 64.0
	chartRight     = 16.0
	chartTop       = 28.0
	chartBottom    = 44.0
)

// niceCeil is the smallest of 1, 2, 2.5, 5 × 10^k at or above v (1 at
// least): the top of an axis whose ticks are round numbers.
func niceCeil(v float64) float64 {
	if v <= 0.25 {
		return 0.25
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func fmtNum(v float64) string {
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strings.TrimRight(strings.TrimRight(strconv.FormatFloat(v, 'f', 2, 64), "0"), ".")
}

// newChart lays out a chart of values (one slice per series, each a value
// per step of pts) on a y axis from 0 to top.
func newChart(id, title, yLabel string, rg historyRange, pts []rowtype.HistoryRow, top float64, vals [][]float64, names, classes []string, hoverText func(i int) string) svgChart {
	c := svgChart{ID: id, Title: title, YLabel: yLabel, XLabel: "time (UTC)", Width: chartW, Height: chartH,
		Left: chartLeft, Top: chartTop, PlotW: chartW - chartLeft - chartRight, PlotH: chartH - chartTop - chartBottom}
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		c.YTicks = append(c.YTicks, tick{Y: c.Top + c.PlotH - c.PlotH*float64(i)/4, Label: fmtNum(v)})
	}
	if len(pts) == 0 {
		return c
	}
	from := pts[0].Bucket
	span := rg.Span
	xOf := func(t time.Time) float64 { return c.Left + c.PlotW*float64(t.Sub(from))/float64(span) }
	for t := from.Truncate(rg.Tick); !t.After(from.Add(span)); t = t.Add(rg.Tick) {
		if t.Before(from) {
			continue
		}
		c.XTicks = append(c.XTicks, tick{X: xOf(t), Label: t.UTC().Format(rg.TickFormat)})
	}
	w := c.PlotW * float64(rg.Step) / float64(span)
	for si, vs := range vals {
		var b strings.Builder
		for i, v := range vs {
			x := xOf(pts[i].Bucket) + w/2
			y := c.Top + c.PlotH - c.PlotH*min(v, top)/top
			fmt.Fprintf(&b, "%.1f,%.1f ", x, y)
		}
		c.Series = append(c.Series, series{Name: names[si], Class: classes[si], Points: strings.TrimSpace(b.String()), LegendX: c.Left + 8 + float64(si)*110})
	}
	for i := range pts {
		c.Hovers = append(c.Hovers, hover{X: xOf(pts[i].Bucket), W: w, Title: hoverText(i)})
	}
	return c
}

// history reads the rollup for the request's range, queue and kind and
// lays out the charts. queue, when set, is fixed (a queue's page).
func (s *Server) history(r *http.Request, action, fixedQueue string) historyView {
	return s.historyRead(r, action, fixedQueue, true)
}

// historyRead is history that reads the rollup only when read is set: a
// page whose first read found the database unavailable draws empty charts
// rather than wait out a second ReadTimeout.
func (s *Server) historyRead(r *http.Request, action, fixedQueue string, read bool) historyView {
	q := r.URL.Query()
	rg := findRange(q.Get("range"))
	v := historyView{Action: action, FixedQueue: fixedQueue, Range: rg, Queue: q.Get("queue"), Kind: q.Get("kind")}
	if fixedQueue != "" {
		v.Queue = fixedQueue
	}
	for _, o := range historyRanges {
		v.Ranges = append(v.Ranges, option{Value: o.Key, Label: o.Label, Selected: o.Key == rg.Key})
	}
	// The range ends where the current step begins: a step still under
	// way (and not yet flushed by every process) would draw a false drop.
	now := time.Now().UTC()
	to := now.Truncate(rg.Step)
	from := to.Add(-rg.Span)
	// Two reads: the range of the chosen queue and kind (filtered in the
	// statement), and the last hour of every queue and kind, whose names
	// fill the lists (a short read, whatever the range).
	var rows, recent []rowtype.HistoryRow
	if s.client != nil && read {
		ctx, cancel := s.ctx(r)
		defer cancel()
		var err error
		rows, err = s.reader.History(ctx, lockstep.HistoryParams{Since: from, Until: to, Queue: v.Queue, Kind: v.Kind})
		if err == nil {
			recent, err = s.reader.History(ctx, lockstep.HistoryParams{Since: now.Add(-time.Hour), Queue: fixedQueue})
		}
		if err != nil {
			v.Error = "reading history: " + redact(err.Error())
			if !s.unavailable(err) {
				s.logger.Error("dashboard: reading history", "err", redact(err.Error()))
			}
		}
	}
	queues, kinds := map[string]bool{}, map[string]bool{}
	for _, h := range append(recent, rows...) {
		queues[h.Queue], kinds[h.Kind] = true, true
	}
	kept := rows
	// A chosen queue or kind stays a choice even with no rows now.
	if v.Queue != "" {
		queues[v.Queue] = true
	}
	if v.Kind != "" {
		kinds[v.Kind] = true
	}
	v.Queues = options(queues, v.Queue, "every queue")
	v.Kinds = options(kinds, v.Kind, "every kind")

	pts := rowtype.HistorySeries(kept, from, to, rg.Step)
	perMin := rg.Step.Minutes()
	done, failed, rate := make([]float64, len(pts)), make([]float64, len(pts)), make([]float64, len(pts))
	peak := 0.0
	for i, p := range pts {
		done[i], failed[i] = float64(p.Done)/perMin, float64(p.Failed)/perMin
		peak = max(peak, done[i], failed[i])
		if n := p.Done + p.Failed; n > 0 {
			rate[i] = 100 * float64(p.Failed) / float64(n)
		}
		v.Done += p.Done
		v.Failed += p.Failed
		v.Retried += p.Retried
		v.Cancelled += p.Cancelled
	}
	stepText := "minute"
	if rg.Step != time.Minute {
		stepText = strings.TrimSuffix(strings.TrimSuffix(rg.Step.String(), "0s"), "0m")
	}
	when := func(i int) string {
		return pts[i].Bucket.Format("Jan 2 15:04") + " UTC (" + stepText + ")"
	}
	v.Rate = newChart("history-rate", "Jobs per minute, "+rg.Label, "jobs/min", rg, pts, 4*niceCeil(peak/4), [][]float64{done, failed},
		[]string{"done", "failed"}, []string{"line-done", "line-failed"}, func(i int) string {
			return fmt.Sprintf("%s: %d done, %d failed (%s and %s jobs/min)", when(i), pts[i].Done, pts[i].Failed, fmtNum(done[i]), fmtNum(failed[i]))
		})
	v.Failure = newChart("history-failure", "Failure rate, "+rg.Label, "% failed", rg, pts, 100, [][]float64{rate},
		[]string{"failed / (done + failed)"}, []string{"line-rate"}, func(i int) string {
			return fmt.Sprintf("%s: %s%% failed", when(i), fmtNum(math.Round(rate[i]*10)/10))
		})
	return v
}

func options(set map[string]bool, chosen, all string) []option {
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	slices.Sort(names)
	out := []option{{Value: "", Label: all, Selected: chosen == ""}}
	for _, n := range names {
		out = append(out, option{Value: n, Label: n, Selected: n == chosen})
	}
	return out
}

// handleHistory is the history section alone, which its choices reload.
func (s *Server) handleHistory(w http.ResponseWriter, r *http.Request) {
	fixed := r.URL.Query().Get("fixed")
	action := "/"
	if fixed != "" {
		action = "/queue/" + url.PathEscape(fixed)
	}
	s.render(w, r, http.StatusOK, "partials.html", "history", s.history(r, action, fixed))
}

// ---- kinds ----

// kindSummary is one kind's finished work over the last hour and day.
type kindSummary struct {
	Kind      string
	Hour, Day kindCounts
}

type kindCounts struct {
	Done, Failed, Retried, Cancelled int64
	// Rate is the failure rate, failed / (done + failed), as text.
	Rate string
	// AvgRun is the average run time of the attempts counted, as text.
	AvgRun string
}

func newKindCounts(h rowtype.HistoryRow) kindCounts {
	k := kindCounts{Done: h.Done, Failed: h.Failed, Retried: h.Retried, Cancelled: h.Cancelled, Rate: "—", AvgRun: "—"}
	if n := h.Done + h.Failed; n > 0 {
		k.Rate = fmtNum(math.Round(1000*float64(h.Failed)/float64(n))/10) + "%"
	}
	if n := h.Attempts(); n > 0 {
		k.AvgRun = (time.Duration(h.RunMillis/n) * time.Millisecond).String()
	}
	return k
}

type kindsData struct {
	base
	Kinds []kindSummary
	Error string
}

// handleKinds is the kinds page: per kind, from the rollup.
func (s *Server) handleKinds(w http.ResponseWriter, r *http.Request) {
	d := kindsData{base: s.base(r, "Kinds", "kinds")}
	now := time.Now().UTC()
	ctx, cancel := s.ctx(r)
	defer cancel()
	rows, err := s.reader.History(ctx, lockstep.HistoryParams{Since: now.Add(-24 * time.Hour)})
	if err != nil {
		s.dbError(w, r, "reading history", err)
		return
	}
	hour, day := map[string]*rowtype.HistoryRow{}, map[string]*rowtype.HistoryRow{}
	hourFrom := rowtype.HistoryBucket(now.Add(-time.Hour))
	for _, h := range rows {
		if day[h.Kind] == nil {
			day[h.Kind], hour[h.Kind] = &rowtype.HistoryRow{}, &rowtype.HistoryRow{}
		}
		day[h.Kind].Add(h)
		if !h.Bucket.Before(hourFrom) {
			hour[h.Kind].Add(h)
		}
	}
	for kind, h := range day {
		d.Kinds = append(d.Kinds, kindSummary{Kind: kind, Hour: newKindCounts(*hour[kind]), Day: newKindCounts(*h)})
	}
	slices.SortFunc(d.Kinds, func(a, b kindSummary) int { return strings.Compare(a.Kind, b.Kind) })
	s.render(w, r, http.StatusOK, "kinds.html", "layout", d)
}
