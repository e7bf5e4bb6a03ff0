// Package mysqldsn parses the MySQL/MariaDB DSN forms into go-sql-driver's
// configuration: mysql:// and mariadb:// URLs, and go-sql-driver's own DSN
// (user:pass@tcp(host:port)/db?params). driver/mysql's Open and the CLI
// (through internal/dsn) both use it, so a DSN means the same to both.
//
// A URL may name several hosts (mysql://u:p@h1:3306,h2:3306/db); they are
// parsed, in order, into DSN.Addrs, and driver/mysql's Open tries them in
// that order (the first that accepts a connection and can take writes).
//
// Errors never contain the password: they show the DSN redacted.
package mysqldsn

import (
	"errors"
	"net/url"
	"strings"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/lockstep-queue/lockstep/internal/dsnparse"
)

// Addr is one server address.
type Addr struct {
	Net  string // "tcp" or "unix" (or a network registered with go-sql-driver)
	Addr string // host:port, or the socket's path
}

// DSN is a parsed MySQL/MariaDB DSN.
type DSN struct {
	Form dsnparse.Form // MySQLURL or MySQLNative
	// Addrs are the servers, in the order a failover would try them; at
	// least one. Config and GoDSN are for the first.
	Addrs []Addr
	// Config is go-sql-driver's configuration (Addrs[0]), validated. It
	// holds the password: do not print it.
	Config *gomysql.Config
	// GoDSN is the go-sql-driver DSN for Config, for code that takes one.
	// It holds the password.
	GoDSN string
	// Redacted is the DSN as written with any password replaced, safe to
	// show.
	Redacted string
	// query is the raw parameters as written, to tell what the user set.
	query string
}

// Parse parses a MySQL/MariaDB DSN in any of its forms. Whatever
// go-sql-driver itself reads (such as /db, its shortest form) is taken
// too, since the caller has chosen MySQL already; a DSN of another dialect
// gets a *dsnparse.WrongDialectError.
func Parse(s string) (*DSN, error) {
	d, err := parse(strings.TrimSpace(s))
	if err != nil {
		// go-sql-driver's DSN may hold a newline, which its errors and the
		// redacted DSN would show as it is.
		return nil, dsnparse.OneLine{Err: err}
	}
	return d, nil
}

func parse(s string) (*DSN, error) {
	form, err := dsnparse.Detect(s)
	switch form {
	case dsnparse.MySQLURL:
		return parseURL(s)
	case dsnparse.MySQLNative:
		return parseNative(s)
	case dsnparse.PostgresURL:
		// A URL is never read as go-sql-driver's: its password could
		// end up a network name in an error.
		return nil, &dsnparse.WrongDialectError{Want: dsnparse.MySQL, Got: form, Forms: dsnparse.MySQLForms}
	}
	if strings.Contains(s, "/") {
		if d, nerr := parseNative(s); nerr == nil {
			return d, nil
		}
	}
	var de *dsnparse.Error
	if errors.As(err, &de) {
		return nil, &dsnparse.Error{What: de.What, Forms: dsnparse.MySQLForms}
	}
	if err != nil {
		return nil, err
	}
	return nil, &dsnparse.WrongDialectError{Want: dsnparse.MySQL, Got: form, Forms: dsnparse.MySQLForms}
}

// Hosts are the TCP addresses of a DSN that names several, in order; nil
// for a DSN of one server (whatever its network), which needs no failover.
func (d *DSN) Hosts() []string {
	if len(d.Addrs) < 2 {
		return nil
	}
	out := make([]string, len(d.Addrs))
	for i, a := range d.Addrs {
		out[i] = a.Addr
	}
	return out
}

// HasParam reports whether the DSN sets the parameter name itself.
func (d *DSN) HasParam(name string) bool {
	for pair := range strings.SplitSeq(d.query, "&") {
		key, _, _ := strings.Cut(pair, "=")
		if k, err := url.QueryUnescape(key); err == nil && k == name {
			return true
		}
	}
	return false
}
