package dashboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep-queue/lockstep"
)

// base is what every page's layout needs.
type base struct {
	Title   string
	Nav     string // the active nav entry
	CSRF    string
	Logout  bool // logged in with the session cookie: offer to log out
	Dialect string
	// Refresh, when set, makes the page reload itself after that many
	// seconds (a page showing that the database is unavailable).
	Refresh int
}

func (s *Server) base(r *http.Request, title, nav string) base {
	ri := info(r)
	return base{Title: title, Nav: nav, CSRF: ri.csrfToken, Logout: ri.session, Dialect: s.cfg.Dialect}
}

// parseTemplates builds one template set per page: the layout and the
// shared partials, plus the page's own file.
func parseTemplates() (map[string]*template.Template, error) {
	shared := template.New("").Funcs(funcs)
	if _, err := shared.ParseFS(templateFS, "templates/layout.html", "templates/partials.html"); err != nil {
		return nil, fmt.Errorf("dashboard: templates: %w", err)
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimPrefix(n, "templates/")
		if name == "layout.html" || name == "partials.html" {
			continue
		}
		t, err := shared.Clone()
		if err != nil {
			return nil, err
		}
		if _, err := t.ParseFS(templateFS, n); err != nil {
			return nil, fmt.Errorf("dashboard: templates: %w", err)
		}
		out[name] = t
	}
	out["partials.html"] = shared
	return out, nil
}

// render executes one template of a page into a buffer first, so that a
// template error becomes a clean 500 instead of half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, page, name string, data any) {
	t, ok := s.pages[page]
	if !ok {
		s.logger.Error("dashboard: no such template", "page", page)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		s.logger.Error("dashboard: render", "page", page, "template", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

type errorData struct {
	base
	Status  int
	Message string
	// Unavailable: the database could not be reached.
	Unavailable bool
}

// renderError shows an error page (or, to htmx, just the message).
func (s *Server) renderError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if r.Header.Get("HX-Request") != "" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(msg))
		return
	}
	s.render(w, r, status, "error.html", "layout", errorData{base: s.base(r, http.StatusText(status), ""), Status: status, Message: msg})
}

// reURLPassword finds the password of a URL-form DSN
// (scheme://user:password@host); reKVPassword a key=value one;
// reTCPPassword a go-sql-driver/mysql one (user:password@tcp(host)/db).
// Database errors do not normally carry any, but the dashboard never
// shows one even if they do.
//
// A password may hold '/', ':' and '@' (go-sql-driver/mysql reads it up
// to the last '@' before the address, and people type them unescaped in
// URLs too), so it runs, greedily, to the last '@' of the DSN, which
// ends at white space: over-redacting a '@' in a query string is better
// than showing the rest of a password.
var (
	reURLPassword = regexp.MustCompile(`(://[^:/@\s]*):\S*@`)
	reKVPassword  = regexp.MustCompile(`(?i)(password\s*=\s*)('[^']*'|\S+)`)
	reTCPPassword = regexp.MustCompile(`([^\s:/@"'=]+):\S*@(\w*\()`)
)

func redact(s string) string {
	s = reURLPassword.ReplaceAllString(s, "$1:***@")
	s = reKVPassword.ReplaceAllString(s, "$1***")
	s = reTCPPassword.ReplaceAllString(s, "$1:***@$2")
	return s
}

var funcs = template.FuncMap{
	"count":     fmtBounded,
	"num":       fmtAny,
	"ts":        fmtTime,
	"when":      fmtWhen,
	"ago":       fmtAgo,
	"dur":       fmtDur,
	"rate":      fmtRate,
	"statusCls": statusClass,
	"lower":     strings.ToLower,
	"statuses":  func() []lockstep.JobStatus { return allStatuses },
	"add":       func(a, b int) int { return a + b },
	"fadd":      func(a, b float64) float64 { return a + b },
	"half":      func(a float64) float64 { return a / 2 },
	"graphID":   graphID,
	"queueURL":  queueURL,
	"limits":    limitsText,
}

// allStatuses is every status in a job's order of life, WAITING (for its
// dependencies) first, BLOCKED (held back by its queue's limits) between
// PENDING and RUNNING: the queue table's columns, the filters.
var allStatuses = []lockstep.JobStatus{
	lockstep.StatusWaiting, lockstep.StatusPending, lockstep.StatusBlocked, lockstep.StatusRunning,
	lockstep.StatusDone, lockstep.StatusFailed, lockstep.StatusCancelled,
}

// liveStatuses are the statuses of a job that has not ended: the ones a
// cancel moves to CANCELLED, and what keeps a run active.
var liveStatuses = []lockstep.JobStatus{
	lockstep.StatusWaiting, lockstep.StatusPending, lockstep.StatusBlocked, lockstep.StatusRunning,
}

// fmtAny is fmtInt for the integer types templates hold.
func fmtAny(n any) string {
	switch v := n.(type) {
	case int:
		return fmtInt(int64(v))
	case int64:
		return fmtInt(v)
	}
	return fmt.Sprint(n)
}

// fmtInt writes n with thousands separators.
func fmtInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// fmtBounded writes a count that may have stopped at its limit.
func fmtBounded(c lockstep.BoundedCount) string {
	if c.Capped {
		return "≥" + fmtInt(c.N)
	}
	return fmtInt(c.N)
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

// fmtWhen shows t relative to now ("3m12s ago", "in 59m"), with the
// absolute time on hover and in the datetime attribute: an operator reads
// "how long ago" at a glance and the exact time when it matters.
func fmtWhen(t time.Time) template.HTML {
	if t.IsZero() {
		return "—"
	}
	return template.HTML(fmt.Sprintf(`<time datetime="%s" title="%s">%s</time>`,
		t.UTC().Format(time.RFC3339Nano), fmtTime(t), template.HTMLEscapeString(fmtAgo(t, time.Now()))))
}

// fmtAgo is how long before now t was.
func fmtAgo(t, now time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + fmtDur(-d)
	}
	return fmtDur(d) + " ago"
}

func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < 48*time.Hour:
		return d.Round(time.Second).String()
	}
	return fmt.Sprintf("%.1fd", d.Hours()/24)
}

func fmtRate(r float64) string {
	switch {
	case r == 0:
		return "0"
	case r < 10:
		return strconv.FormatFloat(r, 'f', 2, 64)
	case r < 1000:
		return strconv.FormatFloat(r, 'f', 1, 64)
	}
	return fmtInt(int64(math.Round(r)))
}

func statusClass(s lockstep.JobStatus) string {
	return "st-" + strings.ToLower(string(s))
}

// prettyJSON indents JSON for display, at most limit bytes of it.
// encoding/json stores <, > and & as \u003c, \u003e and \u0026; they are
// shown as themselves (the template escapes them for HTML).
func prettyJSON(raw []byte, limit int) (string, bool) {
	var buf bytes.Buffer
	text := string(raw)
	if json.Indent(&buf, raw, "", "  ") == nil {
		text = unescapeHTMLInJSON(buf.String())
	}
	if len(text) > limit {
		return strings.ToValidUTF8(text[:limit], ""), true
	}
	return text, false
}

// jsonBlock is a job's metadata or output as the job page shows it.
type jsonBlock struct {
	Text      string
	Truncated bool
}

// newJSONBlock is nil when the job has no such value.
func newJSONBlock(raw []byte) *jsonBlock {
	if raw == nil {
		return nil
	}
	b := &jsonBlock{}
	b.Text, b.Truncated = prettyJSON(raw, argsLimit)
	return b
}

// unescapeHTMLInJSON undoes json.HTMLEscape inside the strings of valid
// JSON, walking escapes pairwise so that an escaped backslash followed by
// "u003c" stays as it is.
func unescapeHTMLInJSON(s string) string {
	if !strings.Contains(s, `\u00`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		if s[i+1] == 'u' && i+6 <= len(s) {
			switch strings.ToLower(s[i+2 : i+6]) {
			case "003c":
				b.WriteByte('<')
				i += 5
				continue
			case "003e":
				b.WriteByte('>')
				i += 5
				continue
			case "0026":
				b.WriteByte('&')
				i += 5
				continue
			}
		}
		b.WriteByte(c)
		b.WriteByte(s[i+1])
		i++
	}
	return b.String()
}
