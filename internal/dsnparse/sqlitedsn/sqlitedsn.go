// Package sqlitedsn parses the SQLite DSN forms: sqlite:path,
// sqlite://path (the same, relative), sqlite:///abs/path, SQLite's own URI
// file:path?params, and a bare file path. A bare path is any DSN that is
// none of the other dialects' forms (see package dsnparse): lockstep.db,
// ./data/q.db, /var/lib/q.sqlite3. driver/sqlite's Open and the CLI
// (through internal/dsn) both use it.
//
// A path, however written, is taken literally up to its first '?', which
// starts SQLite URI parameters (q.db?cache=shared): a '%' or '#' in it is
// part of the file name. A file: URI follows SQLite's URI rules instead.
package sqlitedsn

import (
	"errors"
	"strings"

	"github.com/lockstep-queue/lockstep/internal/dsnparse"
)

// DSN is a parsed SQLite DSN.
type DSN struct {
	Form dsnparse.Form // SQLiteScheme, SQLiteFileURI or SQLitePath
	// Path is the database file as written, with any ?params; for a file:
	// URI, the URI.
	Path string
	// Shown is the DSN in one form for all the ways of writing it,
	// sqlite:PATH, or the file: URI as written; Parse reads it back as the
	// same database. SQLite DSNs hold no password.
	Shown string
}

// Parse parses a SQLite DSN in any of its forms; a DSN of another dialect
// gets a *dsnparse.WrongDialectError.
func Parse(s string) (*DSN, error) {
	s = strings.TrimSpace(s)
	form, err := dsnparse.Detect(s)
	var de *dsnparse.Error
	if errors.As(err, &de) {
		return nil, &dsnparse.Error{What: de.What, Forms: dsnparse.SQLiteForms}
	}
	if err != nil {
		return nil, err
	}
	d := &DSN{Form: form}
	switch form {
	case dsnparse.SQLiteScheme:
		// sqlite://rel/path and sqlite:///abs/path: the two slashes are
		// the URL's authority marker, so what follows is the path as
		// written.
		_, rest, _ := strings.Cut(s, ":")
		d.Path = strings.TrimPrefix(rest, "//")
		// Shown as written, except that a path that itself starts with
		// "//" needs the authority marker in front, or it would read back
		// as sqlite://rel/path, another file.
		d.Shown = "sqlite:" + d.Path
		if strings.HasPrefix(d.Path, "//") {
			d.Shown = "sqlite://" + d.Path
		}
	case dsnparse.SQLitePath:
		d.Path = s
		d.Shown = "sqlite:" + s
		if strings.HasPrefix(s, "//") {
			d.Shown = "sqlite://" + s
		}
	case dsnparse.SQLiteFileURI:
		_, rest, _ := strings.Cut(s, ":")
		d.Path = "file:" + rest // modernc.org/sqlite knows the scheme in lower case only
		d.Shown = d.Path
		if rest == "" || rest[0] == '?' || rest == "//" || strings.HasPrefix(rest, "//?") {
			return nil, errors.New("sqlite DSN has no file path; use file:path/to/file.db?params or file:///abs/path.db")
		}
	default:
		return nil, &dsnparse.WrongDialectError{Want: dsnparse.SQLite, Got: form, Forms: dsnparse.SQLiteForms}
	}
	if d.Path == "" || d.Path[0] == '?' {
		return nil, errors.New("sqlite DSN has no file path; use sqlite:path/to/file.db or sqlite:///abs/path.db")
	}
	if strings.ContainsRune(d.Path, 0) {
		return nil, errors.New("sqlite DSN's file path contains a NUL byte")
	}
	return d, nil
}

// URI is the SQLite URI (file:…) that opens the database, for
// modernc.org/sqlite.
func (d *DSN) URI() string {
	if d.Form == dsnparse.SQLiteFileURI {
		return d.Path
	}
	path, params, hasParams := strings.Cut(d.Path, "?")
	// In a URI, '%' starts an escape and '#' a fragment; in a path they
	// are part of the name.
	path = strings.NewReplacer("%", "%25", "#", "%23").Replace(path)
	uri := "file:" + path
	if strings.HasPrefix(path, "//") {
		// file://x names the host x; file:////x is the path //x.
		uri = "file://" + path
	}
	if hasParams {
		uri += "?" + params
	}
	return uri
}
