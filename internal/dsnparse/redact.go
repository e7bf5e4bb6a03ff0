package dsnparse

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode"
)

// RedactQuery returns a URL's raw query with the values of secret
// parameters (SecretKey) replaced. pgx and go-sql-driver split a query at
// '&' only, so a value runs to the next '&', ';' included (password=a;b is
// the password a;b); but a ';' may also be meant as a separator
// (a=1;password=b), so a secret key after a ';' hides the rest of its pair
// too. White space is percent-encoded, so that the redacted form reads
// back as itself (a trailing space would be trimmed).
func RedactQuery(raw string) string {
	pairs := strings.Split(raw, "&")
	for i, pair := range pairs {
		segs := strings.Split(pair, ";")
		for j, seg := range segs {
			key, _, hasValue := strings.Cut(seg, "=")
			name := key
			if k, err := url.QueryUnescape(key); err == nil {
				name = k
			}
			if hasValue && SecretKey(name) {
				segs = append(segs[:j], key+"="+Mask)
				break
			}
		}
		pairs[i] = escapeSpaces(strings.Join(segs, ";"))
	}
	return strings.Join(pairs, "&")
}

// escapeSpaces percent-encodes white space.
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

// OneLine shows an error with its control characters escaped: drivers
// quote parameter values as they are, and a percent-encoded newline in one
// would break the error across lines.
type OneLine struct{ Err error }

func (e OneLine) Error() string {
	var b strings.Builder
	for _, r := range e.Err.Error() {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (e OneLine) Unwrap() error { return e.Err }

// Plain returns err in the user's words, one line: what strconv and
// net/url say in Go's (strconv.ParseInt: parsing "x": invalid syntax) is
// said plainly. The result unwraps to err.
func Plain(err error) error {
	msg := err.Error()
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		msg = strings.Replace(msg, ne.Error(), fmt.Sprintf("%q is not a valid number", ne.Num), 1)
	}
	var ee url.EscapeError
	if errors.As(err, &ee) {
		msg = strings.Replace(msg, ee.Error(), "a '%' is not followed by two hex digits", 1)
	}
	return OneLine{&plainError{msg: msg, err: err}}
}

type plainError struct {
	msg string
	err error
}

func (e *plainError) Error() string { return e.msg }
func (e *plainError) Unwrap() error { return e.err }
