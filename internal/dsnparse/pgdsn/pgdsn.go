// Package pgdsn parses the PostgreSQL DSN forms, postgres:// and
// postgresql:// URLs and libpq's key=value strings, into pgx's pool
// configuration. driver/postgres's Open and the CLI (through internal/dsn)
// both use it, so a DSN means the same to both.
//
// pgx reads both forms itself, multi-host DSNs included
// (postgres://u@h1:5432,h2:5432/db, host=h1,h2), and tries the hosts in
// order; this package adds what pgx leaves to its caller: it refuses another
// dialect's DSN clearly, and it shows the DSN, in its errors and in
// DSN.Redacted, with the password replaced, found where pgx (like libpq)
// finds it.
package pgdsn

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockstep-queue/lockstep/internal/dsnparse"
)

// DSN is a parsed PostgreSQL DSN.
type DSN struct {
	Form dsnparse.Form // PostgresURL or PostgresKeywords
	// ConnString is the DSN as pgx takes it. It holds the password: do not
	// print it.
	ConnString string
	// Redacted is the DSN as written with any password replaced, safe to
	// show.
	Redacted string
	// Config is pgx's pool configuration, read from ConnString (and, as
	// pgx does, from the PG* environment variables).
	Config *pgxpool.Config
}

// Parse parses a PostgreSQL DSN in either form. An empty DSN is pgx's:
// everything from the PG* environment variables and libpq's defaults.
func Parse(s string) (*DSN, error) {
	d, err := parse(strings.TrimSpace(s))
	if err != nil {
		// A quoted key=value value may hold a newline, which the redacted
		// DSN in an error would show as it is.
		return nil, dsnparse.OneLine{Err: err}
	}
	return d, nil
}

func parse(s string) (*DSN, error) {
	d := &DSN{Form: dsnparse.PostgresKeywords}
	if s != "" {
		form, err := dsnparse.Detect(s)
		var de *dsnparse.Error
		switch {
		case errors.As(err, &de):
			return nil, &dsnparse.Error{What: de.What, Forms: dsnparse.PostgresForms}
		case err != nil:
			return nil, err
		case strings.ContainsFunc(s, isControl(form)):
			// pgx takes them (but NUL), to no good: they would break
			// the errors that show the DSN across lines.
			return nil, errors.New("postgres DSN contains a control character")
		case form == dsnparse.PostgresURL:
			// pgx knows the scheme in lower case only.
			scheme, rest, _ := strings.Cut(s, "://")
			s = strings.ToLower(scheme) + "://" + rest
			d.Redacted = redactURL(s)
		case form == dsnparse.PostgresKeywords:
			pairs, err := dsnparse.Keywords(s)
			if err != nil {
				return nil, err
			}
			d.Redacted = dsnparse.RedactKeywords(s, pairs)
		default:
			return nil, &dsnparse.WrongDialectError{Want: dsnparse.Postgres, Got: form, Forms: dsnparse.PostgresForms}
		}
		d.Form = form
	}
	d.ConnString = s
	cfg, err := pgxpool.ParseConfig(s)
	if err != nil {
		return nil, explain(d.Redacted, err)
	}
	d.Config = cfg
	return d, nil
}

// isControl tells the control characters a DSN of the form must not hold:
// all for a URL, all but white space (which separates pairs) for key=value.
func isControl(form dsnparse.Form) func(rune) bool {
	return func(r rune) bool {
		if form == dsnparse.PostgresKeywords && strings.ContainsRune(" \t\n\r\v\f", r) {
			return false
		}
		return r < 0x20 || r == 0x7f
	}
}

// explain says why pgx refused a DSN without showing its password. pgx's
// own errors only try to hide it, so they come from parsing the redacted
// DSN, which fails the same way unless the password was at fault.
func explain(redacted string, err error) error {
	if redacted == "" {
		return fmt.Errorf("postgres DSN is empty and the PG* environment variables do not make one: %w", dsnparse.Plain(err))
	}
	_, rerr := pgxpool.ParseConfig(redacted)
	if rerr == nil {
		return fmt.Errorf("postgres DSN %s: pgx cannot read its password (in a URL, write a '%%' in it as %%25; a NUL byte is refused)", redacted)
	}
	msg := dsnparse.Plain(rerr).Error()
	var pce *pgconn.ParseConfigError
	if errors.As(rerr, &pce) {
		// Its text is "cannot parse `DSN`: what (why)", with the DSN in its
		// own redaction: shown once, in ours, it reads better.
		c := *pce
		c.ConnString = ""
		msg = strings.TrimPrefix(dsnparse.Plain(&c).Error(), "cannot parse ``: ")
	}
	return fmt.Errorf("postgres DSN %s: %s", redacted, msg)
}

// redactURL replaces the password of a postgres:// URL where pgx finds it,
// following libpq rather than net/url: the user info ends at the first
// '@' before any '/', and a '?' or '#' before it belongs to the password.
// Secret query parameters (password, sslpassword) are replaced too.
func redactURL(s string) string {
	scheme, rest, _ := strings.Cut(s, "://")
	var b strings.Builder
	b.WriteString(scheme + "://")
	if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' {
		user, pw, hasPw := strings.Cut(rest[:i], ":")
		b.WriteString(user)
		if hasPw {
			b.WriteByte(':')
			if pw != "" {
				// An empty password is not shown as one.
				pw = dsnparse.Mask
			}
			b.WriteString(pw)
		}
		b.WriteByte('@')
		rest = rest[i+1:]
	}
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		// The query starts at the first '?' after the user info, or
		// later: a '?' inside an IPv6 host's brackets makes more of the
		// URL go through RedactQuery, which hides more, not less.
		rest = rest[:q+1] + dsnparse.RedactQuery(rest[q+1:])
	}
	b.WriteString(rest)
	return b.String()
}
