package mysqldsn

import (
	"fmt"
	"strings"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/lockstep-queue/lockstep/internal/dsnparse"
)

// parseNative reads go-sql-driver's own DSN,
// [user[:password]@][net[(addr)]]/dbname[?params], with go-sql-driver.
func parseNative(s string) (*DSN, error) {
	redacted, query := redactNative(s)
	if err := checkParams(query); err != nil {
		return nil, fmt.Errorf("mysql DSN %s: %w", redacted, err)
	}
	cfg, err := gomysql.ParseDSN(s)
	if err != nil {
		// Its errors name parameters, values and the database, never the
		// password.
		return nil, fmt.Errorf("mysql DSN %s: %w", redacted, dsnparse.Plain(err))
	}
	return &DSN{
		Form:     dsnparse.MySQLNative,
		Addrs:    []Addr{{Net: cfg.Net, Addr: cfg.Addr}},
		Config:   cfg,
		GoDSN:    s,
		Redacted: redacted,
		query:    query,
	}, nil
}

// redactNative finds the password where go-sql-driver does (between the
// first ':' and the last '@' before the last '/') and replaces it, with
// any secret parameter; it also returns the parameters as written.
func redactNative(s string) (redacted, query string) {
	slash := strings.LastIndexByte(s, '/')
	if slash < 0 {
		return s, "" // go-sql-driver reads no user info without the '/'
	}
	head, tail := s[:slash], s[slash:]
	if at := strings.LastIndexByte(head, '@'); at >= 0 {
		if colon := strings.IndexByte(head[:at], ':'); colon >= 0 && colon+1 < at {
			head = head[:colon+1] + dsnparse.Mask + head[at:]
		}
	}
	if q := strings.IndexByte(tail, '?'); q >= 0 {
		query = tail[q+1:]
		tail = tail[:q+1] + dsnparse.RedactQuery(query)
	}
	return head + tail, query
}
