package deadlock

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pasteForms are the same report as people paste it: the MySQL 8 error
// log (innodb_print_all_deadlocks=ON, log_error_verbosity=3), indented and
// quoted in Markdown, with CR/LF line ends, reflowed with blank lines and
// doubled spaces, and cut off before its last line.
func pasteForms(report string) map[string]string {
	lines := strings.Split(strings.TrimRight(report, "\n"), "\n")
	var log, indented, reflowed strings.Builder
	log.WriteString("2024-01-02T03:04:05.123456Z 12 [Note] [MY-012468] [InnoDB] Transactions deadlock detected, dumping detailed information.\n")
	for _, l := range lines {
		if strings.Contains(l, "LATEST DETECTED DEADLOCK") || strings.HasPrefix(l, "----") {
			continue
		}
		if strings.HasPrefix(l, "*** ") {
			// The message starts with a newline: two spaces after [InnoDB].
			fmt.Fprintf(&log, "2024-01-02T03:04:05.123456Z 12 [Note] [MY-012469] [InnoDB]  %s \n", l)
		} else {
			log.WriteString(l + "\n")
		}
		fmt.Fprintf(&indented, "    > %s\n", l)
		fmt.Fprintf(&reflowed, "%s   \n\n", strings.ReplaceAll(l, " of table ", " of   table  "))
	}
	head, _, _ := strings.Cut(report, "*** WE ROLL BACK")
	return map[string]string{
		"error-log-mysql8": log.String(),
		"indented":         "```\n" + indented.String() + "```\n",
		"crlf":             strings.ReplaceAll(report, "\n", "\r\n"),
		"reflowed":         reflowed.String(),
		"truncated":        head,
	}
}

// facts are what TestCorpus checks of a report, as one comparable text.
func facts(r *Report) string {
	var b strings.Builder
	for _, t := range r.Transactions {
		fmt.Fprintf(&b, "(%d) trx %d %q\n", t.Number, t.TrxID, t.Query)
		for _, l := range append(append([]*Lock{}, t.Holds...), t.Waits) {
			if l == nil {
				continue
			}
			fmt.Fprintf(&b, "  %s %s %s %s inferred=%v waiting=%v", l.Table, l.Index, l.Mode, l.Kind, l.Inferred, l.Waiting)
			for _, rec := range l.Records {
				fmt.Fprintf(&b, " %q", rec.KeyValues())
			}
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "pattern %s\n", r.PatternName())
	return b.String()
}

func TestSameReportEveryForm(t *testing.T) {
	for _, name := range []string{"claim_cancel_mysql84.txt", "status_mysql84.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(t, err)
		rs, err := ParseString(string(b))
		require.NoError(t, err)
		require.Len(t, rs, 1)
		want := facts(rs[0])
		for form, in := range pasteForms(string(b)) {
			t.Run(name+"/"+form, func(t *testing.T) {
				got, err := ParseString(in)
				require.NoError(t, err)
				require.Len(t, got, 1)
				r := got[0]
				require.Equal(t, want, facts(r))
				if form == "truncated" {
					require.True(t, r.Truncated)
					require.Len(t, r.Warnings, 1)
					require.Zero(t, r.Victim, "a cut-off report does not say who was rolled back")
					return
				}
				require.Empty(t, r.Warnings)
				require.Equal(t, rs[0].Victim, r.Victim)
			})
		}
	}
}
