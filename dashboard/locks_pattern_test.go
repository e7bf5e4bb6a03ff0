package dashboard

import (
	"bytes"
	"html/template"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/lockdiag/deadlock"
)

// renderDeadlocks renders the Locks page's content for reports.
func renderDeadlocks(t *testing.T, reports []*deadlock.Report) string {
	t.Helper()
	pages, err := parseTemplates()
	require.NoError(t, err)
	d := locksData{Kind: "innodb"}
	for _, r := range reports {
		d.Deadlocks = append(d.Deadlocks, viewDeadlock(&seenDeadlock{Report: r, SeenAt: time.Now(), Text: "report"}))
	}
	var buf bytes.Buffer
	require.NoError(t, pages["locks.html"].ExecuteTemplate(&buf, "content", d))
	return buf.String()
}

// TestLocksPageShowsEveryPattern: each of the decoder's patterns is shown
// with its own name, where it is, its explanation line by line and its
// fix — "vs PRIMARY" only for opposite index orders — and a report it does
// not recognise says so in the decoder's terms, with no fix.
func TestLocksPageShowsEveryPattern(t *testing.T) {
	patterns := []struct {
		p     *deadlock.Pattern
		where string
	}{
		{&deadlock.Pattern{Name: deadlock.PatternOppositeIndexOrder, Table: "app.jobs", Index: "idx_status", Secondary: "idx_status"}, "on app.jobs (idx_status vs PRIMARY)"},
		{&deadlock.Pattern{Name: deadlock.PatternOppositeRowOrder, Table: "app.accounts", Index: "PRIMARY"}, "on app.accounts (index PRIMARY)"},
		{&deadlock.Pattern{Name: deadlock.PatternGapInsert, Table: "app.orders", Index: "idx_customer"}, "on app.orders (index idx_customer)"},
		{&deadlock.Pattern{Name: deadlock.PatternShareUpgrade, Table: "app.stock", Index: "PRIMARY"}, "on app.stock (index PRIMARY)"},
		{&deadlock.Pattern{Name: deadlock.PatternDuplicateKey, Table: "app.users", Index: "uniq_email"}, "on app.users (index uniq_email)"},
		{&deadlock.Pattern{Name: deadlock.PatternForeignKey, Table: "app.parents", Index: "PRIMARY"}, "on app.parents (index PRIMARY)"},
		{&deadlock.Pattern{Name: deadlock.PatternAutoInc, Table: "app.events"}, "on app.events"},
		{&deadlock.Pattern{Name: deadlock.PatternCycle, Table: "app.a", Cycle: []int{1, 2, 3}}, "on app.a"},
		{&deadlock.Pattern{Name: deadlock.PatternTooDeep}, ""},
	}
	var reports []*deadlock.Report
	for _, c := range patterns {
		c.p.Explanation = c.p.Name + " first line <b>\n" + c.p.Name + " second line"
		c.p.Fix = "fix for " + c.p.Name
		reports = append(reports, &deadlock.Report{Pattern: c.p})
	}
	reports = append(reports, &deadlock.Report{}) // not recognised
	body := renderDeadlocks(t, reports)

	articles := strings.Split(body, `<article class="deadlock"`)[1:]
	require.Len(t, articles, len(patterns)+1)
	for i, c := range patterns {
		a := articles[i]
		require.Contains(t, a, `data-pattern="`+c.p.Name+`"`)
		line := "<strong>Pattern: " + c.p.Name + "</strong>"
		if c.where != "" {
			line += " " + c.where
		}
		require.Contains(t, a, line+"</p>", c.p.Name)
		require.Equal(t, c.p.Name == deadlock.PatternOppositeIndexOrder, strings.Contains(a, "vs PRIMARY"), c.p.Name)
		require.Contains(t, a, "<p>"+c.p.Name+" first line &lt;b&gt;</p><p>"+c.p.Name+" second line</p>", "the explanation, escaped, a paragraph a line")
		require.Contains(t, a, `<strong>Fix:</strong> fix for `+c.p.Name+`</p>`)
	}
	last := articles[len(patterns)]
	require.Contains(t, last, `data-pattern="not-recognised"`)
	require.Contains(t, last, "<strong>Pattern: not-recognised</strong></p>")
	require.Contains(t, last, "do not prove any of the known shapes; no fix is guessed")
	require.NotContains(t, last, "Fix:")
	require.NotContains(t, body, "not the same two indexes")
}

// TestLocksPageShowsDecodedReports: the decoder's own sample reports,
// decoded, are shown with the pattern it named.
func TestLocksPageShowsDecodedReports(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "lockdiag", "deadlock", "testdata", "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	shown := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		reports, err := deadlock.Decode(string(raw), deadlock.Options{})
		if err != nil || len(reports) == 0 {
			continue // a file that is not a report (the decoder's tests say which)
		}
		body := renderDeadlocks(t, reports)
		shown += len(reports)
		for _, r := range reports {
			require.Contains(t, body, "<strong>Pattern: "+template.HTMLEscapeString(r.PatternName())+"</strong>", f)
			if r.Pattern != nil {
				require.Contains(t, body, "<strong>Fix:</strong> "+template.HTMLEscapeString(r.Pattern.Fix), f)
			}
		}
	}
	require.Positive(t, shown, "some sample decoded")
}
