package corpusgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/lockdiag/deadlock"
)

// sidecar is NAME.facts.json, in the format testdata/corpus/README.md
// defines.
type sidecar struct {
	Source       string       `json:"source"`
	Server       string       `json:"server"`
	Form         string       `json:"form"`
	Pattern      string       `json:"pattern"`
	Victim       int          `json:"victim"`
	Warnings     int          `json:"warnings,omitempty"`
	Transactions []sidecarTrx `json:"transactions"`
	Notes        string       `json:"notes,omitempty"`
}

type sidecarTrx struct {
	Number    int           `json:"number"`
	TrxID     string        `json:"trx_id"`
	Statement string        `json:"statement"`
	Waits     *sidecarLock  `json:"waits,omitempty"`
	Holds     []sidecarLock `json:"holds,omitempty"`
}

type sidecarLock struct {
	Table    string   `json:"table"`
	Index    string   `json:"index,omitempty"`
	Mode     string   `json:"mode"`
	Kind     string   `json:"kind"`
	Key      []string `json:"key,omitempty"`
	Inferred bool     `json:"inferred,omitempty"`
}

// readSidecar reads a sidecar strictly: a misspelt field is an error, not
// a fact silently left unchecked.
func readSidecar(t *testing.T, path string) sidecar {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err, "the sidecar is written by hand after reading the report; see testdata/corpus/README.md")
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var sc sidecar
	require.NoError(t, dec.Decode(&sc), path)
	return sc
}

// checks chooses which of a sidecar's facts compareReport holds the
// decoder to.
type checks struct {
	// trxIDs compares transaction ids: true for the committed report the
	// sidecar was written from, false for a live run (ids differ per run).
	trxIDs bool
	// anyOrder matches transactions by statement instead of by number,
	// and leaves the victim's number unchecked: for a scenario whose
	// sessions the server wakes together (scenario.racy), which one InnoDB
	// numbers (1) and rolls back varies from run to run.
	anyOrder bool
	// keys, pattern and holds: the decoded keys (with the schema), the
	// pattern's name, and the holds the cycle goes through.
	keys, pattern, holds bool
}

// compareReport fails unless the decoded report states the sidecar's
// facts, as far as c asks.
func compareReport(t *testing.T, r *deadlock.Report, sc sidecar, c checks) {
	t.Helper()
	require.Len(t, r.Transactions, len(sc.Transactions), "transactions")
	if !c.anyOrder {
		require.Equal(t, sc.Victim, r.Victim, "victim")
	}
	if c.pattern {
		name := "not-recognised"
		if r.Pattern != nil {
			name = r.Pattern.Name
		}
		require.Equal(t, sc.Pattern, name, "pattern")
	}
	for _, want := range sc.Transactions {
		got := r.Transaction(want.Number)
		if c.anyOrder {
			got = nil
			for _, tr := range r.Transactions {
				if strings.Contains(tr.Query, want.Statement) {
					got = tr
				}
			}
		}
		require.NotNil(t, got, "transaction (%d)", want.Number)
		if c.trxIDs {
			require.Equal(t, want.TrxID, strconv.FormatUint(got.TrxID, 10), "transaction (%d) id", want.Number)
		}
		require.Contains(t, got.Query, want.Statement, "transaction (%d) statement", want.Number)
		if want.Waits == nil {
			require.Nil(t, got.Waits, "transaction (%d) waits", want.Number)
		} else {
			require.NotNil(t, got.Waits, "transaction (%d) waits", want.Number)
			compareLock(t, got.Waits, *want.Waits, c, "transaction (%d) waits", want.Number)
		}
		if c.holds {
			// The sidecar lists the holds the cycle goes through, not every
			// lock: each must be among the decoded holds, inferred or not
			// as the sidecar says.
			for i, h := range want.Holds {
				found := false
				for _, l := range got.Holds {
					if l.Table == h.Table && l.Index == h.Index && l.Mode == h.Mode && string(l.Kind) == h.Kind &&
						l.Inferred == h.Inferred && (!c.keys || h.Key == nil || hasKey(l, h.Key)) {
						found = true
					}
				}
				require.True(t, found, "transaction (%d) hold %d (%s %s %s %s %q inferred=%v) is not among the decoded holds",
					want.Number, i, h.Table, h.Index, h.Mode, h.Kind, h.Key, h.Inferred)
			}
		}
	}
}

func compareLock(t *testing.T, got *deadlock.Lock, want sidecarLock, c checks, what string, args ...any) {
	t.Helper()
	msg := func(field string) []any { return append([]any{what + " " + field}, args...) }
	require.Equal(t, want.Table, got.Table, msg("table")...)
	require.Equal(t, want.Index, got.Index, msg("index")...)
	require.Equal(t, want.Mode, got.Mode, msg("mode")...)
	require.Equal(t, want.Kind, string(got.Kind), msg("kind")...)
	if c.keys && want.Key != nil {
		require.NotEmpty(t, got.Records, msg("records")...)
		// A waited lock names one record; a held lock struct may cover
		// several (a range scan's), of which the sidecar names the one
		// the cycle goes through.
		if hasKey(got, want.Key) {
			return
		}
		var seen [][]string
		for _, rec := range got.Records {
			seen = append(seen, rec.KeyValues())
		}
		require.Fail(t, "no record with the key", "%s: want %q, records %q", fmt.Sprintf(what+" key", args...), want.Key, seen)
	}
}

// hasKey reports whether one of the lock's records has a key that starts
// with key, its values written plainly (strings unquoted).
func hasKey(l *deadlock.Lock, key []string) bool {
	for _, rec := range l.Records {
		if rec.Supremum && len(key) == 1 && key[0] == "supremum" {
			return true
		}
		vals := rec.KeyValues()
		if len(vals) >= len(key) && slices.Equal(key, vals[:len(key)]) {
			return true
		}
	}
	return false
}
