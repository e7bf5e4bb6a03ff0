package deadlock

import (
	"regexp"
	"strings"
)

// line is one input line with the error log's prefix removed.
type line struct {
	no   int
	text string
	// ts is the timestamp of the error-log prefix, if the line had one.
	ts string
}

var (
	// An error-log prefix: MariaDB "2026-11-30  6:27:27 292 [Note] InnoDB: "
	// and MySQL 8 "2024-05-01T10:00:00.123456Z 0 [Note] [MY-012469] [InnoDB] ".
	logPrefix = regexp.MustCompile(`^(\d{4}-\d\d-\d\d[ T]\s*\d{1,2}:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)\s+(?:0x)?[0-9a-fA-F]+\s+\[(?:Note|Warning|ERROR|Error|System)\]\s*(?:\[MY-\d+\]\s*)?(?:\[InnoDB\]\s?|InnoDB:\s?)?`)
	// The same without time and thread, as on the samples' first line.
	bareLogPrefix = regexp.MustCompile(`^\[(?:Note|Warning)\]\s*(?:\[MY-\d+\]\s*)?(?:\[InnoDB\]\s?|InnoDB:\s?)`)
)

// normalize splits the input into lines, undoing the mysql client's
// escaping of the Status column and stripping error-log prefixes.
func normalize(s string) []line {
	// `mysql -e 'SHOW ENGINE INNODB STATUS'` prints the report as one
	// field with newlines escaped; more escaped than real newlines means
	// that is what we have.
	if strings.Count(s, `\n`) > strings.Count(s, "\n") {
		s = strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\\`, `\`).Replace(s)
	}
	raw := strings.Split(s, "\n")
	out := make([]line, 0, len(raw))
	for i, t := range raw {
		t = strings.TrimRight(t, "\r")
		ln := line{no: i + 1}
		if m := logPrefix.FindStringSubmatch(t); m != nil {
			ln.ts = m[1]
			t = t[len(m[0]):]
		} else if m := bareLogPrefix.FindString(t); m != "" {
			t = t[len(m):]
		}
		// A prefixed line can carry the start of the next section, as in
		// MariaDB's "... InnoDB: *** WAITING FOR THIS LOCK TO BE GRANTED:".
		ln.text = t
		out = append(out, ln)
	}
	return out
}

// isElision reports an editor's mark for lines left out of a quoted report,
// such as the published report's "(생략)" or "(omitted: 4 records)".
func isElision(t string) bool {
	t = strings.TrimSpace(t)
	if len(t) < 3 || t[0] != '(' || t[len(t)-1] != ')' {
		return false
	}
	low := strings.ToLower(t)
	if strings.Contains(low, "omit") || strings.Contains(low, "snip") || strings.Contains(t, "...") || strings.Contains(t, "…") {
		return true
	}
	for _, r := range t {
		if r > 0x7f {
			return true
		}
	}
	return false
}
