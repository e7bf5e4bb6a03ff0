package sqlexec

import (
	"context"
	"strings"
	"unicode"

	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// Text-index words: what InnoDB's FULLTEXT parser and pg_trgm index are
// runs of letters, digits (and, for InnoDB, '_') of at least three
// characters; a longer word is not indexed by InnoDB past 84.
const (
	minSearchWord  = 3
	maxSearchWord  = 84
	maxSearchWords = 8
)

// searchWords are the search's words the text index can find: runs of
// letters, digits and '_' of minSearchWord to maxSearchWord characters,
// at most maxSearchWords of them.
func searchWords(search string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(search, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
	}) {
		if n := len([]rune(w)); n < minSearchWord || n > maxSearchWord {
			continue
		}
		out = append(out, w)
		if len(out) == maxSearchWords {
			break
		}
	}
	return out
}

// booleanQuery is a MySQL boolean-mode query requiring each word at the
// beginning of a word of the text, in any of the case forms a binary
// collation tells apart (as typed, lower, upper, capitalised):
// +(word* WORD* Word*) ... . The words hold no operator characters.
func booleanQuery(words []string) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("+(")
		seen := map[string]bool{}
		lower := strings.ToLower(w)
		r := []rune(lower)
		r[0] = unicode.ToUpper(r[0])
		for _, form := range []string{w, lower, strings.ToUpper(w), string(r)} {
			if seen[form] {
				continue
			}
			if len(seen) > 0 {
				b.WriteByte(' ')
			}
			seen[form] = true
			b.WriteString(form)
			b.WriteByte('*')
		}
		b.WriteByte(')')
	}
	return b.String()
}

// HasTextIndex reports whether the optional text index
// of the job search exists (false where the dialect has none).
func (e *Executor) HasTextIndex(ctx context.Context) (bool, error) {
	if !e.caps().TextIndex {
		return false, nil
	}
	var n int64
	if err := e.queryRow(ctx, catalog.TextIndexExists, nil, &n); err != nil {
		return false, e.wrap("text index", err)
	}
	return n > 0, nil
}

// searchBelow continues a job page whose window held fewer than limit
// matches of a search through the text index: the newest matches below
// the window's floor, up to limit in all. It reports false, changing
// nothing, when the search has no word the index holds or the index does
// not exist.
func (e *Executor) searchBelow(ctx context.Context, p *rowtype.JobPageParams, page *rowtype.JobPage, floor int64, limit int, filter []any) (bool, error) {
	words := searchWords(p.Search)
	if len(words) == 0 {
		return false, nil
	}
	ok, err := e.HasTextIndex(ctx)
	if err != nil || !ok {
		return false, err
	}
	args := append(append([]any{booleanQuery(words), floor}, filter...), limit-len(page.Jobs))
	rows, err := e.query(ctx, e.q, catalog.JobSearch, e.cat().Get(catalog.JobSearch).SQL, args...)
	if err != nil {
		return false, err
	}
	more, err := scanJobs(rows)
	if err != nil {
		return false, err
	}
	page.Jobs = append(page.Jobs, more...)
	page.Indexed = true
	page.Next = 0
	if len(page.Jobs) == limit {
		page.Next = page.Jobs[len(page.Jobs)-1].ID
	}
	return true, nil
}
