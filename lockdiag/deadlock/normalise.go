package deadlock

import (
	"regexp"
	"strings"
)

// line is one input line made readable: logger prefix, quoting, fences and
// indentation removed.
type line struct {
	no int
	// raw keeps the line's inner spacing (for statements); text has
	// every run of whitespace collapsed to one space and is trimmed (for
	// matching the report's structure, whatever a paste did to spaces).
	raw, text string
	// ts is the timestamp of the error-log prefix, if the line had one.
	ts string
	// foreign: a log line of another subsystem (a connection note in the
	// middle of a report), not part of any report.
	foreign bool
}

const reTS = `(\d{4}-\d\d-\d\d[ T]\s*\d{1,2}:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?|\d{6}\s+\d{1,2}:\d\d:\d\d)`

var (
	// An error-log prefix of any MySQL 5.5–9.x or MariaDB 10–11:
	//   2024-01-02T03:04:05.123456Z 12 [Note] [MY-012469] [InnoDB]
	//   2024-01-02T03:04:05.123456+08:00 0 [Note] InnoDB:
	//   2024-01-02  3:04:05 140234 [Note] InnoDB:
	//   2014-01-02 03:04:05 7f9c1c InnoDB:
	//   131107 11:13:20 [Note] InnoDB:
	logPrefix = regexp.MustCompile(`^` + reTS + `(?:\s+(?:0x)?[0-9a-fA-F]+)?\s+(?:\[(\w+)\]\s*(?:\[MY-\d+\]\s*)?(?:\[(\w+)\]|(InnoDB):)?|(InnoDB):)\s?`)
	// The same without time and thread.
	bareLogPrefix = regexp.MustCompile(`^(?:\[(?:Note|Warning|ERROR|Error|System|Info)\]\s*(?:\[MY-\d+\]\s*)?(?:\[InnoDB\]|InnoDB:)|InnoDB:)\s?`)
	// syslog / journald: "Jan  2 03:04:05 host mysqld[123]: ".
	syslogPrefix = regexp.MustCompile(`^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [\w./-]+(?:\[\d+\])?: `)
	// Markdown quoting and fences.
	quotePrefix = regexp.MustCompile(`^\s*(?:>\s?)+`)
	fenceLine   = regexp.MustCompile("^\\s*(?:```|~~~)")
)

// normalise splits the input into lines, undoing the mysql client's
// escaping of the Status column, CR/LF, quoting and logger prefixes.
func normalise(s string) []line {
	// `mysql -e 'SHOW ENGINE INNODB STATUS'` prints the report as one
	// field with newlines escaped; more escaped than real newlines means
	// that is what we have.
	if strings.Count(s, `\n`) > strings.Count(s, "\n") {
		s = strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\\`, `\`).Replace(s)
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	raw := strings.Split(s, "\n")
	out := make([]line, 0, len(raw))
	for i, t := range raw {
		ln := line{no: i + 1}
		if fenceLine.MatchString(t) {
			out = append(out, ln)
			continue
		}
		t = stripPrefixes(&ln, t)
		ln.raw = strings.TrimSpace(strings.ReplaceAll(t, "\u00a0", " "))
		ln.text = strings.Join(strings.Fields(ln.raw), " ")
		out = append(out, ln)
	}
	return out
}

// stripPrefixes removes quoting and a logger prefix (a paste of a quoted
// log has both, in that order), setting ln.ts and ln.foreign.
func stripPrefixes(ln *line, t string) string {
	t = strings.TrimLeft(t, " \t\u00a0")
	if m := quotePrefix.FindString(t); m != "" {
		t = t[len(m):]
	}
	if m := syslogPrefix.FindString(t); m != "" {
		t = t[len(m):]
	}
	t = strings.TrimLeft(t, " \t")
	if m := logPrefix.FindStringSubmatch(t); m != nil {
		ln.ts = m[1]
		// A prefixed line is part of a report only if it is InnoDB's:
		// "[InnoDB]" (MySQL 8), "InnoDB:" (5.x, MariaDB). Other lines in
		// the middle of a report (a connection note) are not.
		sub := m[3] + m[4] + m[5]
		ln.foreign = !strings.EqualFold(sub, "InnoDB")
		return t[len(m[0]):]
	}
	if m := bareLogPrefix.FindString(t); m != "" {
		return t[len(m):]
	}
	return t
}

// isElision reports an editor's mark for lines left out of a quoted report,
// such as the published report's "(생략)" or "(omitted: 4 records)", or a
// bare "..." line.
func isElision(t string) bool {
	t = strings.TrimSpace(t)
	if t == "..." || t == "…" || t == "[...]" {
		return true
	}
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
