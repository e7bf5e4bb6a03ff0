package deadlock

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sidecar is NAME.facts.json: what a careful reader recovers by hand from
// NAME.txt (testdata/corpus/README.md).
type sidecar struct {
	Source       string        `json:"source"`
	Server       string        `json:"server"`
	Form         string        `json:"form"`
	Pattern      string        `json:"pattern"`
	Victim       int           `json:"victim"`
	Warnings     int           `json:"warnings"`
	Transactions []sidecarTrx  `json:"transactions"`
	Notes        string        `json:"notes"`
	Extra        []interface{} `json:"-"`
}

type sidecarTrx struct {
	Number    int           `json:"number"`
	TrxID     string        `json:"trx_id"`
	Statement string        `json:"statement"`
	Waits     *sidecarLock  `json:"waits"`
	Holds     []sidecarLock `json:"holds"`
}

type sidecarLock struct {
	Table    string   `json:"table"`
	Index    string   `json:"index"`
	Mode     string   `json:"mode"`
	Kind     string   `json:"kind"`
	Key      []string `json:"key"`
	Inferred bool     `json:"inferred"`
}

// corpusRoots are the folders TestCorpus walks. LOCKSTEP_DEADLOCK_CORPUS
// (a list of folders) replaces them, to try a corpus being written
// elsewhere before it is merged.
func corpusRoots() []string {
	if env := os.Getenv("LOCKSTEP_DEADLOCK_CORPUS"); env != "" {
		return filepath.SplitList(env)
	}
	return []string{filepath.Join("testdata", "corpus", "public"), filepath.Join("testdata", "corpus", "generated")}
}

// TestCorpus decodes every report of the corpus (with its schema file, as
// --schema would) and checks every fact its sidecar states.
func TestCorpus(t *testing.T) {
	var files []string
	for _, root := range corpusRoots() {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return filepath.SkipDir
				}
				return err
			}
			if !d.IsDir() && strings.HasSuffix(p, ".txt") {
				files = append(files, p)
			}
			return nil
		})
		require.NoError(t, err)
	}
	sort.Strings(files)
	var tot struct{ reports, facts, named, notRecognised, byPatternWant int }
	for _, txt := range files {
		base := strings.TrimSuffix(txt, ".txt")
		t.Run(strings.TrimPrefix(base, filepath.Join("testdata", "corpus")+string(filepath.Separator)), func(t *testing.T) {
			b, err := os.ReadFile(base + ".facts.json")
			require.NoError(t, err, "every corpus report needs its sidecar %s.facts.json", base)
			var sc sidecar
			require.NoError(t, json.Unmarshal(b, &sc), "sidecar %s.facts.json", base)
			in, err := os.ReadFile(txt)
			require.NoError(t, err)
			var opt Options
			if s, err := os.ReadFile(base + ".schema.sql"); err == nil {
				schema, err := ParseSchema(string(s))
				require.NoError(t, err, "schema file %s.schema.sql", base)
				opt.Schema = schema
			}
			rs, err := Decode(string(in), opt)
			require.NoError(t, err, "%s must decode", txt)
			require.NotEmpty(t, rs)
			r := rs[0]
			c := &factChecker{t: t, r: r}
			c.check(sc)
			tot.reports++
			tot.facts += c.n
			if r.PatternName() == sc.Pattern {
				tot.named++
			} else {
				tot.notRecognised++
			}
		})
	}
	t.Logf("corpus: %d reports, %d facts checked, pattern named right in %d, not recognised in %d",
		tot.reports, tot.facts, tot.named, tot.notRecognised)
}

type factChecker struct {
	t    *testing.T
	r    *Report
	n    int
	errs []string
}

func (c *factChecker) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

func (c *factChecker) check(sc sidecar) {
	r := c.r
	c.n++
	if r.Victim != sc.Victim {
		c.fail("victim: decoded (%d), sidecar (%d)", r.Victim, sc.Victim)
	}
	c.n++
	if len(r.Warnings) != sc.Warnings {
		c.fail("warnings: decoded %d %q, sidecar %d", len(r.Warnings), r.Warnings, sc.Warnings)
	}
	c.n++
	if got := r.PatternName(); got != sc.Pattern && got != PatternNotRecognised {
		c.fail("pattern: decoded %s, sidecar %s (a wrong name; only %s or not-recognised is allowed)", got, sc.Pattern, sc.Pattern)
	}
	for _, st := range sc.Transactions {
		tx := r.Transaction(st.Number)
		c.n++
		if tx == nil {
			c.fail("transaction (%d): not decoded", st.Number)
			continue
		}
		if st.TrxID != "" {
			c.n++
			if fmt.Sprint(tx.TrxID) != st.TrxID {
				c.fail("(%d) trx id: decoded %d (printed %q), sidecar %s", st.Number, tx.TrxID, tx.TrxIDPrinted, st.TrxID)
			}
		}
		if st.Statement != "" {
			c.n++
			if !strings.Contains(collapse(tx.Query), collapse(st.Statement)) {
				c.fail("(%d) statement: decoded %q does not contain %q", st.Number, tx.Query, st.Statement)
			}
		}
		if st.Waits != nil {
			c.n++
			if tx.Waits == nil {
				c.fail("(%d) waits: decoded none, sidecar %+v", st.Number, *st.Waits)
			} else if msg := lockMatches(tx.Waits, *st.Waits); msg != "" {
				c.fail("(%d) waits: %s", st.Number, msg)
			}
		}
		for _, h := range st.Holds {
			c.n++
			var msgs []string
			found := false
			for _, l := range tx.Holds {
				msg := lockMatches(l, h)
				if msg == "" && l.Inferred != h.Inferred {
					msg = fmt.Sprintf("inferred: decoded %v, sidecar %v", l.Inferred, h.Inferred)
				}
				if msg == "" {
					found = true
					break
				}
				msgs = append(msgs, msg)
			}
			if !found {
				c.fail("(%d) holds %s %s %s %s key %q inferred=%v: not among the decoded holds (%s)", st.Number, h.Table, h.Index, h.Mode, h.Kind, h.Key, h.Inferred, strings.Join(msgs, "; "))
			}
		}
	}
	if len(c.errs) > 0 {
		c.t.Errorf("%d fact(s) do not match:\n  %s", len(c.errs), strings.Join(c.errs, "\n  "))
	}
}

// lockMatches checks a decoded lock against a sidecar's: same table,
// index, mode and kind, and a record whose key starts with the listed key.
func lockMatches(l *Lock, want sidecarLock) string {
	// An empty mode or kind in a sidecar is one the hand reader could not
	// tell (an inferred hold's); it is not checked.
	if l.Table != want.Table || want.Index != "" && l.Index != want.Index || want.Mode != "" && l.Mode != want.Mode || want.Kind != "" && string(l.Kind) != want.Kind {
		return fmt.Sprintf("decoded %s %s %s %s, sidecar %s %s %s %s", l.Table, l.Index, l.Mode, l.Kind, want.Table, want.Index, want.Mode, want.Kind)
	}
	if len(want.Key) == 0 {
		return ""
	}
	var keys []string
	for _, rec := range l.Records {
		got := rec.KeyValues()
		if rec.Supremum {
			got = []string{"supremum"}
		}
		keys = append(keys, fmt.Sprintf("%q", got))
		if hasPrefix(got, want.Key) {
			return ""
		}
	}
	return fmt.Sprintf("no record with key %q (decoded: %s)", want.Key, strings.Join(keys, ", "))
}

func hasPrefix(got, want []string) bool {
	if len(got) < len(want) {
		return false
	}
	for i := range want {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }
