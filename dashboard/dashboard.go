// Package dashboard is lockstep's web dashboard: queues, runs, jobs and
// the lock monitor, as server-rendered html/template pages with htmx
// (vendored, embedded) for partial refreshes. Every page reads through the
// client's bounded read API (newest-first pages, counts that stop at a
// limit), so it stays fast on a table of millions of jobs.
//
// Mutating actions (cancel a run, cancel a job, retry a failed job; pause
// or resume a queue, set its max workers or its limits) are POST only and
// need a CSRF token; with Config.Token set, every request needs the token
// as a bearer header or a session cookie from /login.
//
// The dashboard outlives database outages: every request's database work
// ends after Config.ReadTimeout, and while the database cannot be reached
// pages answer 503 with "Database unavailable" in the normal layout (and
// reload themselves), htmx refreshes 503 with the message, and /healthz
// (open, for load balancers) 503 with a short reason; once the database is
// back the pools reconnect and pages serve data again.
package dashboard

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/lockstep-queue/lockstep"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config configures a dashboard. Zero values take the documented defaults.
type Config struct {
	// Client reads and changes the queue. Required.
	Client *lockstep.Client
	// Reader, when set, serves the pages' reads (queues, jobs, runs,
	// history, processes) instead of Client: a client on a replica, so
	// that the dashboard's reads do not load the primary. The actions
	// (cancel, retry, pause, limits, bulk actions and their previews) and
	// the reads they check go through Client. A replica's reads lag its
	// primary: set ReplicaLag to show by how much.
	Reader *lockstep.Client
	// ReplicaLag, when set, reports how far Reader's database is behind
	// the primary; the queues page shows it.
	ReplicaLag func(ctx context.Context) (time.Duration, error)
	// DB is the pool the lock monitor reads the server's lock tables and
	// SHOW ENGINE INNODB STATUS through. Default: the client's driver's.
	// A small pool of its own is better: it still gets a connection when
	// blocked sessions hold all of the queue's (which is when one looks at
	// lock waits), and on PostgreSQL it does not inherit the planner
	// settings postgres.Open gives the queue's pool (with
	// enable_seqscan=off the pg_locks queries take ~0.5 s, not ~1 ms).
	DB *sql.DB
	// Dialect is "mysql", "postgres" or "sqlite". Default: the client's
	// driver's.
	Dialect string
	// Token, when set, is required on every request: as
	// "Authorization: Bearer <token>", or through the session cookie the
	// login form sets. Without it the dashboard answers only requests
	// addressed to a loopback host name (127.0.0.1, ::1, localhost), which
	// keeps a DNS-rebinding page from driving it.
	Token string
	// Logger; default slog.Default().
	Logger *slog.Logger
	// CountLimit bounds every count a page shows (a queue's jobs in one
	// status, a run's jobs); a count that reaches it is shown as "≥N".
	// Default 10,000.
	CountLimit int
	// Metrics, when set, is served at /metrics (behind the same auth).
	Metrics http.Handler
	// PageSize is the number of rows of a runs or jobs page. Default 50.
	PageSize int
	// Window is how far back the queues page's throughput looks. Default
	// 1 minute.
	Window time.Duration
	// SampleInterval is how often Run reads the queues' stats (and, on
	// MySQL/MariaDB, polls for new deadlocks). Default 5s.
	SampleInterval time.Duration
	// Samples is no longer used: the throughput charts are drawn from the
	// history rollup in the database (Client.History), not from samples
	// this process kept. It is accepted for compatibility.
	Samples int
	// MaxDeadlocks is how many distinct deadlock reports are kept.
	// Default 20.
	MaxDeadlocks int
	// MaxQueues bounds how many queues the queues page reads. Default 200.
	MaxQueues int
	// SessionTTL is how long a login lasts. Default 12 hours.
	SessionTTL time.Duration
	// SecureCookies marks cookies Secure (set it when served over HTTPS,
	// e.g. behind a TLS-terminating proxy).
	SecureCookies bool
	// ReadTimeout bounds the database work of each request: a page, an
	// htmx refresh or an action answers within it even when the database
	// does not (503, "database unavailable"); /healthz waits at most 2 s
	// (or ReadTimeout, if shorter). Default 15 s.
	ReadTimeout time.Duration
	// PreviewBudget bounds the count a bulk action's preview makes over a
	// filter that must be counted window by window of the primary key (a
	// table of millions of finished jobs): past it the preview says "at
	// least N" and offers to count them all. Default 150 ms.
	PreviewBudget time.Duration
}

// Server is the dashboard, an http.Handler.
type Server struct {
	cfg     Config
	client  *lockstep.Client
	reader  *lockstep.Client // Config.Reader, or client
	db      *sql.DB
	logger  *slog.Logger
	handler http.Handler
	// secret signs session cookies and CSRF tokens; it is made per process,
	// so a restart logs everyone out.
	secret []byte
	pages  map[string]*template.Template

	locks *lockMonitor

	logMu   sync.Mutex
	lastErr map[string]string

	outage outage

	bulk bulkOps
}

// Dialects as lockstep.Client.Dialect reports them.
const (
	dialectMySQL    = "mysql"
	dialectPostgres = "postgres"
	dialectSQLite   = "sqlite"
)

// New builds a dashboard.
func New(cfg Config) (*Server, error) {
	if cfg.Client == nil {
		return nil, errors.New("dashboard: Config.Client is required")
	}
	if cfg.DB == nil {
		cfg.DB = cfg.Client.DB()
	}
	if cfg.Dialect == "" {
		cfg.Dialect = cfg.Client.Dialect()
	}
	switch cfg.Dialect {
	case dialectMySQL, dialectPostgres, dialectSQLite:
	default:
		return nil, fmt.Errorf("dashboard: unknown dialect %q (want mysql, postgres or sqlite)", cfg.Dialect)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"CountLimit", cfg.CountLimit}, {"PageSize", cfg.PageSize}, {"Samples", cfg.Samples}, {"MaxDeadlocks", cfg.MaxDeadlocks}, {"MaxQueues", cfg.MaxQueues}} {
		if v.n < 0 {
			return nil, fmt.Errorf("dashboard: %s must not be negative", v.name)
		}
	}
	for _, v := range []struct {
		name string
		d    time.Duration
	}{{"Window", cfg.Window}, {"SampleInterval", cfg.SampleInterval}, {"SessionTTL", cfg.SessionTTL}, {"ReadTimeout", cfg.ReadTimeout}, {"PreviewBudget", cfg.PreviewBudget}} {
		if v.d < 0 {
			return nil, fmt.Errorf("dashboard: %s must not be negative", v.name)
		}
	}
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&cfg.CountLimit, 10_000)
	def(&cfg.PageSize, 50)
	def(&cfg.Samples, 120)
	def(&cfg.MaxDeadlocks, 20)
	def(&cfg.MaxQueues, 200)
	if cfg.PageSize > 500 {
		cfg.PageSize = 500
	}
	if cfg.Window == 0 {
		cfg.Window = time.Minute
	}
	if cfg.SampleInterval == 0 {
		cfg.SampleInterval = 5 * time.Second
	}
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = defaultReadTimeout
	}
	if cfg.PreviewBudget == 0 {
		cfg.PreviewBudget = 150 * time.Millisecond
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("dashboard: make secret: %w", err)
	}
	pages, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, client: cfg.Client, reader: cmp.Or(cfg.Reader, cfg.Client), db: cfg.DB, logger: cfg.Logger,
		secret: secret, pages: pages,
		locks:   newLockMonitor(cfg.Dialect, cfg.DB, cfg.MaxDeadlocks),
		lastErr: map[string]string{},
	}
	s.handler = s.routes()
	return s, nil
}

// ServeHTTP serves the dashboard.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handler.ServeHTTP(w, r)
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err) // the embed pattern guarantees the directory
	}
	mux.Handle("GET /static/", http.StripPrefix("/static/", staticHandler(http.FileServerFS(static))))
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("GET /login", s.handleLoginForm)
	mux.HandleFunc("POST /login", s.handleLogin)
	mux.HandleFunc("POST /logout", s.handleLogout)
	mux.HandleFunc("GET /healthz", s.handleHealthz)

	mux.HandleFunc("GET /{$}", s.handleQueues)
	mux.HandleFunc("GET /queues/table", s.handleQueuesTable)
	mux.HandleFunc("POST /queues/pause", s.handlePauseQueue)
	mux.HandleFunc("POST /queues/resume", s.handleResumeQueue)
	mux.HandleFunc("POST /queues/max-workers", s.handleQueueMaxWorkers)
	mux.HandleFunc("POST /queues/limits", s.handleQueueLimits)
	mux.HandleFunc("GET /queue/{name}", s.handleQueue)
	mux.HandleFunc("GET /runs", s.handleRuns)
	mux.HandleFunc("GET /runs/{id}", s.handleRun)
	mux.HandleFunc("POST /runs/{id}/cancel", s.handleCancelRun)
	mux.HandleFunc("GET /jobs", s.handleJobs)
	mux.HandleFunc("GET /jobs/bulk", s.handleBulkPreview)
	mux.HandleFunc("POST /jobs/bulk", s.handleBulkStart)
	mux.HandleFunc("GET /jobs/bulk/{id}", s.handleBulkStatus)
	mux.HandleFunc("GET /jobs/{id}", s.handleJob)
	mux.HandleFunc("POST /jobs/{id}/cancel", s.handleCancelJob)
	mux.HandleFunc("POST /jobs/{id}/retry", s.handleRetryJob)
	mux.HandleFunc("GET /processes", s.handleProcesses)
	mux.HandleFunc("GET /history", s.handleHistory)
	mux.HandleFunc("GET /kinds", s.handleKinds)
	mux.HandleFunc("GET /locks", s.handleLocks)
	mux.HandleFunc("GET /locks/waits", s.handleLockWaits)
	if s.cfg.Metrics != nil {
		mux.Handle("GET /metrics", s.cfg.Metrics)
	}
	return s.secure(mux)
}

// staticHandler lets browsers cache the embedded assets for a while.
func staticHandler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

// Run reads the queues' stats every SampleInterval (noticing an outage
// and its end) and, on MySQL/MariaDB, polls SHOW ENGINE INNODB STATUS for
// new deadlocks, until ctx ends. Pages work without it (the history charts
// read the rollup in the database), but the deadlocks seen between page
// loads come from here.
func (s *Server) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.SampleInterval)
	defer t.Stop()
	for {
		s.background(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// background is one round of Run.
func (s *Server) background(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, max(s.cfg.SampleInterval, 5*time.Second))
	defer cancel()
	_, err := s.sample(ctx)
	switch {
	case err == nil:
		s.logOnce("throughput", "", nil)
	case ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
		// Run is stopping.
	case s.unavailable(err):
		s.dbDown(err) // logged once per outage
	default:
		s.logOnce("throughput", "dashboard: sample throughput", err)
	}
	if err := s.locks.pollDeadlocks(ctx); err != nil && ctx.Err() == nil && !s.unavailable(err) {
		s.logOnce("deadlocks", "dashboard: poll deadlocks", err)
	} else if err == nil {
		s.logOnce("deadlocks", "", nil)
	}
}

// logOnce logs a background error once until it changes or clears, so a
// poll that fails every few seconds does not flood the log.
func (s *Server) logOnce(key, msg string, err error) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if err == nil {
		delete(s.lastErr, key)
		return
	}
	if s.lastErr[key] == err.Error() {
		return
	}
	s.lastErr[key] = err.Error()
	s.logger.Warn(msg, "err", redact(err.Error()))
}
