package dashboard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
)

// While the database is down (stopped, restarting, unreachable) every page
// still answers, within Config.ReadTimeout: with 503 and a "database
// unavailable" message in the normal layout (to htmx, the message alone),
// and /healthz with 503 and a short reason. Nothing is cached or reset:
// the pools reconnect by themselves once the server is back, and the next
// request succeeds.

const (
	// defaultReadTimeout bounds the database work of one request.
	defaultReadTimeout = 15 * time.Second
	// healthTimeout bounds /healthz's ping (or ReadTimeout, if shorter):
	// a load balancer's probe must get its answer before its own timeout.
	healthTimeout = 2 * time.Second
	// outageRefresh is how often, in seconds, a 503 page reloads itself.
	outageRefresh = 5
)

// outage tracks whether the database is known to be down, so that the
// outage is logged when it begins and when it ends rather than on every
// request that fails.
type outage struct {
	mu    sync.Mutex
	down  bool
	since time.Time
}

// unavailable reports whether err says the database could not be reached
// or did not answer in time, as opposed to refusing one statement: a
// connection refused, reset or lost, a server shutting down or starting,
// or the request's deadline passing.
func (s *Server) unavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || lockstep.ErrorKindOf(err) == lockstep.ErrorConnection ||
		driver.BrokenConnection(err) || errors.Is(err, gomysql.ErrInvalidConn) {
		return true
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	// The lock monitor's queries are not classified by the client.
	return s.client.ClassifyError(err) == lockstep.ErrorConnection
}

// dbDown records that a request or the sampler found the database
// unavailable; the first failure of an outage is logged.
func (s *Server) dbDown(err error) {
	s.outage.mu.Lock()
	defer s.outage.mu.Unlock()
	if s.outage.down {
		return
	}
	s.outage.down, s.outage.since = true, time.Now()
	s.logger.Warn("dashboard: the database is unavailable; pages answer 503 until it is back", "err", redact(err.Error()))
}

// dbUp records that the database answered, and logs the end of an outage.
func (s *Server) dbUp() {
	s.outage.mu.Lock()
	defer s.outage.mu.Unlock()
	if !s.outage.down {
		return
	}
	s.outage.down = false
	s.logger.Info("dashboard: the database is reachable again", "down_for", time.Since(s.outage.since).Round(time.Second).String())
}

// unavailableMessage says what failed, without any password. A write that
// failed this way may have been applied: its commit could have happened
// before the connection was lost.
func (s *Server) unavailableMessage(r *http.Request, what string, err error) string {
	detail := redact(err.Error())
	if errors.Is(err, context.DeadlineExceeded) {
		// The error may also carry the last failure of a retried write
		// (the client rides out lost connections until the deadline).
		first, _, _ := strings.Cut(detail, "\n")
		if strings.HasSuffix(first, context.DeadlineExceeded.Error()) {
			detail = fmt.Sprintf("no answer within %v", s.cfg.ReadTimeout)
		} else {
			detail = fmt.Sprintf("no answer within %v (last error: %s)", s.cfg.ReadTimeout, first)
		}
	}
	msg := fmt.Sprintf("Database unavailable: %s: %s.", what, detail)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		msg += " The change may or may not have been made: reload the page to check once the database is back."
	}
	return msg
}

// renderUnavailable answers 503 with msg: the error page in the normal
// layout, reloading itself every few seconds (a GET), or to htmx the
// message alone, which the page shows in its flash box.
func (s *Server) renderUnavailable(w http.ResponseWriter, r *http.Request, msg string) {
	w.Header().Set("Retry-After", fmt.Sprint(outageRefresh))
	if isHTMX(r) {
		s.renderError(w, r, http.StatusServiceUnavailable, msg)
		return
	}
	b := s.base(r, "Database unavailable", "")
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		b.Refresh = outageRefresh
	}
	s.render(w, r, http.StatusServiceUnavailable, "error.html", "layout",
		errorData{base: b, Status: http.StatusServiceUnavailable, Message: msg, Unavailable: true})
}

// handleHealthz answers 200 "ok" when the queue's pool reaches the
// database, else 503 with a short reason. It needs no token (load
// balancers call it), so the reason never carries the error's text.
func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), min(healthTimeout, s.cfg.ReadTimeout))
	defer cancel()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := s.client.DB().PingContext(ctx); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// Drivers do not always say so (pgx reports a failed ping as
			// driver.ErrBadConn, whatever the cause).
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
		if s.unavailable(err) {
			s.dbDown(err)
		} else {
			s.logOnce("healthz", "dashboard: healthz", err)
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "database unavailable: "+healthReason(err, min(healthTimeout, s.cfg.ReadTimeout))+"\n")
		return
	}
	s.logOnce("healthz", "", nil)
	s.dbUp()
	_, _ = io.WriteString(w, "ok\n")
}

// healthReason is a few words about why the ping failed: a class of
// network failure or the server's error code, never the error's text
// (which names hosts, users and databases).
func healthReason(err error, timeout time.Duration) string {
	var ne net.Error
	var me *gomysql.MySQLError
	var pe *pgconn.PgError
	var ce *pgconn.ConnectError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("no answer within %v", timeout)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &me):
		return fmt.Sprintf("server error %d", me.Number)
	case errors.As(err, &pe):
		return "server error " + pe.Code
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, gomysql.ErrInvalidConn), driver.BrokenConnection(err):
		return "connection lost"
	case errors.As(err, &ce):
		return "cannot connect"
	}
	return "error (see the dashboard's log)"
}
