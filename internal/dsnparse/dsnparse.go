// Package dsnparse tells which of the DSN forms lockstep accepts a string is
// written in. The forms, by dialect:
//
//	MySQL/MariaDB  mysql://user:pass@host:3306/db?param=value   (also mariadb://)
//	               user:pass@tcp(host:3306)/db?param=value      (go-sql-driver's own)
//	PostgreSQL     postgres://user:pass@host:5432/db?sslmode=disable   (also postgresql://)
//	               host=localhost port=5432 user=app dbname=app   (libpq key=value)
//	SQLite         sqlite:path/to/q.db, sqlite://rel/q.db, sqlite:///abs/q.db
//	               file:path/to/q.db?params   (SQLite's URI)
//	               a bare file path: lockstep.db, ./data/q.db, /var/lib/q.sqlite3
//
// A bare path is whatever is none of the other forms. To keep a typo from
// silently becoming a new SQLite file, a string that starts with a scheme
// this package does not know (redis:, oracle://) or with a key=value pair
// none of whose keys is a libpq keyword is refused rather than taken as a
// path; so is a bare dialect name (mysql). A string that starts with '/' or
// '.' is always a path; write sqlite:NAME for any other file name.
//
// The dialects' own parsing lives in the subpackages mysqldsn, pgdsn and
// sqlitedsn, which the drivers import (this package imports no driver), and
// internal/dsn picks among them for the CLI.
package dsnparse

import (
	"fmt"
	"regexp"
	"strings"
)

// Dialects, as driver.Driver.Dialect reports them.
const (
	MySQL    = "mysql"
	Postgres = "postgres"
	SQLite   = "sqlite"
)

// The accepted forms, for help texts and errors.
const (
	MySQLForms    = "mysql://user:pass@host:3306/db (or mariadb://), user:pass@tcp(host:3306)/db (go-sql-driver)"
	PostgresForms = "postgres://user:pass@host:5432/db (or postgresql://), host=HOST port=5432 user=USER dbname=DB (libpq key=value)"
	SQLiteForms   = "sqlite:path/to/file.db, sqlite:///abs/path.db, file:path.db?params, or a file path such as ./lockstep.db"
	Forms         = MySQLForms + ", " + PostgresForms + ", " + SQLiteForms
)

// Form is the way a DSN is written.
type Form int

const (
	Unknown Form = iota
	MySQLURL
	MySQLNative // go-sql-driver's user:pass@tcp(host)/db
	PostgresURL
	PostgresKeywords // libpq's key=value
	SQLiteScheme     // sqlite:path, sqlite://path
	SQLiteFileURI    // file:path?params
	SQLitePath       // a bare path
)

// Dialect is the dialect of the form: MySQL, Postgres, SQLite or "".
func (f Form) Dialect() string {
	switch f {
	case MySQLURL, MySQLNative:
		return MySQL
	case PostgresURL, PostgresKeywords:
		return Postgres
	case SQLiteScheme, SQLiteFileURI, SQLitePath:
		return SQLite
	}
	return ""
}

// String names the form as errors say it.
func (f Form) String() string {
	switch f {
	case MySQLURL:
		return "a MySQL URL"
	case MySQLNative:
		return "a go-sql-driver (MySQL) DSN"
	case PostgresURL:
		return "a PostgreSQL URL"
	case PostgresKeywords:
		return "a PostgreSQL key=value DSN"
	case SQLiteScheme, SQLiteFileURI:
		return "a SQLite DSN"
	case SQLitePath:
		return "a SQLite file path"
	}
	return "an unknown form"
}

// Error is a DSN that is none of the accepted forms. Forms lists the forms
// the caller accepts; the drivers narrow it to their own dialect's.
type Error struct {
	// What went wrong, without the DSN (which may hold a password).
	What  string
	Forms string
}

func (e *Error) Error() string { return e.What + "; accepted forms: " + e.Forms }

// WrongDialectError is a DSN of another dialect than the one asked for, as
// when mysql.Open is given a postgres:// URL.
type WrongDialectError struct {
	Want  string // the dialect asked for
	Got   Form
	Forms string // the forms of Want
}

func (e *WrongDialectError) Error() string {
	return fmt.Sprintf("%s DSN expected, got %s; accepted forms: %s", e.Want, e.Got, e.Forms)
}

// schemeRE is a URI scheme (RFC 3986) and its colon. Detect takes one
// letter alone for no scheme: C:\data\q.db is a Windows path.
var schemeRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*):`)

// nativeRE finds go-sql-driver's [user[:password]]@[net[(addr)]]/db: an '@'
// followed by nothing, a known network, or any network with an address in
// parentheses (a network registered with RegisterDialContext, such as Cloud
// SQL's), then the '/' before the database name. A known network and '('
// say enough even without the rest (go-sql-driver then says what is
// missing); they may also start the DSN, without a user.
var nativeRE = regexp.MustCompile(`@(?:tcp[46]?|unix|[A-Za-z][A-Za-z0-9_.-]*\([^()]*\))?/|(?:^|@)(?:tcp[46]?|unix)\(`)

// keyStartRE is a DSN that starts with key=, as libpq's key=value form does.
var keyStartRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*[ \t\n\r\v\f]*=`)

// Detect tells which form s, a DSN with no surrounding white space, is
// written in. Its errors show no more of s than a scheme or a bare
// dialect name, neither of which can hold a password.
func Detect(s string) (Form, error) {
	if s == "" {
		return Unknown, &Error{What: "database DSN is empty", Forms: Forms}
	}
	if s[0] == '/' || s[0] == '.' {
		return SQLitePath, nil
	}
	scheme := ""
	rest := s
	if m := schemeRE.FindStringSubmatch(s); m != nil {
		scheme = strings.ToLower(m[1])
		rest = s[len(m[0]):]
		url := strings.HasPrefix(rest, "//")
		switch {
		case scheme == "sqlite" || scheme == "sqlite3":
			return SQLiteScheme, nil
		case scheme == "file":
			return SQLiteFileURI, nil
		case (scheme == "mysql" || scheme == "mariadb") && url:
			return MySQLURL, nil
		case (scheme == "postgres" || scheme == "postgresql") && url:
			return PostgresURL, nil
		case url && !knownScheme(scheme):
			return Unknown, unknownScheme(m[1])
		}
	}
	if keyStartRE.MatchString(s) {
		return detectKeywords(s)
	}
	if nativeRE.MatchString(s) {
		return MySQLNative, nil
	}
	switch {
	case scheme == "mysql" || scheme == "mariadb":
		return Unknown, &Error{What: "mysql DSN must be a URL (mysql://…) or go-sql-driver's user:pass@tcp(host:port)/db", Forms: MySQLForms}
	case scheme == "postgres" || scheme == "postgresql":
		return Unknown, &Error{What: "postgres DSN must be a URL (postgres://…) or libpq's key=value form", Forms: PostgresForms}
	case len(scheme) > 1:
		return Unknown, unknownScheme(s[:len(scheme)])
	case dialectWord(strings.ToLower(s)):
		return Unknown, &Error{What: fmt.Sprintf("database DSN %q names a database type but not the database (for a SQLite file of that name, write sqlite:%s)", s, s), Forms: Forms}
	}
	return SQLitePath, nil
}

func knownScheme(s string) bool {
	switch s {
	case "mysql", "mariadb", "postgres", "postgresql", "sqlite", "sqlite3", "file":
		return true
	}
	return false
}

// dialectWord: a bare "mysql" is a DSN cut short more likely than a file.
func dialectWord(s string) bool { return s != "file" && knownScheme(s) }

// unknownScheme: the scheme is safe to show, as schemeRE allows no '@' or
// ':' in it, so it cannot hold a password.
func unknownScheme(scheme string) error {
	return &Error{What: fmt.Sprintf("unknown database scheme %q", scheme), Forms: Forms}
}

// detectKeywords takes s, which starts with key=, for libpq's key=value form
// if one of its keys is a libpq keyword.
func detectKeywords(s string) (Form, error) {
	pairs, err := Keywords(s)
	if err != nil {
		// Broken, but meant as key=value if its first key is libpq's: the
		// PostgreSQL parser says what is wrong with it.
		if first, _, _ := strings.Cut(s, "="); IsLibpqKeyword(strings.TrimSpace(first)) {
			return PostgresKeywords, nil
		}
	}
	for _, p := range pairs {
		if IsLibpqKeyword(p.Key) {
			return PostgresKeywords, nil
		}
	}
	return Unknown, &Error{
		What:  "database DSN starts with key=value, but none of its keys is a PostgreSQL connection keyword (host, port, user, dbname, password, sslmode, …); for a SQLite file whose name has '=', write sqlite:NAME",
		Forms: Forms,
	}
}
