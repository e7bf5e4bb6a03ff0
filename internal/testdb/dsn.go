package testdb

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// DSNAddr returns the host:port a DSN connects to: a go-sql-driver/mysql
// DSN (user@tcp(host:port)/db) or a postgres:// URL, as this package gives
// them out.
func DSNAddr(dsn string) (string, error) {
	if isURL(dsn) {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("testdb: parsing a postgres URL: %w", err)
		}
		if u.Port() == "" {
			return "", fmt.Errorf("testdb: the postgres URL names no port")
		}
		return u.Host, nil
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", fmt.Errorf("testdb: parsing a MySQL DSN: %w", err)
	}
	if cfg.Net != "tcp" {
		return "", fmt.Errorf("testdb: the MySQL DSN connects over %q, not tcp", cfg.Net)
	}
	return cfg.Addr, nil
}

// DSNWithAddr returns dsn with its host:port replaced by addr, e.g. to
// connect through a fault proxy (internal/faultproxy) listening on addr.
func DSNWithAddr(dsn, addr string) (string, error) {
	if isURL(dsn) {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("testdb: parsing a postgres URL: %w", err)
		}
		u.Host = addr
		return u.String(), nil
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", fmt.Errorf("testdb: parsing a MySQL DSN: %w", err)
	}
	cfg.Net, cfg.Addr = "tcp", addr
	return cfg.FormatDSN(), nil
}

func isURL(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// ClosedAddr returns a loopback host:port that nothing listens on (it was
// free a moment ago): a server that is down, for tests of refused
// connections.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testdb: find a free port: %v", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatalf("testdb: find a free port: %v", err)
	}
	return addr
}

// MultiHostURL joins go-sql-driver DSNs for the same database on several
// servers (a Galera cluster's nodes) into one mysql:// URL naming every
// host in order, as a user configures failover.
func MultiHostURL(dsns []string) (string, error) {
	var hosts []string
	var first *mysql.Config
	for _, dsn := range dsns {
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return "", fmt.Errorf("testdb: parsing a MySQL DSN: %w", err)
		}
		if cfg.Net != "tcp" {
			return "", fmt.Errorf("testdb: the MySQL DSN connects over %q, not tcp", cfg.Net)
		}
		if first == nil {
			first = cfg
		}
		hosts = append(hosts, cfg.Addr)
	}
	if first == nil {
		return "", fmt.Errorf("testdb: no DSN to join")
	}
	u := url.URL{Scheme: "mysql", User: url.User(first.User), Host: strings.Join(hosts, ","), Path: "/" + first.DBName,
		RawQuery: "parseTime=true&loc=UTC"}
	if first.Passwd != "" {
		u.User = url.UserPassword(first.User, first.Passwd)
	}
	return u.String(), nil
}

// WithSessionVar sets a session variable in each go-sql-driver DSN (the
// driver sets a parameter it does not know as a session variable on
// connect): wsrep_sync_wait on a Galera node's DSN, say.
func WithSessionVar(dsns []string, name, value string) ([]string, error) {
	out := make([]string, 0, len(dsns))
	for _, dsn := range dsns {
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return nil, fmt.Errorf("testdb: parsing a MySQL DSN: %w", err)
		}
		if cfg.Params == nil {
			cfg.Params = map[string]string{}
		}
		cfg.Params[name] = value
		out = append(out, cfg.FormatDSN())
	}
	return out, nil
}
