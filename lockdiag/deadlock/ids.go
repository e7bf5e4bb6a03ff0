package deadlock

import (
	"strconv"
	"strings"
)

// resolveIDs turns the transaction ids as printed into numbers. MySQL 5.0
// and 5.1 print "0 1234" (high and low 32-bit words), 5.5 prints hex
// ("3A1F"), later servers decimal. A hex id made only of digits looks
// decimal; the DB_TRX_ID of a clustered record (always hex in the dump)
// tells them apart when it names one of the report's transactions.
func resolveIDs(r *Report) {
	var texts []string
	for _, t := range r.Transactions {
		texts = append(texts, t.idText)
		for _, l := range t.allLocks() {
			texts = append(texts, l.idText)
		}
	}
	hex := false
	for _, s := range texts {
		if strings.ContainsAny(s, "abcdefABCDEF") {
			hex = true
		}
	}
	if !hex {
		stamps := map[uint64]bool{}
		for _, t := range r.Transactions {
			for _, l := range t.allLocks() {
				for _, rec := range l.Records {
					if i := systemColumns(rec.Fields); i >= 0 && len(rec.Fields[i].Hex) == 12 {
						stamps[beUint(rec.Fields[i].Hex)] = true
					}
				}
			}
		}
		decHits, hexHits := 0, 0
		for _, t := range r.Transactions {
			if d, ok := parseID(t.idText, false); ok && stamps[d] {
				decHits++
			}
			if h, ok := parseID(t.idText, true); ok && stamps[h] && !strings.Contains(t.idText, " ") {
				hexHits++
			}
		}
		hex = hexHits > decHits
	}
	for _, t := range r.Transactions {
		t.TrxID, _ = parseID(t.idText, hex)
		if t.idText != "" && t.idText != strconv.FormatUint(t.TrxID, 10) {
			t.TrxIDPrinted = t.idText
		}
		for _, l := range t.allLocks() {
			l.TrxID, _ = parseID(l.idText, hex)
		}
	}
}

func parseID(s string, hex bool) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	if hi, lo, ok := strings.Cut(s, " "); ok {
		h, err1 := strconv.ParseUint(hi, 10, 32)
		l, err2 := strconv.ParseUint(lo, 10, 32)
		if err1 != nil || err2 != nil {
			return 0, false
		}
		return h<<32 | l, true
	}
	base := 10
	if hex {
		base = 16
	}
	v, err := strconv.ParseUint(s, base, 64)
	return v, err == nil
}
