package deadlock

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// reFieldStart finds each field of a record dump in a line. Old servers
// print all of a record's fields on one line; pastes may join them too.
// The hex digits are the truth: the asc part is the same bytes with
// unprintable ones blanked, and a paste may have collapsed its spaces.
var reFieldStart = regexp.MustCompile(`(?:^|;;? ?|\s)(\d+): ?(?:len (\d+); hex ([0-9a-fA-F]*)(\.\.\.)?;?|SQL NULL(?:, size \d+)?)`)

var reTotal = regexp.MustCompile(`\(total (\d+) bytes\)`)

func parseFields(t string) ([]Field, error) {
	ms := reFieldStart.FindAllStringSubmatchIndex(t, -1)
	if len(ms) == 0 {
		return nil, fmt.Errorf("a record field like \" 0: len 4; hex 80000001; asc     ;;\"")
	}
	out := make([]Field, 0, len(ms))
	for i, m := range ms {
		end := len(t)
		if i+1 < len(ms) {
			end = ms[i+1][0]
		}
		f := Field{Pos: atoi(t[m[2]:m[3]])}
		if m[4] < 0 {
			f.Null, f.Type, f.Value = true, "null", "NULL"
			out = append(out, f)
			continue
		}
		n, err := strconv.Atoi(t[m[4]:m[5]])
		if err != nil || n > 1<<24 {
			return nil, fmt.Errorf("a field length that is a small number, not %q", t[m[4]:m[5]])
		}
		h := strings.ToLower(t[m[6]:m[7]])
		if len(h)%2 != 0 {
			return nil, fmt.Errorf("field %d: an even number of hex digits (this line has an odd number of hex digits)", f.Pos)
		}
		f.Len, f.Hex = n, h
		rest := t[m[1]:end]
		// Long fields are cut: MySQL prints 30 bytes then "(total N
		// bytes)", MariaDB the length and the first bytes then "...".
		if tm := reTotal.FindStringSubmatch(rest); tm != nil {
			if total := atoi(tm[1]); total > f.Len {
				f.Len = total
			}
		}
		f.Truncated = len(h)/2 < f.Len || m[8] >= 0
		out = append(out, f)
	}
	return out, nil
}
