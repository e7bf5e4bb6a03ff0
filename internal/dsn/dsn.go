// Package dsn turns the CLI's database URLs into a lockstep driver.
//
// Accepted forms:
//
//	mysql://user:pass@host:3306/db?param=value   (also mariadb://)
//	postgres://user:pass@host:5432/db?sslmode=disable   (also postgresql://)
//	sqlite:path/to/file.db, sqlite://path/to/file.db, sqlite:///abs/path.db
//	""   (empty: the SQLite file lockstep.db in the current directory)
//
// MySQL/MariaDB URLs are converted to go-sql-driver's DSN
// (user:pass@tcp(host:port)/db?params); PostgreSQL URLs go to pgx as they
// are. Error messages never contain a password.
package dsn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/driver/sqlite"
)

// DefaultSQLitePath is the database used when no DSN is given.
const DefaultSQLitePath = "lockstep.db"

// Dialects, as driver.Driver.Dialect reports them.
const (
	MySQL    = "mysql"
	Postgres = "postgres"
	SQLite   = "sqlite"
)

// Forms lists the accepted DSN forms, for help texts and errors.
const Forms = "mysql://user:pass@host:3306/db (or mariadb://), " +
	"postgres://user:pass@host:5432/db (or postgresql://), " +
	"sqlite:path/to/file.db, sqlite:///abs/path.db"

// Parsed is a DSN resolved to a dialect and the string its driver's Open
// takes.
type Parsed struct {
	// Dialect is "mysql", "postgres" or "sqlite".
	Dialect string
	// DSN is what the driver's Open takes: a go-sql-driver DSN for MySQL,
	// the URL for PostgreSQL, the file path for SQLite. It may hold a
	// password: do not print it.
	DSN string
	// Redacted is the input with any password replaced, safe to print.
	Redacted string
}

// Parse resolves a DSN without connecting.
func Parse(dsn string) (Parsed, error) {
	dsn = strings.TrimSpace(dsn)
	if dsn == "" {
		return Parsed{Dialect: SQLite, DSN: DefaultSQLitePath, Redacted: "sqlite:" + DefaultSQLitePath}, nil
	}
	scheme, rest, ok := strings.Cut(dsn, ":")
	if !ok || scheme == "" || strings.ContainsAny(scheme, "/@?= \t") {
		return Parsed{}, fmt.Errorf("database DSN has no scheme; accepted forms: %s", Forms)
	}
	if strings.Contains(rest, "@tcp(") || strings.Contains(rest, "@unix(") {
		return Parsed{}, fmt.Errorf("database DSN looks like a go-sql-driver DSN; write it as mysql://user:pass@host:3306/db (accepted forms: %s)", Forms)
	}
	switch strings.ToLower(scheme) {
	case "sqlite", "sqlite3":
		return parseSQLite(rest)
	case "mysql", "mariadb":
		return parseMySQL(dsn)
	case "postgres", "postgresql":
		return parsePostgres(dsn)
	default:
		// The scheme is safe to show: it is everything before the first
		// colon and contains no '@', so it cannot hold a password.
		return Parsed{}, fmt.Errorf("unknown database scheme %q; accepted forms: %s", scheme, Forms)
	}
}

// Open parses dsn and opens its driver.
func Open(ctx context.Context, dsn string) (driver.Driver, error) {
	p, err := Parse(dsn)
	if err != nil {
		return nil, err
	}
	var d driver.Driver
	switch p.Dialect {
	case SQLite:
		d, err = sqlite.Open(ctx, p.DSN)
	case MySQL:
		d, err = mysql.Open(ctx, p.DSN)
	case Postgres:
		d, err = postgres.Open(ctx, p.DSN)
	default:
		err = fmt.Errorf("unknown dialect %q", p.Dialect)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", p.Redacted, err)
	}
	return d, nil
}

func parseSQLite(rest string) (Parsed, error) {
	// sqlite://rel/path and sqlite:///abs/path: the two slashes are the
	// URL's authority marker, so what follows is the path as written.
	path := strings.TrimPrefix(rest, "//")
	if path == "" || strings.HasPrefix(path, "?") {
		return Parsed{}, errors.New("sqlite DSN has no file path; use sqlite:path/to/file.db or sqlite:///abs/path.db")
	}
	if strings.ContainsRune(path, 0) {
		return Parsed{}, errors.New("sqlite DSN's file path contains a NUL byte")
	}
	// Shown as written, except that a path that itself starts with "//"
	// needs the authority marker in front, or it would read back as
	// sqlite://rel/path, another file.
	shown := "sqlite:" + path
	if strings.HasPrefix(path, "//") {
		shown = "sqlite://" + path
	}
	return Parsed{Dialect: SQLite, DSN: path, Redacted: shown}, nil
}

// parseURL parses a server URL; on failure it returns url's inner error
// only, since *url.Error quotes the whole input, password included.
func parseURL(dsn, dialect string) (*url.URL, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		var ee url.EscapeError
		if errors.As(err, &ee) {
			// EscapeError quotes the bad escape, which may be in the
			// password.
			err = errors.New("a '%' is not followed by two hex digits")
		}
		return nil, fmt.Errorf("%s DSN is not a valid URL (%v); expected %s", dialect, err, example(dialect))
	}
	if u.Opaque != "" {
		return nil, fmt.Errorf("%s DSN must have the form %s", dialect, example(dialect))
	}
	return u, nil
}

func example(dialect string) string {
	if dialect == MySQL {
		return "mysql://user:pass@host:3306/db"
	}
	return "postgres://user:pass@host:5432/db"
}

func parseMySQL(dsn string) (Parsed, error) {
	u, err := parseURL(dsn, MySQL)
	if err != nil {
		return Parsed{}, err
	}
	if u.Fragment != "" {
		return Parsed{}, errors.New("mysql DSN must not have a #fragment")
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || strings.Contains(db, "/") {
		return Parsed{}, fmt.Errorf("mysql DSN needs exactly one database name after the host, as in %s", example(MySQL))
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "3306"
	}
	cfg := gomysql.NewConfig()
	cfg.Net = "tcp"
	cfg.Addr = net.JoinHostPort(host, port)
	cfg.DBName = db
	if u.User != nil {
		// url.Parse has already percent-decoded the user and password.
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
		if cfg.User == "" && cfg.Passwd != "" {
			// go-sql-driver's DSN has no place for a password without a
			// user: it would be dropped without a word.
			return Parsed{}, fmt.Errorf("mysql DSN %s has a password but no user name", redact(u))
		}
	}
	out := cfg.FormatDSN()
	if u.RawQuery != "" {
		// go-sql-driver reads parameters percent-encoded, as URLs carry them.
		// Only the part after the last '/' can hold FormatDSN's own
		// parameters: a password may contain '?'.
		sep := "?"
		if strings.Contains(out[strings.LastIndex(out, "/"):], "?") {
			sep = "&"
		}
		out += sep + u.RawQuery
	}
	// Check what go-sql-driver will make of it now rather than at connect
	// time. Its parse errors name parameters and values, never the password.
	back, err := gomysql.ParseDSN(out)
	if err != nil {
		return Parsed{}, fmt.Errorf("mysql DSN %s: %w", redact(u), oneLineError{err})
	}
	// Its DSN cannot carry everything a URL can (a ':' in the user name
	// ends the user name there): refuse rather than connect as someone
	// else or to another database.
	var lost []string
	for _, f := range []struct{ name, want, got string }{
		{"user name", cfg.User, back.User}, {"password", cfg.Passwd, back.Passwd},
		{"address", cfg.Addr, back.Addr}, {"database name", cfg.DBName, back.DBName},
	} {
		if f.want != f.got {
			lost = append(lost, f.name)
		}
	}
	if len(lost) > 0 {
		return Parsed{}, fmt.Errorf("mysql DSN %s: its %s cannot be passed to go-sql-driver as written (its DSN cannot carry a ':' in the user name)", redact(u), strings.Join(lost, " and "))
	}
	return Parsed{Dialect: MySQL, DSN: out, Redacted: redact(u)}, nil
}

func parsePostgres(dsn string) (Parsed, error) {
	u, err := parseURL(dsn, Postgres)
	if err != nil {
		return Parsed{}, err
	}
	return Parsed{Dialect: Postgres, DSN: dsn, Redacted: redact(u)}, nil
}

// redact returns u with the password of its user info and the values of
// query parameters that name a password (libpq's ?password=) replaced.
// The query is rewritten pair by pair, split at '&' and at ';' alike:
// url.Values drops a pair that holds a ';' (as in password=a;b), which
// would then be shown as it was.
func redact(u *url.URL) string {
	c := *u
	if c.RawQuery != "" {
		var b strings.Builder
		rest := c.RawQuery
		for rest != "" {
			i := strings.IndexAny(rest, "&;")
			pair, sep := rest, ""
			if i >= 0 {
				pair, sep, rest = rest[:i], rest[i:i+1], rest[i+1:]
			} else {
				rest = ""
			}
			key, _, hasValue := strings.Cut(pair, "=")
			name := key
			if k, err := url.QueryUnescape(key); err == nil {
				name = k
			}
			if hasValue && strings.Contains(strings.ToLower(name), "pass") {
				pair = key + "=xxxxx"
			}
			b.WriteString(escapeSpaces(pair))
			b.WriteString(sep)
		}
		c.RawQuery = b.String()
	}
	// url.URL.Redacted would show an empty password as xxxxx too: a
	// password where there is none.
	if pw, ok := c.User.Password(); ok && pw != "" {
		c.User = url.UserPassword(c.User.Username(), "xxxxx")
	}
	return c.String()
}

// escapeSpaces percent-encodes the white space net/url leaves raw in a
// query, so that the redacted form is a URL that reads back as itself (a
// trailing space would be trimmed).
func escapeSpaces(s string) string {
	if !strings.ContainsFunc(s, unicode.IsSpace) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !unicode.IsSpace(r) {
			b.WriteRune(r)
			continue
		}
		for _, c := range []byte(string(r)) {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// oneLineError shows err with its control characters escaped: go-sql-driver
// quotes parameter values as they are, and a percent-encoded newline in
// one would break the error across lines.
type oneLineError struct{ err error }

func (e oneLineError) Error() string {
	var b strings.Builder
	for _, r := range e.err.Error() {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (e oneLineError) Unwrap() error { return e.err }
