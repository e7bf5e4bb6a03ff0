package catalog_test

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
)

// No SQL is ever built from user input: every statement a driver may run
// is a constant of its catalogue, user values travel as placeholders, and
// the only text the executor splices in is the placeholder list of
// {ids} and the VALUES tuples of {rows}, whose shape depends on a count.

var catalogues = map[string]func() *catalog.Catalog{
	"mariadb":  func() *catalog.Catalog { return mysql.Catalog(true) },
	"mysql":    func() *catalog.Catalog { return mysql.Catalog(false) },
	"postgres": postgres.Catalog,
	"sqlite":   sqlite.Catalog,
}

// allowedLiterals are the only quoted strings any statement contains:
// statuses, SQLite's time format and JSON paths, PostgreSQL's interval unit
// and wake-up channel, the escape character of the job search's LIKE
// patterns, and the names of the jobs table and its optional text index
// (whose existence is read from the server's catalogue). A name or a value
// from a user can be none of them.
var allowedLiterals = map[string]bool{
	`''`: true, `'[]'`: true,
	`'WAITING'`: true, `'PENDING'`: true, `'BLOCKED'`: true, `'RUNNING'`: true, `'DONE'`: true, `'FAILED'`: true, `'CANCELLED'`: true, `'ACTIVE'`: true,
	`'1 microsecond'`: true, `'` + postgres.WakeChannel + `'`: true,
	`'%Y-%m-%d %H:%M:%f'`: true, `'%+.6f seconds'`: true, `'now'`: true, `'$[#]'`: true, `'$[0]'`: true, `'!'`: true,
	`'lockstep_jobs'`: true, `'lockstep_jobs_text'`: true,
}

var (
	quotedRE = regexp.MustCompile(`'[^']*'`)
	dollarRE = regexp.MustCompile(`\$(\d+)`)
)

func TestCatalogStatementsAreConstantsWithPlaceholders(t *testing.T) {
	for dialect, build := range catalogues {
		t.Run(dialect, func(t *testing.T) {
			c := build()
			require.NotEmpty(t, c.All())
			// Built again, the catalogue is the same: nothing in it
			// depends on state, input or time.
			require.True(t, reflect.DeepEqual(c.All(), build().All()), "the catalogue is a constant")

			for _, s := range c.All() {
				for _, text := range []string{s.SQL, s.RowSQL} {
					if text == "" {
						continue
					}
					for _, lit := range quotedRE.FindAllString(text, -1) {
						require.True(t, allowedLiterals[lit], "%s: unexpected literal %s in %q", s.Name, lit, text)
					}
					bare := quotedRE.ReplaceAllString(text, "''")
					bare = strings.NewReplacer("{ids}", "", "{keys}", "", "{rows}", "").Replace(bare)
					// The rate prune's index hints, in each MySQL-family
					// server's own words, are the one comment allowed.
					for _, hint := range mysql.StartsPruneHints {
						bare = strings.ReplaceAll(bare, hint, "")
					}
					for _, bad := range []string{`'`, `"`, "`", "%", "{", "}", ";", "--", "/*", "\\", "\x00"} {
						if bad == `'` {
							bare = strings.ReplaceAll(bare, "''", "")
						}
						require.NotContains(t, bare, bad, "%s: %q", s.Name, text)
					}
					if c.ArrayParams() {
						require.NotContains(t, bare, "?", "%s: PostgreSQL binds $n", s.Name)
					} else {
						require.Empty(t, dollarRE.FindAllString(bare, -1), "%s: this dialect binds ?", s.Name)
					}
				}
				if c.ArrayParams() {
					// $1..$n, each used, none skipped.
					seen := map[int]bool{}
					top := 0
					for _, m := range dollarRE.FindAllStringSubmatch(s.SQL, -1) {
						n, err := strconv.Atoi(m[1])
						require.NoError(t, err)
						seen[n] = true
						top = max(top, n)
					}
					for n := 1; n <= top; n++ {
						require.True(t, seen[n], "%s: $%d is missing in %q", s.Name, n, s.SQL)
					}
				}
				require.Equal(t, s.IDList && !c.ArrayParams(), strings.Contains(s.SQL, "{ids}"), "%s: {ids} only in IDList statements", s.Name)
				require.Equal(t, s.Rows, strings.Contains(s.SQL, "{rows}"), "%s: {rows} only in Rows statements", s.Name)
			}
		})
	}
}

// The text BindIDs and BindRows splice in depends only on how many ids or
// rows there are, never on their values.
func TestCatalogBindingsDependOnCountsOnly(t *testing.T) {
	for dialect, build := range catalogues {
		t.Run(dialect, func(t *testing.T) {
			c := build()
			for _, s := range c.All() {
				if s.IDList {
					for n := 0; n <= 3; n++ {
						a, b := make([]int64, n), make([]int64, n)
						for i := range n {
							a[i], b[i] = int64(987654321+i), int64(-5-i)
						}
						ta, argsA := c.BindIDs(s, a, "user's 'queue'; --")
						tb, _ := c.BindIDs(s, b, "other")
						require.Equal(t, ta, tb, "%s: the text depends on the ids", s.Name)
						require.NotContains(t, ta, "98765432", s.Name)
						require.NotContains(t, ta, "user's", s.Name)
						require.Equal(t, "user's 'queue'; --", argsA[0], "%s: values stay arguments", s.Name)
						if c.ArrayParams() {
							require.Equal(t, s.SQL, ta, s.Name)
							require.Len(t, argsA, 2, s.Name)
						} else {
							want := "NULL"
							if n > 0 {
								want = strings.TrimSuffix(strings.Repeat("?,", n), ",")
							}
							require.Equal(t, strings.Replace(s.SQL, "{ids}", want, 1), ta, s.Name)
							require.Len(t, argsA, 1+n, s.Name)
						}
					}
				}
				if s.Rows {
					for n := 1; n <= 3; n++ {
						rows := strings.TrimSuffix(strings.Repeat(s.RowSQL+",", n), ",")
						require.Equal(t, strings.Replace(s.SQL, "{rows}", rows, 1), c.BindRows(s, n), fmt.Sprintf("%s, %d rows", s.Name, n))
					}
				}
			}
		})
	}
}
