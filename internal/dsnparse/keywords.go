package dsnparse

import (
	"errors"
	"strings"
)

// libpqKeywords are the connection keywords of libpq (PostgreSQL 18) and the
// few pgx adds; a key=value DSN is PostgreSQL's if it names one of them.
var libpqKeywords = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true,
	"password": true, "passfile": true, "require_auth": true, "channel_binding": true,
	"connect_timeout": true, "client_encoding": true, "options": true,
	"application_name": true, "fallback_application_name": true, "keepalives": true,
	"keepalives_idle": true, "keepalives_interval": true, "keepalives_count": true,
	"tcp_user_timeout": true, "replication": true, "gssencmode": true, "sslmode": true,
	"requiressl": true, "sslnegotiation": true, "sslcompression": true, "sslcert": true,
	"sslkey": true, "sslkeylogfile": true, "sslpassword": true, "sslcertmode": true,
	"sslrootcert": true, "sslcrl": true, "sslcrldir": true, "sslsni": true,
	"requirepeer": true, "ssl_min_protocol_version": true, "ssl_max_protocol_version": true,
	"min_protocol_version": true, "max_protocol_version": true, "krbsrvname": true,
	"gsslib": true, "gssdelegation": true, "service": true, "target_session_attrs": true,
	"load_balance_hosts": true, "oauth_issuer": true, "oauth_client_id": true,
	"oauth_client_secret": true, "oauth_scope": true,
	// pgx's own.
	"database": true, "servicefile": true, "statement_cache_capacity": true,
	"description_cache_capacity": true, "default_query_exec_mode": true,
}

// IsLibpqKeyword reports whether key is a PostgreSQL connection keyword
// (pgxpool's pool_* settings included).
func IsLibpqKeyword(key string) bool {
	return libpqKeywords[key] || strings.HasPrefix(key, "pool_")
}

// SecretKey reports whether a parameter of this name holds a secret whose
// value must not be shown: libpq's password, sslpassword and
// oauth_client_secret, and anything else named so. go-sql-driver's
// allowCleartextPasswords and the like are switches, not secrets.
func SecretKey(key string) bool {
	k := strings.ToLower(key)
	return strings.Contains(k, "pass") && !strings.HasSuffix(k, "passwords") ||
		strings.Contains(k, "secret") || strings.HasPrefix(k, "scram_")
}

// Pair is one key=value of a libpq key=value DSN.
type Pair struct {
	Key   string
	Value string // unquoted and unescaped
	// Start and End delimit the value as written in the DSN, quotes
	// included.
	Start, End int
}

// Keywords splits a libpq key=value DSN as pgx does (pgconn's
// parseKeywordValueSettings, which follows libpq): values are single-quoted
// or end at white space, and a backslash escapes the next byte. Its errors
// never quote s, whose words may be pieces of a password.
func Keywords(s string) ([]Pair, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, errors.New("postgres key=value DSN contains a NUL byte")
	}
	var pairs []Pair
	i := skipSpace(s, 0)
	for i < len(s) {
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return nil, errMissingEquals
		}
		key := strings.Trim(s[i:i+eq], spaces)
		if strings.ContainsAny(key, spaces) {
			return nil, errMissingEquals
		}
		if key == "" {
			return nil, errors.New("postgres key=value DSN has an '=' with no key before it")
		}
		i = skipSpace(s, i+eq+1)
		start := i
		var end int
		if i < len(s) && s[i] == '\'' {
			j := i + 1
			for ; j < len(s) && s[j] != '\''; j++ {
				if s[j] == '\\' {
					j++
					if j == len(s) {
						break
					}
				}
			}
			if j >= len(s) {
				return nil, errors.New("postgres key=value DSN has a quoted value without its closing quote")
			}
			end = j + 1
			pairs = append(pairs, Pair{Key: key, Value: unescape(s[i+1 : j]), Start: start, End: end})
		} else {
			j := i
			for ; j < len(s) && !isSpace(s[j]); j++ {
				if s[j] == '\\' {
					j++
					if j == len(s) {
						break
					}
				}
			}
			end = j
			pairs = append(pairs, Pair{Key: key, Value: unescape(s[i:j]), Start: start, End: end})
		}
		i = skipSpace(s, end)
	}
	return pairs, nil
}

var errMissingEquals = errors.New("postgres key=value DSN has a word with no '=' after it (quote a value that holds white space: password='two words')")

// RedactKeywords returns s, a libpq key=value DSN split into pairs, with
// the non-empty values of secret keys replaced.
func RedactKeywords(s string, pairs []Pair) string {
	var b strings.Builder
	last := 0
	for _, p := range pairs {
		if !SecretKey(p.Key) || p.Start == p.End || s[p.Start:p.End] == "''" {
			continue
		}
		b.WriteString(s[last:p.Start])
		b.WriteString(Mask)
		last = p.End
	}
	b.WriteString(s[last:])
	return b.String()
}

// Mask stands for a password in a redacted DSN.
const Mask = "xxxxx"

const spaces = " \t\n\r\v\f"

func isSpace(c byte) bool { return strings.IndexByte(spaces, c) >= 0 }

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

// unescape drops each backslash and keeps the byte after it, as libpq does.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			if i == len(s) {
				break
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
