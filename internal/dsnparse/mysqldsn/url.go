package mysqldsn

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/lockstep-queue/lockstep/internal/dsnparse"
)

const example = "mysql://user:pass@host:3306/db"

// urlParts is a mysql:// URL cut where net/url cuts one: the authority
// ends at the first '/', '?' or '#', and the user info at the authority's
// last '@'. The host list is cut by hand because net/url cannot read
// h1:3306,[::1]:3306. Parts are as written, not yet decoded.
type urlParts struct {
	scheme, userinfo, hosts, path, query, fragment string
	hasUserinfo, hasQuery, hasFragment             bool
}

func splitURL(s string) (urlParts, error) {
	var p urlParts
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return p, errors.New("it contains a control character")
	}
	p.scheme, s, _ = strings.Cut(s, "://")
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s, p.fragment, p.hasFragment = s[:i], s[i+1:], true
	}
	if i := strings.IndexByte(s, '?'); i >= 0 {
		s, p.query, p.hasQuery = s[:i], s[i+1:], true
	}
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s, p.path = s[:i], s[i:]
	}
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		p.userinfo, s, p.hasUserinfo = s[:i], s[i+1:], true
	}
	p.hosts = s
	return p, nil
}

// redacted is the URL as written, with its password and secret
// parameters replaced.
func (p urlParts) redacted() string {
	var b strings.Builder
	b.WriteString(p.scheme + "://")
	if p.hasUserinfo {
		user, pw, hasPw := strings.Cut(p.userinfo, ":")
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
	}
	b.WriteString(p.hosts + p.path)
	if p.hasQuery {
		b.WriteString("?" + dsnparse.RedactQuery(p.query))
	}
	if p.hasFragment {
		b.WriteString("#" + p.fragment)
	}
	return b.String()
}

func notURL(reason string) error {
	return fmt.Errorf("mysql DSN is not a valid URL (%s); expected %s", reason, example)
}

// unescape percent-decodes a part of the URL; its error does not quote the
// part, which may be the password.
func unescape(s string) (string, error) {
	out, err := url.PathUnescape(s)
	if err != nil {
		return "", notURL("a '%' is not followed by two hex digits")
	}
	return out, nil
}

func parseURL(s string) (*DSN, error) {
	p, err := splitURL(s)
	if err != nil {
		return nil, notURL(err.Error())
	}
	_, hostErr := parseHosts(p.hosts, "")
	if !p.hasUserinfo && strings.Contains(s, "@") && (hostErr != nil || strings.Contains(p.path, "@") || strings.Contains(p.fragment, "@")) {
		// net/url ends the authority at the first '/', '?' or '#', so
		// mysql://u:a/b@h/db has the host u and the port a: most likely a
		// password written without percent-encoding, to be neither read
		// as a host nor shown in an error. (An '@' in the query, as in
		// ?init=a@b, is no sign of one.)
		return nil, notURL("its user info ends at an unencoded '/', '?' or '#' before the '@': write them %2F, %3F and %23 in a user name or password")
	}
	if p.hasFragment {
		return nil, errors.New("mysql DSN must not have a #fragment")
	}
	var user, pass string
	if p.hasUserinfo {
		u, pw, _ := strings.Cut(p.userinfo, ":")
		if user, err = unescape(u); err != nil {
			return nil, err
		}
		if pass, err = unescape(pw); err != nil {
			return nil, err
		}
	}
	db, err := unescape(strings.TrimPrefix(p.path, "/"))
	if err != nil {
		return nil, err
	}
	redacted := p.redacted()
	if db == "" || strings.Contains(db, "/") {
		return nil, fmt.Errorf("mysql DSN needs exactly one database name after the host, as in %s", example)
	}
	query, socket, err := takeSocket(p.query)
	if err != nil {
		return nil, fmt.Errorf("mysql DSN %s: %w", redacted, err)
	}
	addrs, err := parseHosts(p.hosts, socket)
	if err != nil {
		return nil, notURL(err.Error())
	}
	if user == "" && pass != "" {
		// go-sql-driver's DSN has no place for a password without a user:
		// it would be dropped without a word.
		return nil, fmt.Errorf("mysql DSN %s has a password but no user name", redacted)
	}

	cfg := gomysql.NewConfig()
	cfg.Net, cfg.Addr = addrs[0].Net, addrs[0].Addr
	cfg.DBName, cfg.User, cfg.Passwd = db, user, pass
	out := cfg.FormatDSN()
	if query != "" {
		// go-sql-driver reads parameters percent-encoded, as URLs carry
		// them. Only the part after the last '/' can hold FormatDSN's own
		// parameters: a password may contain '?'.
		sep := "?"
		if strings.Contains(out[strings.LastIndex(out, "/"):], "?") {
			sep = "&"
		}
		out += sep + query
	}
	if err := checkParams(query); err != nil {
		return nil, fmt.Errorf("mysql DSN %s: %w", redacted, err)
	}
	// Check what go-sql-driver will make of it now rather than at connect
	// time. Its parse errors name parameters and values, never the password.
	back, err := gomysql.ParseDSN(out)
	if err != nil {
		return nil, fmt.Errorf("mysql DSN %s: %w", redacted, dsnparse.Plain(err))
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
		return nil, fmt.Errorf("mysql DSN %s: its %s cannot be passed to go-sql-driver as written (its DSN cannot carry a ':' in the user name)", redacted, strings.Join(lost, " and "))
	}
	return &DSN{Form: dsnparse.MySQLURL, Addrs: addrs, Config: back, GoDSN: out, Redacted: redacted, query: query}, nil
}

// takeSocket removes the socket parameter (or unix_socket, as PHP names
// it) from a URL's query and returns its path: go-sql-driver would send it
// to the server as a session variable.
func takeSocket(query string) (rest, socket string, err error) {
	var kept []string
	found := false
	for _, pair := range strings.Split(query, "&") {
		key, value, _ := strings.Cut(pair, "=")
		if key != "socket" && key != "unix_socket" {
			if pair != "" {
				kept = append(kept, pair)
			}
			continue
		}
		if found {
			return "", "", errors.New("the socket parameter is given twice")
		}
		found = true
		if socket, err = url.QueryUnescape(value); err != nil {
			return "", "", errors.New("the socket parameter has a '%' not followed by two hex digits")
		}
		if socket == "" {
			return "", "", errors.New("the socket parameter is empty; give the socket's path, as in socket=/run/mysqld/mysqld.sock")
		}
	}
	return strings.Join(kept, "&"), socket, nil
}

// parseHosts reads the URL's host list into addresses, in order; a host
// without a port gets 3306, and no host at all is 127.0.0.1:3306 (or the
// socket, which excludes any host but localhost).
func parseHosts(list, socket string) ([]Addr, error) {
	if socket != "" {
		if list != "" && !strings.EqualFold(list, "localhost") {
			return nil, errors.New("it names both a host and a socket")
		}
		return []Addr{{Net: "unix", Addr: socket}}, nil
	}
	if list == "" {
		return []Addr{{Net: "tcp", Addr: "127.0.0.1:3306"}}, nil
	}
	var addrs []Addr
	for h := range strings.SplitSeq(list, ",") {
		if h == "" {
			return nil, errors.New("its host list has an empty entry")
		}
		host, port, err := splitHostPort(h)
		if err != nil {
			return nil, err
		}
		if host == "" {
			host = "127.0.0.1"
		}
		addrs = append(addrs, Addr{Net: "tcp", Addr: net.JoinHostPort(host, port)})
	}
	return addrs, nil
}

// splitHostPort reads host, host:port, [ipv6] or [ipv6]:port. Its errors
// do not quote the host or port: they come after the user info's last '@',
// but a mistyped URL could still have a piece of a password there.
func splitHostPort(h string) (host, port string, err error) {
	switch {
	case strings.HasPrefix(h, "["):
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return "", "", errors.New("an IPv6 address has no closing ']'")
		}
		host, port = h[1:end], h[end+1:]
		if port != "" && port[0] != ':' {
			return "", "", errors.New("an IPv6 address in brackets can only be followed by :port")
		}
		port = strings.TrimPrefix(port, ":")
		if host == "" {
			return "", "", errors.New("an IPv6 address in brackets is empty")
		}
	case strings.Count(h, ":") > 1:
		return "", "", errors.New("an IPv6 address must be in brackets, as in [::1]:3306")
	default:
		host, port, _ = strings.Cut(h, ":")
	}
	if host, err = url.PathUnescape(host); err != nil {
		return "", "", errors.New("a host name has a '%' not followed by two hex digits")
	}
	if strings.ContainsFunc(host, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune(`"<>\^{|}[]/?#@`+"`", r)
	}) {
		return "", "", errors.New("a host name holds white space, a control character or one of \"<>\\^`{|}[]/?#@")
	}
	if port == "" {
		return host, "3306", nil
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || strings.TrimLeft(port, "0123456789") != "" {
		return "", "", errors.New("a port is not a number from 1 to 65535")
	}
	return host, port, nil
}
