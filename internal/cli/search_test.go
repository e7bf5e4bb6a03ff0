package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCLIJobsSearch: jobs --search finds jobs by text in their args or
// metadata, case-insensitively, with LIKE's wildcards taken literally.
func TestCLIJobsSearch(t *testing.T) {
	forEachDialect(t, func(t *testing.T, l *lockstepCLI) {
		invoice := l.enqueue("mail", `{"to": "Ada@Example.com", "subject": "invoice 50% off"}`)
		tagged := l.enqueue("mail", "--metadata", `{"tenant": "acme_corp"}`, `{"to": "bob@example.com"}`)
		other := l.enqueue("mail", `{"to": "carol@example.com", "subject": "invoice 50x"}`)

		var page jobPageOut
		l.json(&page, "jobs", "--search", "ada@example")
		require.Equal(t, []int64{invoice}, ids(page.Jobs), "case-insensitive")
		l.json(&page, "jobs", "--search", "50%")
		require.Equal(t, []int64{invoice}, ids(page.Jobs), "a %% is a %%, not a wildcard")
		l.json(&page, "jobs", "--search", "acme_corp")
		require.Equal(t, []int64{tagged}, ids(page.Jobs), "metadata too")
		l.json(&page, "jobs", "--search", "acme_")
		require.Equal(t, []int64{tagged}, ids(page.Jobs))
		l.json(&page, "jobs", "--search", "acmeXcorp")
		require.Empty(t, page.Jobs, "an _ is an _")
		l.json(&page, "jobs", "--search", "invoice")
		require.Equal(t, []int64{other, invoice}, ids(page.Jobs))
		require.Equal(t, "no jobs\n", l.OK("jobs", "--search", "nobody"))
		require.Equal(t, fmt.Sprintf("lockstep: --search is at most 200 bytes, got %d", 201), l.Fail("jobs", "--search", strings.Repeat("x", 201)))
	})
}
