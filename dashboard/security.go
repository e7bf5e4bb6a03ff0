package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// MaxBodyBytes bounds every request body: the dashboard's forms are a few
// short fields.
const MaxBodyBytes = 64 << 10

const (
	csrfCookie    = "lockstep_csrf"
	sessionCookie = "lockstep_session"
	csrfField     = "csrf"
)

// contentSecurityPolicy allows only the dashboard's own scripts, styles
// and images: no inline script or style (htmx is told not to inject its
// indicator style), no framing, forms post only to this origin.
const contentSecurityPolicy = "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"

var crossOrigin = http.NewCrossOriginProtection()

// reqInfo is what the security layer learned about a request.
type reqInfo struct {
	csrfToken string // the token forms must carry
	// bearer: authenticated by the Authorization header, which a browser
	// never sends on its own, so no CSRF token is needed.
	bearer bool
	// session: authenticated by the login cookie.
	session bool
}

type ctxKey struct{}

func info(r *http.Request) *reqInfo {
	if ri, ok := r.Context().Value(ctxKey{}).(*reqInfo); ok {
		return ri
	}
	return &reqInfo{}
}

// secure wraps the routes with the security headers, the body limit, the
// host check, authentication and CSRF protection.
func (s *Server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)

		// /healthz is for load balancers and probes, which may address
		// the server by any name and have no token; it shows nothing but
		// "ok" or a few words of reason, and changes nothing.
		if r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			next.ServeHTTP(w, r)
			return
		}

		if s.cfg.Token == "" && !loopbackHost(r.Host) {
			// Without a token the dashboard trusts whoever can reach it,
			// which serve allows only on a loopback address; a page of
			// another site that rebinds its name to 127.0.0.1 still sends
			// its own name as Host.
			s.renderError(w, r, http.StatusMisdirectedRequest, "this dashboard has no token and answers only requests to localhost, 127.0.0.1 or [::1]")
			return
		}

		ri := &reqInfo{}
		csrfValue := ""
		if c, err := r.Cookie(csrfCookie); err == nil && validRandom(c.Value) {
			csrfValue = c.Value
		} else {
			csrfValue = randomString()
			http.SetCookie(w, &http.Cookie{
				Name: csrfCookie, Value: csrfValue, Path: "/",
				HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.cfg.SecureCookies,
			})
		}
		ri.csrfToken = s.sign("csrf", csrfValue)
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, ri))

		public := strings.HasPrefix(r.URL.Path, "/static/") || r.URL.Path == "/login" || r.URL.Path == "/favicon.ico"
		if s.cfg.Token != "" {
			// Only a Bearer header is ours: another scheme (Basic from a
			// proxy that authenticates in front of the dashboard) is left
			// alone, and the cookie and public paths decide.
			if tok, ok := bearerToken(r); ok {
				if !s.tokenOK(tok) {
					s.unauthorized(w, r)
					return
				}
				ri.bearer = true
			} else if c, err := r.Cookie(sessionCookie); err == nil && s.sessionOK(c.Value) {
				ri.session = true
			}
			if !ri.bearer && !ri.session && !public {
				s.unauthorized(w, r)
				return
			}
		}

		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if status, msg := s.checkCSRF(r, ri); msg != "" {
				s.logger.Warn("dashboard: refused a request", "method", r.Method, "path", r.URL.Path, "reason", msg)
				s.renderError(w, r, status, msg)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// checkCSRF returns why a mutating request is refused (and the status to
// answer with), or "". It also parses the form, within MaxBodyBytes.
func (s *Server) checkCSRF(r *http.Request, ri *reqInfo) (int, string) {
	// Sec-Fetch-Site must be same-origin (or none: typed by the user);
	// without it, Origin's host must be the Host. A request with neither
	// comes from no browser and is left to the CSRF token.
	if err := crossOrigin.Check(r); err != nil {
		return http.StatusForbidden, "cross-origin request refused"
	}
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return http.StatusRequestEntityTooLarge, "request body too large"
		}
		return http.StatusBadRequest, "bad form"
	}
	if ri.bearer {
		// A browser never adds an Authorization header by itself, so a
		// request that carries the token was not forged by another site.
		return 0, ""
	}
	got := r.PostForm.Get(csrfField)
	if got == "" {
		got = r.Header.Get("X-CSRF-Token")
	}
	if got == "" || !hmac.Equal([]byte(got), []byte(ri.csrfToken)) {
		return http.StatusForbidden, "missing or wrong CSRF token: reload the page and try again"
	}
	return 0, ""
}

// unauthorized refuses a request without valid credentials: a browser
// asking for a page gets the login form, htmx is sent to it, anything
// else gets a plain 401.
func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="lockstep"`)
	if r.Header.Get("HX-Request") != "" {
		w.Header().Set("HX-Redirect", "/login")
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if _, bearer := bearerToken(r); r.Method == http.MethodGet && !bearer && strings.Contains(r.Header.Get("Accept"), "text/html") {
		s.renderLogin(w, r, http.StatusUnauthorized, r.URL.RequestURI(), "")
		return
	}
	http.Error(w, "unauthorized: send Authorization: Bearer <token> or log in at /login", http.StatusUnauthorized)
}

// bearerToken returns the credentials of an Authorization header of the
// Bearer scheme, whose name is case-insensitive (RFC 9110 §11.1); ok is
// false without the header or with another scheme.
func bearerToken(r *http.Request) (token string, ok bool) {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// tokenOK compares in constant time; hashing first makes the comparison
// independent of the lengths too.
func (s *Server) tokenOK(given string) bool {
	a := sha256.Sum256([]byte(given))
	b := sha256.Sum256([]byte(s.cfg.Token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// sign is a MAC of value under the process secret, for one purpose.
func (s *Server) sign(purpose, value string) string {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write([]byte(value))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// newSession returns a session cookie value: expiry, nonce and their MAC.
func (s *Server) newSession(now time.Time) string {
	payload := strconv.FormatInt(now.Add(s.cfg.SessionTTL).Unix(), 10) + "." + randomString()
	return payload + "." + s.sign("session", payload)
}

func (s *Server) sessionOK(v string) bool {
	i := strings.LastIndexByte(v, '.')
	if i < 0 {
		return false
	}
	payload, mac := v[:i], v[i+1:]
	if !hmac.Equal([]byte(mac), []byte(s.sign("session", payload))) {
		return false
	}
	exp, _, _ := strings.Cut(payload, ".")
	n, err := strconv.ParseInt(exp, 10, 64)
	return err == nil && time.Now().Unix() < n
}

func randomString() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand panics rather than return an error)
	return base64.RawURLEncoding.EncodeToString(b)
}

// validRandom accepts what randomString makes.
func validRandom(v string) bool {
	if len(v) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(v)
	return err == nil
}

// loopbackHost reports a Host header naming this machine's loopback.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// safeNext keeps a redirect target on this site: a path, not a URL.
func safeNext(next, fallback string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return fallback
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" {
		return fallback
	}
	return next
}

func (s *Server) handleLoginForm(w http.ResponseWriter, r *http.Request) {
	s.renderLogin(w, r, http.StatusOK, r.URL.Query().Get("next"), "")
}

func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.PostForm.Get("next"), "/")
	if s.cfg.Token == "" {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	if !s.tokenOK(r.PostForm.Get("token")) {
		s.logger.Warn("dashboard: failed login", "remote", r.RemoteAddr)
		s.renderLogin(w, r, http.StatusUnauthorized, next, "wrong token")
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: s.newSession(time.Now()), Path: "/",
		MaxAge: int(s.cfg.SessionTTL / time.Second), HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.cfg.SecureCookies,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.cfg.SecureCookies,
	})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

type loginData struct {
	base
	Next  string
	Error string
}

func (s *Server) renderLogin(w http.ResponseWriter, r *http.Request, status int, next, msg string) {
	s.render(w, r, status, "login.html", "layout", loginData{base: s.base(r, "Log in", ""), Next: safeNext(next, "/"), Error: msg})
}
