package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/clitest"
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

// TestCLIMigrateTextIndex: migrate text-index creates, reports and drops
// the job search's optional text index; with it, jobs --search finds a job
// below the page's window in one page; SQLite says it has none.
func TestCLIMigrateTextIndex(t *testing.T) {
	forEachDialect(t, func(t *testing.T, l *lockstepCLI) {
		deep := l.enqueue("mail", `{"to": "Ada@Example.com", "order": "ACME-4711"}`)
		for i := range 12 {
			l.enqueue("mail", fmt.Sprintf(`{"n": %d}`, i))
		}
		var page jobPageOut
		l.json(&page, "jobs", "--search", "acme-4711", "--scan", "10")
		require.Empty(t, page.Jobs)
		require.False(t, page.Indexed)
		require.NotZero(t, page.Next, "older ids are left to the next page")

		if strings.HasPrefix(l.DSN, "sqlite:") {
			require.Equal(t, "lockstep: this database has no text index for the job search: its search reads windows of ids", l.Fail("migrate", "text-index", "up"))
			return
		}
		require.Contains(t, l.OK("migrate", "text-index", "status"), "absent")
		require.Equal(t, "text index lockstep_jobs_text: created\n", l.OK("migrate", "text-index", "up"))
		require.Equal(t, "text index lockstep_jobs_text: nothing to do (it exists)\n", l.OK("migrate", "text-index", "up"))
		require.Contains(t, l.OK("migrate", "text-index", "status"), "present")

		l.json(&page, "jobs", "--search", "acme-4711", "--scan", "10")
		require.Equal(t, []int64{deep}, ids(page.Jobs))
		require.True(t, page.Indexed)
		require.Zero(t, page.Next)
		require.Equal(t, "no match: the search went through every job by the text index\n", l.OK("jobs", "--search", "nobody-here", "--scan", "10"))

		require.Equal(t, "text index lockstep_jobs_text: dropped\n", l.OK("migrate", "text-index", "down"))
		require.Contains(t, l.OK("migrate", "text-index", "status"), "absent")
	})
}

// TestCLIMigrateTextIndexPrint: the SQL for users' own migration tools,
// with no database.
func TestCLIMigrateTextIndexPrint(t *testing.T) {
	t.Parallel()
	l := &lockstepCLI{&clitest.CLI{T: t, Bin: clitest.Binary(t)}}
	require.Contains(t, l.OK("migrate", "text-index", "print", "--dialect", "postgres"), "gin_trgm_ops")
	require.Contains(t, l.OK("migrate", "text-index", "print", "--dialect", "mysql"), "ADD FULLTEXT INDEX lockstep_jobs_text (args, metadata)")
	require.Contains(t, l.OK("migrate", "text-index", "print", "--dialect", "postgres", "--down"), "DROP INDEX CONCURRENTLY IF EXISTS lockstep_jobs_text")
	require.Equal(t, "lockstep: this database has no text index for the job search: its search reads windows of ids", l.Fail("migrate", "text-index", "print", "--dialect", "sqlite"))
}
