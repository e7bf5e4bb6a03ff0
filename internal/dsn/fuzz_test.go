package dsn

import (
	"net"
	"net/url"
	"strings"
	"testing"
	"unicode"

	gomysql "github.com/go-sql-driver/mysql"
)

// FuzzParse feeds Parse arbitrary text. It must never panic; it returns an
// error or a result, never both; neither the error nor the redacted form
// shows a password; the redacted form parses again to itself; and what it
// hands a driver says what the URL said (go-sql-driver reads back the same
// user, password, address and database).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"",
		"  ",
		"sqlite:data/q.db",
		"sqlite://q.db",
		"sqlite:///var/lib/q.db",
		"sqlite:////x",
		"SQLite:q.db?cache=shared",
		"sqlite:",
		"sqlite:?x",
		"sqlite:a\x00b",
		"mysql://app:secret@db.internal:3307/queue",
		"mysql://root@/queue",
		"mariadb://app:pw@127.0.0.1:3306/app",
		"mysql://us%40er:p%40ss%3Aw%2Fo%3F@db.example:3307/app?parseTime=true&loc=Asia%2FSeoul",
		"mysql://u:p@h:3306/db?tls=skip-verify&loc=Asia%2FSeoul",
		"mysql://u@[::1]/db",
		"mysql://app:secret@h:3306",
		"mysql://app:secret@h:3306/a/b",
		"mysql://app:secret@h:port/db",
		"mysql:app:secret@h/db",
		"mysql://app:secret@h/db?parseTime=maybe",
		"mysql://u:secret@h/d%3Fb",
		"mysql://u:secret@h/db#frag",
		"mysql://u:se%zzcret@h/db",
		"postgres://app:secret@localhost:5432/queue?sslmode=disable",
		"postgresql://app@localhost/queue",
		"postgres://app@localhost/queue?password=secret",
		"postgres://app@localhost/queue?PassWord=secret&sslmode=disable",
		"postgres://app@localhost/queue?password=secret;x=1",
		"postgres://app@localhost/queue?a=1;password=secret",
		"postgres://:secret@h/db",
		"postgres://app:secret@h o/db",
		"postgres://app:secret@h/db\x7f",
		"oracle://scott:tiger@h/db",
		"app:secret@tcp(h:3306)/db",
		"lockstep.db",
		"host=h password=secret",
		"foo://x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := Parse(in)
		checkPasswordHidden(t, in, p, err)
		if err != nil {
			if p != (Parsed{}) {
				t.Fatalf("Parse(%q) returned both %+v and %v", in, p, err)
			}
			msg := err.Error()
			if strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("Parse(%q): error is not one line: %q", in, msg)
			}
			return
		}
		switch p.Dialect {
		case SQLite, MySQL, Postgres:
		default:
			t.Fatalf("Parse(%q): unknown dialect %q", in, p.Dialect)
		}
		if p.DSN == "" || p.Redacted == "" {
			t.Fatalf("Parse(%q) = %+v: empty DSN or Redacted", in, p)
		}
		checkRedactedURL(t, in, p)

		// Redaction is a fixed point: the redacted form parses to the same
		// dialect and the same redacted form.
		again, err := Parse(p.Redacted)
		if err != nil {
			t.Fatalf("Parse(%q).Redacted = %q does not parse again: %v", in, p.Redacted, err)
		}
		if again.Dialect != p.Dialect || again.Redacted != p.Redacted {
			t.Fatalf("Parse(%q).Redacted = %q parses to %+v", in, p.Redacted, again)
		}

		switch p.Dialect {
		case SQLite:
			// No password to hide: the redacted form is the same file.
			if again.DSN != p.DSN {
				t.Fatalf("Parse(%q): sqlite path %q, but its Redacted %q names %q", in, p.DSN, p.Redacted, again.DSN)
			}
			if strings.ContainsRune(p.DSN, 0) {
				t.Fatalf("Parse(%q): sqlite path with a NUL byte %q", in, p.DSN)
			}
		case Postgres:
			if p.DSN != strings.TrimSpace(in) {
				t.Fatalf("Parse(%q): postgres DSN %q is not the input", in, p.DSN)
			}
		case MySQL:
			checkMySQL(t, in, p)
		}
	})
}

// checkPasswordHidden: the password of scheme://user:PASSWORD@host/...
// (found as net/url finds it) never shows, in an error or in the redacted
// form. The check is differential: the input with another password of the
// same shape (each letter, digit and hex digit swapped for another of its
// class, so that what is valid stays valid) must give the same error text
// and the same redacted form, byte for byte. A substring search would
// mistake a password "ab" for the "ab" of a message's own words.
func checkPasswordHidden(t *testing.T, in string, p Parsed, err error) {
	t.Helper()
	start, end, ok := passwordSpan(in)
	if !ok {
		return
	}
	other := in[:start] + reshape(in[start:end]) + in[end:]
	if strings.Contains(in, "@tcp(") || strings.Contains(in, "@unix(") {
		// Refused on sight as a go-sql-driver DSN, a check the reshaped
		// password ("@udq(") would escape.
		return
	}
	p2, err2 := Parse(other)
	switch {
	case (err == nil) != (err2 == nil):
		t.Fatalf("Parse(%q) and Parse(%q), the same but for the password: errors %v and %v", in, other, err, err2)
	case err != nil && err.Error() != err2.Error():
		t.Fatalf("Parse(%q): the error shows the password:\n%s\n%s", in, err, err2)
	case err == nil && p.Redacted != p2.Redacted:
		t.Fatalf("Parse(%q): the redacted form shows the password:\n%s\n%s", in, p.Redacted, p2.Redacted)
	}
}

// passwordSpan locates the password in the input as net/url reads it: the
// authority runs from "//" to the first '/' (after any '#' and '?' are cut
// off), the user info to its last '@', the user name to its first ':'.
func passwordSpan(in string) (start, end int, ok bool) {
	// Parse trims the input; the scheme ends at the first ':', which
	// must begin "://" ("postgres:?://:0@0" has no authority).
	lead := len(in) - len(strings.TrimLeftFunc(in, unicode.IsSpace))
	i := strings.IndexByte(in[lead:], ':')
	if i < 0 || !strings.HasPrefix(in[lead+i:], "://") {
		return 0, 0, false
	}
	authStart := lead + i + 3
	rest := strings.TrimRightFunc(in[authStart:], unicode.IsSpace)
	if k := strings.IndexAny(rest, "#"); k >= 0 {
		rest = rest[:k]
	}
	if k := strings.IndexAny(rest, "?"); k >= 0 {
		rest = rest[:k]
	}
	if k := strings.IndexByte(rest, '/'); k >= 0 {
		rest = rest[:k]
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return 0, 0, false
	}
	colon := strings.IndexByte(rest[:at], ':')
	if colon < 0 || colon+1 == at {
		return 0, 0, false
	}
	return authStart + colon + 1, authStart + at, true
}

// reshape swaps each letter and digit for another of its class (hex digits
// for hex digits), leaving everything else as it is.
func reshape(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= '0' && c <= '9':
			b[i] = '0' + (c-'0'+1)%10
		case c >= 'a' && c <= 'f':
			b[i] = 'a' + (c-'a'+1)%6
		case c >= 'A' && c <= 'F':
			b[i] = 'A' + (c-'A'+1)%6
		case c >= 'g' && c <= 'z':
			b[i] = 'g' + (c-'g'+1)%20
		case c >= 'G' && c <= 'Z':
			b[i] = 'G' + (c-'G'+1)%20
		}
	}
	return string(b)
}

// checkRedactedURL: a server DSN's redacted form holds no password, in the
// user info or in a query parameter whose name says "pass".
func checkRedactedURL(t *testing.T, in string, p Parsed) {
	t.Helper()
	if p.Dialect == SQLite {
		return
	}
	u, err := url.Parse(p.Redacted)
	if err != nil {
		t.Fatalf("Parse(%q): Redacted %q is not a URL: %v", in, p.Redacted, err)
	}
	if pw, ok := u.User.Password(); ok && pw != "" && pw != "xxxxx" {
		t.Fatalf("Parse(%q): Redacted %q keeps the password %q", in, p.Redacted, pw)
	}
	for _, seg := range strings.FieldsFunc(u.RawQuery, func(r rune) bool { return r == '&' || r == ';' }) {
		key, val, hasValue := strings.Cut(seg, "=")
		if k, err := url.QueryUnescape(key); err == nil {
			key = k
		}
		if hasValue && strings.Contains(strings.ToLower(key), "pass") && val != "xxxxx" {
			t.Fatalf("Parse(%q): Redacted %q keeps the query parameter %q", in, p.Redacted, seg)
		}
	}
}

// checkMySQL: go-sql-driver reads the converted DSN as the URL meant it.
func checkMySQL(t *testing.T, in string, p Parsed) {
	t.Helper()
	u, err := url.Parse(strings.TrimSpace(in))
	if err != nil {
		t.Fatalf("Parse(%q) accepted a mysql DSN that net/url refuses: %v", in, err)
	}
	cfg, err := gomysql.ParseDSN(p.DSN)
	if err != nil {
		t.Fatalf("Parse(%q) = %q, which go-sql-driver refuses: %v", in, p.DSN, err)
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "3306"
	}
	wantPw, _ := u.User.Password()
	want := [...]string{u.User.Username(), wantPw, "tcp", net.JoinHostPort(host, port), strings.TrimPrefix(u.Path, "/")}
	got := [...]string{cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName}
	if want != got {
		t.Fatalf("Parse(%q) = %q, which go-sql-driver reads as user, password, net, addr, db = %q; want %q", in, p.DSN, got, want)
	}
}
