package dsn

import (
	"net"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"unicode"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockstep-queue/lockstep/internal/dsnparse"
	"github.com/lockstep-queue/lockstep/internal/dsnparse/sqlitedsn"
)

// FuzzParse feeds Parse arbitrary text. It must never panic; it returns an
// error or a result, never both; neither the error nor the redacted form
// shows a password, in any form; the redacted form parses again to itself;
// and what it hands a driver says what the DSN said (go-sql-driver reads
// back the same user, password, address and database as the URL; pgx
// reads the password where the redaction found it).
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
		"file:q.db?mode=ro",
		"file:",
		"lockstep.db",
		"./data/q.db",
		"/var/lib/q.sqlite3",
		"/tmp/100%#x.db",
		"mysql",
		"redis:localhost",
		"a=b.db",
		"mysql://app:secret@db.internal:3307/queue",
		"mysql://root@/queue",
		"mariadb://app:pw@127.0.0.1:3306/app",
		"mysql://us%40er:p%40ss%3Aw%2Fo%3F@db.example:3307/app?parseTime=true&loc=Asia%2FSeoul",
		"mysql://u:p@h:3306/db?tls=skip-verify&loc=Asia%2FSeoul",
		"mysql://u@[::1]/db",
		"mysql://u:secret@h1:3306,[::1]:3307/db",
		"mysql://u:secret@/db?socket=%2Frun%2Fm.sock",
		"mysql://u:secret@localhost/db?unix_socket=/tmp/m.sock&x=1",
		"mysql://app:secret@h:3306",
		"mysql://app:secret@h:3306/a/b",
		"mysql://app:secret@h:port/db",
		"mysql:app:secret@h/db",
		"mysql://app:secret@h/db?parseTime=maybe",
		"mysql://app:secret@h/db?strict=true",
		"mysql://app:secret@h/db?allowCleartextPasswords=true",
		"mysql://u:secret@h/d%3Fb",
		"mysql://u:secret@h/db#frag",
		"mysql://u:se%zzcret@h/db",
		"mysql://u:sec/ret@h/db",
		"app:secret@tcp(h:3306)/db",
		"user:pass@tcp(127.0.0.1:3306)/db?parseTime=true",
		"user@tcp(host)/db",
		"user@unix(/run/mysqld/mysqld.sock)/db",
		"@/db",
		"u:se@cret@tcp(h)/db?timeout=5",
		"u:secret@tcp(h/db",
		"u:secret@cloudsql(p:r:i)/db?maxAllowedPacket=x",
		"postgres://app:secret@localhost:5432/queue?sslmode=disable",
		"postgresql://app@localhost/queue",
		"postgres://app@localhost/queue?password=secret",
		"postgres://app@localhost/queue?PassWord=secret&sslmode=disable",
		"postgres://app@localhost/queue?password=secret;x=1",
		"postgres://app@localhost/queue?a=1;password=secret",
		"postgres://app:se?c#ret@h/db",
		"postgres://:secret@h/db",
		"postgres://app:secret@h o/db",
		"postgres://app:secret@h/db\x7f",
		"postgres://u:s%00ecret@h1,[::1]:5433/db?sslmode=bogus",
		"host=localhost port=5432 user=app dbname=app sslmode=disable",
		"host=h password=secret",
		"host=h password='two secret words' sslpassword=x\\ y",
		"host=h password='unterminated",
		"host=h application_name='a\nb' sslmode=bogus password=secret",
		"hots=h prot=1",
		"oracle://scott:tiger@h/db",
		"foo://x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := Parse(in)
		checkPasswordHidden(t, in, p, err)
		if err != nil {
			if !reflect.DeepEqual(p, Parsed{}) {
				t.Fatalf("Parse(%q) returned both %+v and %v", in, p, err)
			}
			msg := err.Error()
			if strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("Parse(%q): error is not one line: %q", in, msg)
			}
			if strings.Contains(msg, "strconv.") {
				t.Fatalf("Parse(%q): error in Go's words: %q", in, msg)
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
		checkRedacted(t, in, p)

		// Redaction is a fixed point: the redacted form parses to the same
		// dialect and the same redacted form.
		again, err := Parse(p.Redacted)
		if err != nil {
			t.Fatalf("Parse(%q).Redacted = %q does not parse again: %v", in, p.Redacted, err)
		}
		if again.Dialect != p.Dialect || again.Redacted != p.Redacted {
			t.Fatalf("Parse(%q).Redacted = %q parses to %+v", in, p.Redacted, again)
		}

		trimmed := strings.TrimSpace(in)
		switch p.Dialect {
		case SQLite:
			// No password to hide: the redacted form is the same file.
			if uri(t, again.DSN) != uri(t, p.DSN) {
				t.Fatalf("Parse(%q): sqlite DSN %q, but its Redacted %q names %q", in, p.DSN, p.Redacted, again.DSN)
			}
			if strings.ContainsRune(p.DSN, 0) {
				t.Fatalf("Parse(%q): sqlite path with a NUL byte %q", in, p.DSN)
			}
		case Postgres:
			// Passed as written, but for the scheme's case.
			scheme, rest, isURL := strings.Cut(trimmed, "://")
			if isURL && formOf(in) == dsnparse.PostgresURL {
				trimmed = strings.ToLower(scheme) + "://" + rest
			}
			if p.DSN != trimmed {
				t.Fatalf("Parse(%q): postgres DSN %q is not the input", in, p.DSN)
			}
			checkPostgres(t, in, p)
		case MySQL:
			checkMySQL(t, in, p)
		}
	})
}

// checkPasswordHidden: the passwords of the DSN, found as the driver that
// reads the form finds them, never show, in an error or in the redacted
// form. The check is differential: the input with other passwords of the
// same shape (each letter and digit swapped for another of its class, so
// that what is valid stays valid) must give the same error text and the
// same redacted form, byte for byte. A substring search would mistake a
// password "ab" for the "ab" of a message's own words.
func checkPasswordHidden(t *testing.T, in string, p Parsed, err error) {
	t.Helper()
	spans := passwordSpans(in)
	if len(spans) == 0 {
		return
	}
	other := in
	for i := len(spans) - 1; i >= 0; i-- {
		s := spans[i]
		other = other[:s[0]] + reshape(other[s[0]:s[1]]) + other[s[1]:]
	}
	if formOf(in) != formOf(other) {
		// The password held what tells the forms apart ("@tcp(" becomes
		// "@udq("): not the same DSN with another password.
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

// uri is the SQLite URI sqlite.Open opens for dsn.
func uri(t *testing.T, dsn string) string {
	d, err := sqlitedsn.Parse(dsn)
	if err != nil {
		t.Fatalf("sqlite DSN %q does not parse again: %v", dsn, err)
	}
	return d.URI()
}

func formOf(in string) dsnparse.Form {
	f, _ := dsnparse.Detect(strings.TrimSpace(in))
	return f
}

// passwordSpans locates the passwords in the input, as each form's reader
// does. They are found here independently of the parsers, except for the
// key=value form, whose splitting the test shares with them (checkPostgres
// checks that pgx agrees).
func passwordSpans(in string) [][2]int {
	lead := len(in) - len(strings.TrimLeftFunc(in, unicode.IsSpace))
	s := strings.TrimSpace(in)
	var spans [][2]int
	add := func(start, end int) {
		if end > start {
			spans = append(spans, [2]int{lead + start, lead + end})
		}
	}
	switch formOf(in) {
	case dsnparse.MySQLURL:
		// net/url's reading: the authority runs from "//" to the first
		// '/', '?' or '#', the user info to its last '@', the user name
		// to its first ':'.
		start := strings.Index(s, "://") + 3
		auth := s[start:]
		if k := strings.IndexAny(auth, "/?#"); k >= 0 {
			auth = auth[:k]
		}
		if at := strings.LastIndexByte(auth, '@'); at >= 0 {
			if colon := strings.IndexByte(auth[:at], ':'); colon >= 0 {
				add(start+colon+1, start+at)
			}
		}
		for _, q := range queryValueSpans(s, start+len(auth)) {
			add(q[0], q[1])
		}
	case dsnparse.PostgresURL:
		// libpq's: the user info ends at the first '@' before any '/'.
		start := strings.Index(s, "://") + 3
		rest := s[start:]
		from := start
		if at := strings.IndexAny(rest, "@/"); at >= 0 && rest[at] == '@' {
			if colon := strings.IndexByte(rest[:at], ':'); colon >= 0 {
				add(start+colon+1, start+at)
			}
			from = start + at + 1
		}
		for _, q := range queryValueSpans(s, from) {
			add(q[0], q[1])
		}
	case dsnparse.MySQLNative:
		// go-sql-driver's: between the first ':' and the last '@' before
		// the last '/'.
		if slash := strings.LastIndexByte(s, '/'); slash > 0 {
			if at := strings.LastIndexByte(s[:slash], '@'); at >= 0 {
				if colon := strings.IndexByte(s[:at], ':'); colon >= 0 {
					add(colon+1, at)
				}
			}
			for _, q := range queryValueSpans(s, slash) {
				add(q[0], q[1])
			}
		}
	case dsnparse.PostgresKeywords:
		pairs, err := dsnparse.Keywords(s)
		if err != nil {
			return nil
		}
		for _, kv := range pairs {
			if dsnparse.SecretKey(kv.Key) {
				add(kv.Start, kv.End)
			}
		}
	}
	return spans
}

// queryValueSpans are the values of the secret parameters (password=,
// sslpassword=) in the query of a URL, which starts at the first '?' at or
// after from. pgx and go-sql-driver split the query at '&' only, so a
// value runs to the next '&'; a secret key after a ';' in a pair (meant
// as a separator) makes the rest of the pair its value.
func queryValueSpans(s string, from int) [][2]int {
	q := strings.IndexByte(s[from:], '?')
	if q < 0 {
		return nil
	}
	var spans [][2]int
	for pos := from + q + 1; pos <= len(s); {
		end := strings.IndexByte(s[pos:], '&')
		if end < 0 {
			end = len(s) - pos
		}
		for seg := pos; seg <= pos+end; {
			segEnd := strings.IndexByte(s[seg:pos+end], ';')
			if segEnd < 0 {
				segEnd = pos + end - seg
			}
			if key, _, ok := strings.Cut(s[seg:seg+segEnd], "="); ok {
				if k, err := url.QueryUnescape(key); err == nil && dsnparse.SecretKey(k) {
					spans = append(spans, [2]int{seg + len(key) + 1, pos + end})
					break
				}
			}
			seg += segEnd + 1
		}
		pos += end + 1
	}
	return spans
}

// reshape swaps each letter and digit for another of its class (hex digits
// for hex digits), leaving everything else as it is; 0 stays 0, so that
// %00, which pgx refuses, is not made valid.
func reshape(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= '1' && c <= '9':
			b[i] = '1' + (c-'1'+1)%9
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

// checkRedacted: a server DSN's redacted form holds no password: each
// place a password goes holds xxxxx (passwordSpans skips empty ones).
func checkRedacted(t *testing.T, in string, p Parsed) {
	t.Helper()
	for _, s := range passwordSpans(p.Redacted) {
		if v := p.Redacted[s[0]:s[1]]; v != dsnparse.Mask {
			t.Fatalf("Parse(%q): Redacted %q keeps the password %q", in, p.Redacted, v)
		}
	}
}

// checkPostgres: pgx reads the password where the redaction found it.
func checkPostgres(t *testing.T, in string, p Parsed) {
	t.Helper()
	cfg, err := pgconn.ParseConfig(p.DSN)
	if err != nil {
		t.Fatalf("Parse(%q) accepted a DSN pgx refuses: %v", in, err)
	}
	if cfg.Password == "" {
		return
	}
	s := strings.TrimSpace(in)
	lead := len(in) - len(strings.TrimLeftFunc(in, unicode.IsSpace))
	found := false
	for _, sp := range passwordSpans(in) {
		raw := s[sp[0]-lead : sp[1]-lead]
		if pairs, err := dsnparse.Keywords("v=" + raw); err == nil && len(pairs) == 1 && pairs[0].Value == cfg.Password {
			found = true
		}
		if v, err := url.PathUnescape(strings.Trim(raw, " ")); err == nil && v == cfg.Password {
			found = true
		}
	}
	if !found {
		t.Fatalf("Parse(%q): pgx reads a password the redaction did not find", in)
	}
}

// checkMySQL: go-sql-driver reads the converted DSN as the DSN meant it.
func checkMySQL(t *testing.T, in string, p Parsed) {
	t.Helper()
	s := strings.TrimSpace(in)
	cfg, err := gomysql.ParseDSN(p.DSN)
	if err != nil {
		t.Fatalf("Parse(%q) = %q, which go-sql-driver refuses: %v", in, p.DSN, err)
	}
	if formOf(in) == dsnparse.MySQLNative {
		if p.DSN != s {
			t.Fatalf("Parse(%q): go-sql-driver DSN %q is not the input", in, p.DSN)
		}
		return
	}
	// net/url's reading of the URL, by hand: it cannot read a host list.
	rest := s[strings.Index(s, "://")+3:]
	var query string
	if k := strings.IndexByte(rest, '?'); k >= 0 {
		rest, query = rest[:k], rest[k+1:]
	}
	auth, path, _ := strings.Cut(rest, "/")
	var user, pw, host string
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		user, pw, _ = strings.Cut(auth[:at], ":")
		auth = auth[at+1:]
	}
	user, _ = url.PathUnescape(user)
	pw, _ = url.PathUnescape(pw)
	db, _ := url.PathUnescape(path)
	netw := "tcp"
	if len(p.Hosts) > 0 {
		// Several hosts: DSN is the first one's, and Hosts names them all.
		if strings.Count(auth, ",")+1 != len(p.Hosts) {
			t.Fatalf("Parse(%q): hosts %q, but the URL names %q", in, p.Hosts, auth)
		}
		auth, _, _ = strings.Cut(auth, ",")
	}
	host, port, err := net.SplitHostPort(auth)
	if err != nil {
		host, port = strings.Trim(auth, "[]"), ""
	}
	host, _ = url.PathUnescape(host)
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "3306"
	}
	addr := net.JoinHostPort(host, port)
	for pair := range strings.SplitSeq(query, "&") {
		if k, v, _ := strings.Cut(pair, "="); k == "socket" || k == "unix_socket" {
			netw = "unix"
			addr, _ = url.QueryUnescape(v)
		}
	}
	want := [...]string{user, pw, netw, addr, db}
	got := [...]string{cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName}
	if want != got {
		t.Fatalf("Parse(%q) = %q, which go-sql-driver reads as user, password, net, addr, db = %q; want %q", in, p.DSN, got, want)
	}
}
